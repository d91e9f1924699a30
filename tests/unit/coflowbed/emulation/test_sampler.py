"""The sampler: parsing of /proc/net/dev and tc's qdisc JSON, its deadline schedule, its
files, and the scenario key / flag that set its period."""

from __future__ import annotations

import json
import threading

import pytest

from coflowbed.cli.options import overrides_of
from coflowbed.core.errors import UserError
from coflowbed.emulation.sampler import Sampler, parse_net_dev, parse_qdiscs
from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.files import read_csv_rows
from topo.qos import bucket_classid, bucket_level

NET_DEV = """Inter-|   Receive |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets
    lo: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0
l1-eth3: 1000 10 0 0 0 0 0 0 5000 50 0 0 0 0 0 0
"""


def qdisc(dev, level, bucket, backlog, qlen, drops=0):
    """One bfifo entry of ``tc -s -j qdisc show``."""
    parent = bucket_classid(level, bucket)
    return {
        "kind": "bfifo",
        "dev": dev,
        "parent": parent,
        "backlog": backlog,
        "qlen": qlen,
        "drops": drops,
    }


def test_net_dev_gives_rx_and_tx_bytes_of_the_wanted_ports_only():
    assert parse_net_dev(NET_DEV, {"l1-eth3"}) == {"l1-eth3": (1000, 5000)}


def test_bucket_level_inverts_the_bucket_classids():
    assert [bucket_level(bucket_classid(lv, 15)) for lv in range(8)] == list(range(8))
    assert bucket_level("1:a") is None and bucket_level("1:") is None


def test_qdiscs_sum_each_levels_buckets_and_skip_other_ports():
    text = json.dumps(
        [
            qdisc("l1-eth3", 2, 0, 3000, 2, 1),
            qdisc("l1-eth3", 2, 5, 1000, 1),
            qdisc("l1-eth3", 0, 1, 0, 0),
            qdisc("h11-eth0", 2, 0, 9, 9),
            {"kind": "htb", "dev": "l1-eth3", "handle": "1:", "backlog": 7, "qlen": 7, "drops": 0},
        ]
    )
    assert parse_qdiscs(text, {"l1-eth3"}) == {
        ("l1-eth3", 2): (4000, 3, 1),
        ("l1-eth3", 0): (0, 0, 0),
    }


def test_ticks_follow_the_deadline_schedule_and_late_ones_are_skipped():
    now = [100.2]
    s = Sampler({"l1-eth3": 100.0}, 1.0, clock=lambda: now[0])
    s.t0 = 100.0
    assert s._next_tick(0) == 1  # on time: the next deadline, t0 + 1
    now[0] = 103.5
    assert s._next_tick(1) == 4  # late: deadlines 2 and 3 are past, skipped
    now[0] = 103.9
    assert s._next_tick(4) == 5  # after tick 4, tick 5
    assert s._missed == 2


def test_a_run_of_the_thread_writes_samples_shifted_to_time_zero(tmp_path):
    done = threading.Event()
    calls = []

    def net_dev():
        calls.append(1)
        if len(calls) >= 3:
            done.set()
        return NET_DEV

    s = Sampler(
        {"l1-eth3": 100.0},
        0.01,
        net_dev=net_dev,
        qdiscs=lambda: json.dumps([qdisc("l1-eth3", 1, 0, 500, 1)]),
    )
    s.start()
    assert done.wait(5)
    s.stop()
    info = s.write(tmp_path, s.t0 + 1.0)
    ports = read_csv_rows(tmp_path / "samples" / "ports.csv")
    queues = read_csv_rows(tmp_path / "samples" / "queues.csv")
    assert info.ticks == len(ports) == len(queues) >= 3
    assert ports[0]["t_s"] == pytest.approx(-1.0, abs=0.01) and ports[0]["tx_bytes"] == 5000
    assert queues[0]["level"] == 1 and queues[0]["backlog_bytes"] == 500
    meta = json.loads((tmp_path / "samples" / "meta.json").read_text())
    assert meta["period_s"] == 0.01 and meta["link_mbps"] == {"l1-eth3": 100.0}


def test_a_failing_tc_ends_sampling_with_its_error_recorded():
    def broken():
        raise RuntimeError("tc -s -j qdisc show failed: no tc")

    s = Sampler({"l1-eth3": 100.0}, 0.01, net_dev=lambda: NET_DEV, qdiscs=broken)
    s.start()
    s._thread.join(5)
    assert not s._thread.is_alive() and "no tc" in (s.error or "")


def _scenario(tmp_path, extra):
    path = tmp_path / "s.yaml"
    path.write_text(
        "fabric: {spines: 1, leaves: 2, hosts_per_leaf: 1, host_bw_mbps: 10, fabric_bw_mbps: 10}\n"
        "policy: fair\n"
        "workload: {coflows: [{id: a, flows: [{src: h11, dst: h21, bytes: 1000}]}]}\n" + extra
    )
    return path


def test_the_period_comes_from_the_scenario_or_the_flag(tmp_path):
    assert load_scenario(_scenario(tmp_path, "sample_period_s: 0.25\n")).sample_period_s == 0.25
    flags = type("A", (), {"policy": None, "sample_period": 0.0})()
    scen = load_scenario(_scenario(tmp_path, "sample_period_s: 0.25\n"), overrides_of(flags))
    assert scen.sample_period_s == 0.0


@pytest.mark.parametrize("value", ["0.01", "-1", "fast"])
def test_a_bad_period_is_refused_naming_the_key(tmp_path, value):
    with pytest.raises(UserError, match="sample_period_s"):
        load_scenario(_scenario(tmp_path, f"sample_period_s: {value}\n"))
