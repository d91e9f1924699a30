"""The real fabric (root, Mininet, OVS userspace, os-ken): reachability, jumbo frames,
ECMP, strict priority at a bottleneck, meters, level changes.  Run under the fabric lock:

    flock /tmp/coflowbed-fabric.lock .venv/bin/python -m pytest tests/integration/test_fabric.py
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from controller.client import ControllerClient
from controller.coflow_table import TagEntry
from controller.launcher import start_controller
from topo import probe, qos
from topo.net import host_interfaces, start_fabric, switch_interfaces
from topo.plan import FabricPlan
from workload import ecmp

pytestmark = [pytest.mark.root, pytest.mark.slow]

HOST_MBPS, FABRIC_MBPS, LEVELS = 50, 100, 8
PLAN = FabricPlan(
    spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=HOST_MBPS, fabric_bw_mbps=FABRIC_MBPS
)


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    """Controller + fabric for the whole module; both stopped even when tests fail."""
    run_dir = tmp_path_factory.mktemp("fabric")
    plan_json = run_dir / "plan.json"
    plan_json.write_text(PLAN.to_json())
    ctl = start_controller(plan_json, run_dir, levels=LEVELS)
    try:
        fab = start_fabric(PLAN, run_dir, ctl.of_port, levels=LEVELS)
        try:
            with ControllerClient(ctl.api_socket, timeout=20) as client:
                client.wait_ready(60)
                yield fab, client
        finally:
            fab.stop()
    finally:
        ctl.stop()


def _ping(host, ip: str) -> bool:
    """One ping, 2 s deadline."""
    p = host.popen(
        ["ping", "-c", "1", "-W", "2", ip], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return p.wait(10) == 0


def test_all_hosts_ping_all_hosts(fabric):
    fab, _ = fabric
    failed = [
        (a.name, b.name)
        for a in PLAN.hosts
        for b in PLAN.hosts
        if a is not b and not _ping(fab.host(a.name), b.ip)
    ]
    assert failed == []


def _ping_df(host, ip: str, payload: int) -> tuple[int, str]:
    """One ping with ``payload`` bytes and Don't Fragment set: (exit code, its output)."""
    p = host.popen(
        ["ping", "-c", "1", "-W", "2", "-M", "do", "-s", str(payload), ip],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out, _ = p.communicate(timeout=10)
    return p.returncode, out


def test_every_interface_has_the_plan_mtu(fabric):
    fab, _ = fabric
    assert PLAN.mtu == 9000
    wrong = {
        dev: mtu
        for dev in switch_interfaces(PLAN)
        if (mtu := int(Path("/sys/class/net", dev, "mtu").read_text())) != PLAN.mtu
    }
    for dev in host_interfaces(PLAN):  # in the host's namespace
        p = fab.host(dev.split("-")[0]).popen(
            ["ip", "-o", "link", "show", "dev", dev], stdout=subprocess.PIPE, text=True
        )
        link, _ = p.communicate(timeout=10)
        if f" mtu {PLAN.mtu} " not in link:
            wrong[dev] = link.strip()
    assert len(switch_interfaces(PLAN)) + len(host_interfaces(PLAN)) == 2 * len(PLAN.links)
    assert wrong == {}


def test_switch_ports_send_no_traffic_of_their_own(fabric):
    """IPv6 is off on the root-namespace switch ports, so the kernel sends no neighbour
    discovery or MLD through the level classes; over a quiet second no switch port
    transmits a frame the pipeline did not forward."""
    fab, client = fabric
    on = [
        d
        for d in switch_interfaces(PLAN)
        if Path("/proc/sys/net/ipv6/conf", d, "disable_ipv6").read_text().strip() != "1"
    ]
    assert on == []
    before = {
        d: int(Path("/sys/class/net", d, "statistics/tx_packets").read_text())
        for d in switch_interfaces(PLAN)
    }
    time.sleep(1.0)  # the observation window (no traffic is started meanwhile)
    sent = {
        d: int(Path("/sys/class/net", d, "statistics/tx_packets").read_text()) - n
        for d, n in before.items()
    }
    assert {d: n for d, n in sent.items() if n} == {}


@pytest.mark.parametrize("payload", [8000, 8972])  # 8972 + 28 B of headers = 9000
def test_jumbo_frames_cross_leaf_spine_leaf(fabric, payload):
    fab, _ = fabric
    rc, out = _ping_df(fab.host("h11"), "10.0.2.1", payload)  # h11 on l1, h21 on l2
    assert rc == 0, out


@pytest.mark.parametrize("payload", [8973, 9000])
def test_frames_above_the_mtu_are_refused(fabric, payload):
    fab, _ = fabric
    rc, out = _ping_df(fab.host("h11"), "10.0.2.1", payload)
    assert rc != 0 and "message too long, mtu=9000" in out, out


def test_port_schedulers_are_installed_on_both_ends_and_kept_by_ovs(fabric):
    fab, _ = fabric
    for dev in ("l1-eth1", "l1-eth3", "s2-eth2"):
        assert sorted(qos.class_stats(dev)) == list(range(LEVELS)), dev
    assert sorted(qos.class_stats("h21-eth0", fab.host("h21").pid)) == list(range(LEVELS))


def test_inter_leaf_traffic_uses_every_spine(fabric):
    fab, client = fabric
    before = client.port_stats()
    sink = probe.start_sink(fab.host("h21"), 5001, conns=16, warmup=0.5, window=1.5)
    src = probe.start_source(fab.host("h11"), "10.0.2.1", 5001, 0, seconds=2.5, conns=16)
    probe.finish(src, 20)
    probe.sink_window(sink, 20)
    after = client.port_stats()
    for spine in (1, 2):
        port = PLAN.uplink_port(spine)
        sent = after["l1"][port].tx_bytes - before["l1"][port].tx_bytes
        assert sent > 1_000_000, f"uplink to s{spine} carried only {sent} bytes"
        through = after[f"s{spine}"][2].tx_bytes - before[f"s{spine}"][2].tx_bytes
        assert through > 1_000_000, f"s{spine} forwarded only {through} bytes to l2"


@pytest.mark.parametrize("slot", [0, 3])
def test_tcp_crosses_the_spine_of_its_source_ports_ecmp_slot(fabric, slot):
    """``workload.ecmp``: a connection from a port of slot k goes up to spine k % 2 + 1
    of the two, whatever OVS's hash would pick: that uplink carries every byte the sink
    got, the other next to nothing (the ACKs go up at l2)."""
    fab, client = fabric
    spine = ecmp.slot_spine((1, 2), slot)
    src_port = ecmp.slot_ports(slot, ecmp.slot_count(2), 20000, 30000)[0]
    before = client.port_stats()
    sink = probe.start_sink(fab.host("h21"), 5003, conns=1, warmup=0.2, window=0.5)
    src = probe.start_source(
        fab.host("h11"), "10.0.2.1", 5003, 0, seconds=1.0, src_ports=(src_port,)
    )
    probe.finish(src, 20)
    got = sum(probe.sink_window(sink, 20).total.values())
    after = client.port_stats()
    up = {
        s: after["l1"][PLAN.uplink_port(s)].tx_bytes - before["l1"][PLAN.uplink_port(s)].tx_bytes
        for s in (1, 2)
    }
    assert up[spine] >= got > 1_000_000, (up, got)
    assert up[3 - spine] < 100_000, (up, got)


def test_high_level_takes_the_bottleneck_from_low_level(fabric):
    fab, client = fabric
    client.set([TagEntry(10, 0), TagEntry(20, LEVELS - 1)])
    tc_before = qos.class_stats("l2-eth1")
    sink = probe.start_sink(fab.host("h21"), 5002, conns=2, warmup=1.5, window=4.0)
    lo = probe.start_source(fab.host("h12"), "10.0.2.1", 5002, 20, seconds=6.5)
    hi = probe.start_source(fab.host("h11"), "10.0.2.1", 5002, 10, seconds=6.5)
    probe.finish(hi, 30), probe.finish(lo, 30)
    win = probe.sink_window(sink, 30)
    high, low = win.mbps("10.0.1.1"), win.mbps("10.0.1.2")
    assert high >= 0.85 * HOST_MBPS, f"high {high:.1f} Mbit/s, low {low:.1f} Mbit/s"
    assert low < 0.1 * HOST_MBPS
    tc_after = qos.class_stats("l2-eth1")  # the bottleneck saw both level classes
    served = {lv: tc_after[lv].bytes - tc_before[lv].bytes for lv in (0, LEVELS - 1)}
    assert served[0] > 10_000_000, served  # the high coflow went through level 0's class
    assert 0 < served[LEVELS - 1] < served[0], served  # the low one through level 7's, less
    client.clear([10, 20])


def test_meter_limits_a_tcp_transfer_and_counts_drops(fabric):
    fab, client = fabric
    rate = 10.0
    client.set([TagEntry(30, 1, rate)])
    sink = probe.start_sink(fab.host("h22"), 5003, conns=1, warmup=2.0, window=5.0)
    src = probe.start_source(fab.host("h12"), "10.0.2.2", 5003, 30, seconds=7.5)
    probe.finish(src, 30)
    got = probe.sink_window(sink, 30).mbps()
    meters = [m for m in client.meter_stats() if m.tag == 30 and m.src == "h12"]
    tags = client.tag_stats()
    client.clear([30])
    assert abs(got - rate) <= 0.15 * rate, f"metered transfer ran at {got:.2f} Mbit/s"
    assert len(meters) == 1 and meters[0].drop_packets > 0
    assert tags[30].bytes > rate * 1e6 / 8 * 5  # the tag's counters saw the transfer


def test_level_change_reports_applied_time_and_reaches_the_wire(fabric):
    fab, client = fabric
    first = client.set([TagEntry(40, 0)])
    change = client.set([TagEntry(40, 5)])
    assert first["written"] == len(PLAN.hosts)  # one rule per sender host port
    assert change["written"] == len(PLAN.hosts) and 0 < change["applied_s"] < 1.0
    before = qos.class_stats("l2-eth2")
    p = fab.host("h11").popen(
        ["ping", "-c", "5", "-i", "0.05", "-Q", str(40 << 2), "10.0.2.2"], stdout=subprocess.DEVNULL
    )
    assert p.wait(10) == 0
    after = qos.class_stats("l2-eth2")
    assert after[5].packets - before[5].packets >= 5  # echo requests at level 5
    client.clear([40])


def test_unmapped_tag_is_served_at_the_lowest_level(fabric):
    fab, _ = fabric
    before = qos.class_stats("l2-eth2")
    p = fab.host("h11").popen(
        ["ping", "-c", "5", "-i", "0.05", "-Q", str(50 << 2), "10.0.2.2"], stdout=subprocess.DEVNULL
    )
    assert p.wait(10) == 0
    after = qos.class_stats("l2-eth2")
    assert after[LEVELS - 1].packets - before[LEVELS - 1].packets >= 5
