"""Scenario faults on the real fabric (root: Mininet, OVS userspace, os-ken, tc).

The default fabric (2 spines, 4 leaves, 2 hosts per leaf) runs the default scenario's
coflows plus ``cross``: flows from every other leaf to l1's hosts and from l1 out, each on
its own connection, so some of them hash onto s1 on every leaf.  Then l1's uplink to s1
goes down mid-run: l1 must stop hashing onto it, and every other leaf must stop sending
l1's traffic through s1 (which can no longer reach l1).  A flow left on a dead path never
finishes, and the run's short timeout would then mark it partial.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coflowbed.emulation import runstate
from tests import faultrun
from tests.cli import coflowbed
from tests.data import MECHANISM_SCENARIO
from tests.faultrun import LEAVES, check_leaf_restart, run

pytestmark = [pytest.mark.root, pytest.mark.slow]

MB = 1_000_000


def scenario(tmp: Path, name: str, faults: list[dict], policy: str | None = None) -> Path:
    """The mechanism scenario plus ``cross`` (6 MB per flow) and ``faults``; a flow
    black-holed by a stale group would need much longer than the 40 s timeout."""
    return faultrun.scenario(
        MECHANISM_SCENARIO, tmp, name, faults, policy, flow_bytes=6 * MB, timeout_s=40
    )


def check_reroute(f: dict, log: str) -> None:
    """The shared reroute checks; on OVS the record has no detail besides."""
    faultrun.check_reroute(f, log)
    assert not f["detail"]


def test_spine_uplink_down_for_good(tmp_path):
    p = scenario(tmp_path, "link-down", [{"at_s": 1.0, "link": ["l1", "s1"]}])
    got = run(p, tmp_path / "down")
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    (f,) = s["faults"]
    check_reroute(f, got["log"])
    assert f["up_s"] is None and f["restored_s"] is None
    assert got["rows"][0]["target"] == "l1-s1" and float(got["rows"][0]["reroute_ms"]) >= 0


def test_spine_uplink_down_and_back(tmp_path):
    p = scenario(tmp_path, "link-flap", [{"at_s": 1.0, "link": ["s1", "l1"], "down_s": 1.0}])
    got = run(p, tmp_path / "flap", check=True)
    s = got["summary"]
    fid = s["fidelity"]  # simulated with the link down as faults.csv recorded it
    assert "error" not in fid and "skipped" not in fid and fid["iteration_ratio"] > 0, fid
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    (f,) = s["faults"]
    check_reroute(f, got["log"])
    assert f["up_s"] == pytest.approx(f["injected_s"] + 1.0, abs=0.1)
    assert f["restored_s"] >= f["up_s"] and 0 <= f["restore_ms"] < 500
    for d in (2, 3, 4):  # back over both spines
        assert f"l1: group {d} (to l{d}) over spines [1, 2]" in got["log"]
    assert "l3: group 1 (to l1) over spines [1, 2]" in got["log"]


def test_bad_fault_entry_is_one_line_and_starts_nothing(tmp_path):
    p = scenario(tmp_path, "bad", [{"at_s": 1.0, "link": ["l1", "s3"]}])
    before = set(runstate.STATE_DIR.glob("*")) if runstate.STATE_DIR.exists() else set()
    res = coflowbed("run", str(p), "--results", str(tmp_path / "res"))
    assert res.returncode == 2
    err = res.stderr.strip()
    assert err.count("\n") == 0
    assert err.startswith(f"coflowbed: error: {p}: faults[0].link: unknown switch 's3'"), err
    assert not (tmp_path / "res").exists()
    after = set(runstate.STATE_DIR.glob("*")) if runstate.STATE_DIR.exists() else set()
    assert after == before  # no run registered, so nothing was started


def test_spine_restart_gets_its_whole_state_back(tmp_path):
    p = scenario(tmp_path, "spine-restart", [{"at_s": 1.0, "switch": "s2", "down_s": 1.0}])
    got = run(p, tmp_path / "restart")
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    (f,) = s["faults"]
    assert f["kind"] == "switch" and f["target"] == "s2"
    assert 0 <= f["detect_ms"] < 500  # its OpenFlow session ended
    assert f["leaves_rerouted"] == " ".join(LEAVES) and 0 <= f["reroute_ms"] < 500
    assert f["up_s"] == pytest.approx(f["injected_s"] + 1.0, abs=0.1)
    assert f["resync_ms"] is not None and 0 < f["resync_ms"] < 5000
    assert f["restored_s"] >= f["up_s"]
    assert "s2 tables equal to before the restart" in f["detail"], f["detail"]
    assert f["tables_equal"] is True
    for leaf in ("l1", "l2", "l3", "l4"):  # around s2 meanwhile
        others = [d for d in (1, 2, 3, 4) if f"l{d}" != leaf]
        assert f"{leaf}: group {others[0]} (to l{others[0]}) over spines [1]" in got["log"]


def test_leaf_restart_gets_its_pipeline_and_the_current_coflow_table_back(tmp_path):
    """l1 away for 1 s under SEBF: the scheduler's writes meanwhile go to the other
    leaves; l1 comes back with its static pipeline as before and whatever the policy
    wants by then, and its hosts' flows (cut off meanwhile) finish."""
    p = scenario(tmp_path, "leaf", [{"at_s": 1.0, "switch": "l1", "down_s": 1.0}], "sebf")
    check_leaf_restart(run(p, tmp_path / "leaf"), "l1", resync_max_ms=5000)


def test_controller_restart_mid_run_takes_the_switches_over_unchanged(tmp_path):
    """A link flap, then the controller SIGKILLed and started again under SEBF: the new
    one rebuilds the job from its event log, reads the switches back and writes nothing
    (every table after equals before); the link fault's record survives the restart."""
    faults = [
        {"at_s": 0.5, "link": ["l1", "s1"], "down_s": 0.5},
        {"at_s": 1.5, "controller": "restart"},
    ]
    got = run(scenario(tmp_path, "ctl", faults, "sebf"), tmp_path / "ctl", check=True)
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    link, ctl = s["faults"]
    check_reroute(link, got["log"])  # the old controller's events, kept
    assert link["restored_s"] is not None
    assert ctl["kind"] == "controller" and ctl["tables_equal"] is True, ctl["detail"]
    assert ctl["injected_s"] >= 1.5 and ctl["up_s"] > ctl["injected_s"]
    assert ctl["resync_ms"] is not None and 0 < ctl["resync_ms"] < 5000
    assert ctl["restored_s"] >= ctl["up_s"]
    assert "restart: every leaf taken over, 0 writes to reach the desired state" in got["log"]
    assert got["log"].count("controller ready: OpenFlow") == 2
    # The simulator does not model the outage: while the controller is away (0.5-1.3 s
    # here) releases wait for their register answer and SEBF's re-rated meters wait for
    # the new controller, so the emulated iteration may be longer (1.01-1.27 measured).
    fid = s["fidelity"]
    assert "error" not in fid and 0.8 < fid["iteration_ratio"] < 1.6, fid
