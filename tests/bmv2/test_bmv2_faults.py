"""Scenario faults on a BMv2 fabric (root, simple_switch_grpc; skipped without them),
mirroring tests/integration/test_faults.py for OVS, through the CLI.

default-bmv2.yaml's fabric (2 spines, 4 leaves, 2 hosts per leaf, 10 Mbit/s) runs its
coflows plus ``cross``: flows from every other leaf to l1's hosts and from l1 out, each
on its own connection, so some hash onto s1 on every leaf.  When l1's uplink to s1 goes
down, the port watcher sees the carrier go (topo/bmv2_ports.py), the controller rewrites
l1's groups (no more hashing onto the dead uplink) and group 1 of every other leaf (no
more l1 traffic through s1); a flow left on a dead path would never finish and the
run's timeout would mark it partial.  What the two switches still sent into the dead
link once the reroute was confirmed (their port_tx egress counters) is in the record and
checked, but it is weak: it stayed +0 with the reroute broken on purpose, which the
group-write checks of ``check_reroute`` did catch (docs/bmv2.md, "Faults").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import faultrun
from tests.cli import SCENARIOS
from tests.faultrun import LEAVES, check_leaf_restart, check_reroute, run

pytestmark = [pytest.mark.root, pytest.mark.bmv2, pytest.mark.slow]

KB = 1000


def scenario(tmp: Path, name: str, faults: list[dict], policy: str | None = None) -> Path:
    """default-bmv2.yaml plus the ``cross`` coflow (600 KB per flow) and ``faults``."""
    return faultrun.scenario(
        SCENARIOS / "default-bmv2.yaml",
        tmp,
        name,
        faults,
        policy,
        flow_bytes=600 * KB,
        timeout_s=60,
    )


def test_link_down_and_back_nothing_sent_into_it_and_every_flow_completes(tmp_path):
    p = scenario(tmp_path, "link-flap", [{"at_s": 1.0, "link": ["s1", "l1"], "down_s": 1.5}])
    got = run(p, tmp_path / "flap")
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    (f,) = s["faults"]
    check_reroute(f, got["log"])
    assert (
        "sent into the dead link after the reroute: l1-eth3 +0, s1-eth1 +0 packets" in (f["detail"])
    ), f["detail"]
    assert f["up_s"] == pytest.approx(f["injected_s"] + 1.5, abs=0.2)
    assert f["restored_s"] >= f["up_s"] and 0 <= f["restore_ms"] < 500
    for d in (2, 3, 4):  # back over both spines
        assert f"l1: group {d} (to l{d}) over spines [1, 2]" in got["log"]
    assert got["rows"][0]["target"] == "l1-s1" and float(got["rows"][0]["reroute_ms"]) >= 0


def test_spine_restart_gets_its_pipeline_and_entries_back(tmp_path):
    p = scenario(tmp_path, "spine-restart", [{"at_s": 1.0, "switch": "s2", "down_s": 1.0}])
    got = run(p, tmp_path / "restart")
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    (f,) = s["faults"]
    assert f["kind"] == "switch" and f["target"] == "s2"
    assert 0 <= f["detect_ms"] < 500  # its P4Runtime stream ended
    assert f["leaves_rerouted"] == " ".join(LEAVES) and 0 <= f["reroute_ms"] < 500
    assert f["resync_ms"] is not None and 0 < f["resync_ms"] < 10000
    assert f["tables_equal"] is True, f["detail"]
    assert "s2 tables equal to before the restart" in f["detail"], f["detail"]


def test_leaf_restart_gets_its_pipeline_and_the_current_coflow_table_back(tmp_path):
    p = scenario(tmp_path, "leaf", [{"at_s": 1.0, "switch": "l4", "down_s": 1.0}], "sebf")
    check_leaf_restart(run(p, tmp_path / "leaf"), "l4", resync_max_ms=10000)


def test_controller_restart_takes_the_switches_over_unchanged(tmp_path):
    """A link flap, then the controller SIGKILLed and started again under SEBF: the new
    one reads every switch back over P4Runtime (rules with their cookies) and writes
    nothing: every switch's entries after equal those before."""
    faults = [
        {"at_s": 0.5, "link": ["l1", "s1"], "down_s": 0.5},
        {"at_s": 1.5, "controller": "restart"},
    ]
    got = run(scenario(tmp_path, "ctl", faults, "sebf"), tmp_path / "ctl")
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    link, ctl = s["faults"]
    check_reroute(link, got["log"])  # the old controller's events, kept
    assert link["restored_s"] is not None
    assert ctl["kind"] == "controller" and ctl["tables_equal"] is True, ctl["detail"]
    assert ctl["injected_s"] >= 1.5 and ctl["up_s"] > ctl["injected_s"]
    assert ctl["resync_ms"] is not None and 0 < ctl["resync_ms"] < 10000
    assert "restart: every leaf taken over, 0 writes to reach the desired state" in got["log"]
    assert got["log"].count("P4Runtime controller ready") == 2
