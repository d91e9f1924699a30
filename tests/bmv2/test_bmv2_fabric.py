"""A leaf-spine fabric of BMv2 switches driven by the P4Runtime controller (root; run
under ``flock /tmp/coflowbed-fabric.lock``; skipped where simple_switch_grpc is absent).

Thresholds are the OVS fabric test's (docs/fabric.md, "Platform facts"): on a shared
bottleneck the high-priority coflow gets >= 85 % of the link and the low one < 10 %; a
meter holds a sender within +-15 % of its rate.  Links run at 10 Mbit/s so that unoptimised
BMv2 builds (10-30 Mbit/s) keep up too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.client import ControllerClient
from controller.coflow_table import TagEntry
from controller.p4runtime.launcher import launcher_argv
from tests.procs import first_line
from topo.plan import FabricPlan
from workload.marking import tos_byte

pytestmark = [pytest.mark.bmv2, pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
TOOL = str(Path(__file__).with_name("udp_tool.py"))
LINK_MBPS = 10.0
MEASURE_S = 6.0


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    from topo.bmv2 import grpc_addresses, start_bmv2_fabric

    run = tmp_path_factory.mktemp("bmv2run")
    plan = FabricPlan(
        spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=LINK_MBPS, fabric_bw_mbps=LINK_MBPS
    )
    ports = grpc_addresses(plan, run)
    (run / "plan.json").write_text(plan.to_json())
    api = run / "controller.sock"
    proc = subprocess.Popen(
        launcher_argv(run / "plan.json", api, run / "controller.log", ports, levels=4),
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
    )
    fab = None
    try:
        assert first_line(proc, 60) == "READY"
        fab = start_bmv2_fabric(plan, run, ports, levels=4, ready_timeout=90)
        with ControllerClient(api, timeout=30) as client:
            client.wait_ready(90)
            yield fab, client
    finally:
        if fab is not None:
            fab.stop()
        proc.terminate()
        proc.wait(15)
        proc.stdout.close()


def _run(host, *args: str, timeout: float = 60) -> subprocess.Popen:
    return host.popen(
        [sys.executable, TOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _recv(host, port: int, seconds: float) -> subprocess.Popen:
    """A receiver that is bound (has printed its ready line) when this returns."""
    proc = _run(host, "recv", str(port), str(seconds))
    line = first_line(proc, 30)
    assert json.loads(line) == {"ready": port}, line
    return proc


def _result(proc: subprocess.Popen, timeout: float = 60) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _mbps(nbytes: int) -> float:
    return nbytes * 8 / MEASURE_S / 1e6


def test_pingall(fabric):
    fab, _ = fabric
    assert fab.net.pingAll(timeout="2") == 0.0


def test_ecmp_uses_every_spine(fabric):
    fab, client = fabric
    before = client.port_stats()["l1"]
    recv = _recv(fab.host("h21"), 9, 3)
    _result(_run(fab.host("h11"), "sweep", "10.0.2.1", "9", "0", "20000", "64"))
    assert _result(recv)["packets"] == 64  # all delivered before counters are read
    after = client.port_stats()["l1"]
    plan = fab.plan
    sent = {
        s: after[plan.uplink_port(s)].tx_packets - before[plan.uplink_port(s)].tx_packets
        for s in (1, 2)
    }
    total = sum(sent.values())
    assert total >= 64
    for s, n in sent.items():
        assert n >= 0.15 * total, f"spine {s} carried {n} of {total} packets"


def test_two_coflows_high_priority_wins_the_bottleneck(fabric):
    fab, client = fabric
    client.set([TagEntry(1, 0), TagEntry(2, 3)])
    try:
        h21 = fab.host("h21")
        recv_hi, recv_lo = _recv(h21, 5001, MEASURE_S), _recv(h21, 5002, MEASURE_S)
        send_hi = _run(
            fab.host("h11"), "send", "10.0.2.1", "5001", str(MEASURE_S + 1), str(tos_byte(1))
        )
        send_lo = _run(
            fab.host("h12"), "send", "10.0.2.1", "5002", str(MEASURE_S + 1), str(tos_byte(2))
        )
        hi, lo = _mbps(_result(recv_hi)["bytes"]), _mbps(_result(recv_lo)["bytes"])
        _result(send_hi), _result(send_lo)
    finally:
        client.clear([1, 2])
    assert hi >= 0.85 * LINK_MBPS, (hi, lo)  # the OVS fabric test's thresholds
    assert lo < 0.1 * LINK_MBPS, (hi, lo)


def test_meter_limits_a_sender_and_counts_drops(fabric):
    fab, client = fabric
    rate = 2.0
    client.set([TagEntry(3, 1, rate)])
    try:
        recv = _recv(fab.host("h22"), 5003, MEASURE_S)
        send = _run(
            fab.host("h11"), "send", "10.0.2.2", "5003", str(MEASURE_S + 1), str(tos_byte(3))
        )
        got = _mbps(_result(recv)["bytes"])
        _result(send)
        meters = [m for m in client.meter_stats() if m.tag == 3 and m.src == "h11"]
        tags = client.tag_stats()
    finally:
        client.clear([3])
    assert abs(got - rate) <= 0.15 * rate, got  # as on the OVS fabric
    assert len(meters) == 1 and meters[0].drop_packets > 0
    assert tags[3].bytes > got * 1e6 / 8  # counted before policing, at the leaf
