"""End-to-end emulated runs through the CLI (root, real Mininet/OVS/os-ken/tc):
priority, equal sharing, meters, host bytes against switch counters, results files,
and clean-up after SIGKILL.

Fabric for all: 2 spines, 2 leaves, 2 hosts per leaf, 100 Mbit/s links; contention is
on a receiver's downlink (h21), the one place every flow to h21 must cross.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from coflowbed.emulation import runstate
from coflowbed.results.files import read_coflows_csv
from tests.cli import coflowbed
from topo.net import interface_names
from topo.plan import FabricPlan

pytestmark = [pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_bw_mbps": 100, "fabric_bw_mbps": 100}
MB = 1_000_000
ETH_IP_TCP_HEADER = 14 + 20 + 32  # Ethernet + IPv4 + TCP with timestamps


def scenario(tmp: Path, coflows: list[dict], name: str, **extra) -> Path:
    """Write a scenario file with the test fabric and ``coflows``."""
    data = {
        "name": name,
        "fabric": FABRIC,
        "policy": "static",
        "timeout_s": 90,
        "workload": {"coflows": coflows},
        **extra,
    }
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def coflow(cid: str, arrival: float, level: int, flows: list[tuple[str, str, int]], **kw) -> dict:
    return {
        "id": cid,
        "arrival_s": arrival,
        "level": level,
        "flows": [{"src": s, "dst": d, "bytes": b} for s, d, b in flows],
        **kw,
    }


def run_scenario(path: Path, out: Path) -> dict:
    """Run and return {summary, coflows (by id), flows, counters}; asserts a complete run."""
    res = coflowbed("run", str(path), "--out", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is False
    rows = {r["coflow_id"]: r for r in read_coflows_csv(out / "coflows.csv")}
    counters = json.loads((out / "counters.json").read_text())
    return {"summary": summary, "coflows": rows, "counters": counters, "out": out}


@pytest.fixture(scope="module")
def priority_run(tmp_path_factory) -> dict:
    """'alone' (high) runs by itself; later 'low' starts and 'high' joins 0.5 s after."""
    tmp = tmp_path_factory.mktemp("prio")
    cfs = [
        coflow("alone", 0, 0, [("h11", "h21", 20 * MB)]),
        coflow("low", 4, 7, [("h12", "h21", 40 * MB)]),
        coflow("high", 4.5, 0, [("h11", "h21", 20 * MB)]),
    ]
    return run_scenario(scenario(tmp, cfs, "prio"), tmp / "run")


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory) -> dict:
    """Two coflows at one level into h21, and a metered coflow on the reverse path."""
    tmp = tmp_path_factory.mktemp("shared")
    cfs = [
        coflow("a", 0, 3, [("h11", "h21", 20 * MB)]),
        coflow("b", 0, 3, [("h12", "h21", 20 * MB)]),
        coflow("metered", 0, 1, [("h22", "h12", 10 * MB)], rate_mbps=20),
    ]
    return run_scenario(scenario(tmp, cfs, "shared"), tmp / "run")


def test_high_priority_coflow_is_not_slowed_by_low(priority_run):
    cf = priority_run["coflows"]
    alone, high, low = cf["alone"]["cct_s"], cf["high"]["cct_s"], cf["low"]
    # 15 %: the bound; strict priority leaves 'high' only HTB's tiny low-class share
    assert high == pytest.approx(alone, rel=0.15), (alone, high)
    assert low["finish_s"] > cf["high"]["finish_s"]
    assert cf["high"]["level"] == 0 and low["level"] == 7


def test_same_level_coflows_share_equally(shared_run):
    a, b = shared_run["coflows"]["a"]["cct_s"], shared_run["coflows"]["b"]["cct_s"]
    assert a == pytest.approx(b, rel=0.25), (a, b)
    # two 20 MB flows through one 100 Mbit/s downlink take at least 3.2 s together
    assert max(a, b) >= 2 * 20 * MB * 8 / 100e6


def test_meter_limits_coflow_to_its_rate(shared_run):
    cct = shared_run["coflows"]["metered"]["cct_s"]
    assert cct == pytest.approx(10 * MB * 8 / 20e6, rel=0.15), cct
    meters = shared_run["counters"]["meters"]
    assert sum(m["drop_packets"] for m in meters) > 0, meters


def test_host_bytes_agree_with_switch_port_counters(shared_run):
    # leaf l2 port 1 faces h21: everything it transmits is data to h21 (+ headers)
    port = shared_run["counters"]["ports"]["l2"]["1"]
    payload = port["tx_bytes"] - port["tx_packets"] * ETH_IP_TCP_HEADER
    host_bytes = sum(
        r["bytes_received"]
        for r in read_coflows_csv(shared_run["out"] / "flows.csv")
        if r["dst"] == "h21"
    )
    assert host_bytes == 40 * MB
    assert payload == pytest.approx(host_bytes, rel=0.02), (payload, host_bytes)


def test_results_folder_is_complete(priority_run):
    out = priority_run["out"]
    for name in (
        "scenario.yaml",
        "dag.json",
        "flows.csv",
        "coflows.csv",
        "iterations.csv",
        "summary.json",
        "counters.json",
        "controller.log",
        "versions.json",
    ):
        assert (out / name).is_file(), name
    s = priority_run["summary"]
    assert s["coflows"] == 3 and s["avg_cct_s"] > 0 and s["p95_cct_s"] >= s["avg_cct_s"]
    assert s["level_change_s"]["count"] >= 3


def _wait_for_line(proc: subprocess.Popen, needle: str, timeout: float) -> None:
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and sel.select(left):
        line = proc.stderr.readline()
        if not line:
            break
        if needle in line:
            return
    raise AssertionError(f"{needle!r} not seen within {timeout} s")


def test_clean_after_sigkill_leaves_nothing(tmp_path):
    plan = FabricPlan(**FABRIC)
    wmem_before = Path("/proc/sys/net/core/wmem_default").read_text()
    path = scenario(tmp_path, [coflow("long", 0, 0, [("h11", "h21", 200 * MB)])], "killed")
    proc = subprocess.Popen(
        [sys.executable, "-m", "coflowbed", "run", str(path), "--out", str(tmp_path / "run")],
        cwd=REPO,
        text=True,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for_line(proc, "fabric up", 120)
        marked = runstate.marked_pids()
        assert marked, "a running run must have marked processes"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    res = coflowbed("clean", timeout=120)
    assert res.returncode == 0, res.stderr
    assert runstate.marked_pids() == []
    present = set(os.listdir("/sys/class/net"))
    assert not present & set(interface_names(plan))
    assert list(runstate.STATE_DIR.glob("*.json")) == []
    assert [p for p in runstate.STATE_DIR.iterdir() if p.is_dir()] == []  # runtime folders
    assert Path("/proc/sys/net/core/wmem_default").read_text() == wmem_before


EXPLODING = '''
from controller.policies import register
from controller.policies.base import Decision, Policy


@register
class Exploding(Policy):
    """Fine with one coflow, raises as soon as two are active."""
    name = "test-exploding"

    def decide(self, states, fabric, now):
        if len(states) > 1:
            raise ArithmeticError("exploded on purpose")
        return {s.coflow_id: Decision((0,)) for s in states}
'''


def test_failing_policy_fails_the_run_cleanly(tmp_path):
    (tmp_path / "exploding.py").write_text(EXPLODING)
    cfs = [
        {"id": "first", "arrival_s": 0, "flows": [{"src": "h11", "dst": "h21", "bytes": 20 * MB}]},
        {"id": "second", "arrival_s": 0.5, "flows": [{"src": "h12", "dst": "h22", "bytes": MB}]},
    ]
    path = scenario(tmp_path, cfs, "exploding", policy="test-exploding", plugins=["exploding.py"])
    res = coflowbed("run", str(path), "--out", str(tmp_path / "run"))
    assert res.returncode == 1, res.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["partial"] is True and "exploded on purpose" in summary["error"]
    assert "PolicyError" in summary["error"]
    assert runstate.marked_pids() == []
    assert not set(os.listdir("/sys/class/net")) & set(interface_names(FabricPlan(**FABRIC)))
