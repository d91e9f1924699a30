"""The capacity check at bring-up (coflowbed.emulation.calibrate): what the scenario may offer,
the warning, and the burst itself through real agents on loopback (no root)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from coflowbed.emulation import calibrate as cal_mod
from coflowbed.emulation.agents.client import AgentSet
from coflowbed.emulation.calibrate import (
    Calibration,
    burst_pairs,
    calibrate,
    capacity_warning,
    inter_leaf_limit,
    peak_offered_mbps,
)
from tests.hosts import LocalHost
from topo.plan import FabricPlan
from workload.dag import Coflow, Dag, Flow

PLAN = FabricPlan(spines=2, leaves=4, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


def test_burst_pairs_cross_to_the_next_leaf_and_a_single_leaf_has_none():
    pairs = [(s.name, d.name) for s, d in burst_pairs(PLAN)]
    assert pairs[:3] == [("h11", "h21"), ("h12", "h22"), ("h21", "h31")] and pairs[-1] == (
        "h42",
        "h12",
    )
    assert burst_pairs(FabricPlan(1, 1, 4, 100, 100)) == []


def test_inter_leaf_limit_counts_line_rates_and_leaf_uplinks():
    assert inter_leaf_limit({(s.name, d.name) for s, d in burst_pairs(PLAN)}, PLAN) == 800
    assert inter_leaf_limit({("h11", "h12")}, PLAN) == 0  # same leaf: not between leaves
    incast = {("h21", "h11"), ("h22", "h11"), ("h31", "h11")}
    assert inter_leaf_limit(incast, PLAN) == 100  # one receiver at line rate
    thin = FabricPlan(spines=1, leaves=2, hosts_per_leaf=4, host_bw_mbps=100, fabric_bw_mbps=150)
    four = {(f"h1{i}", f"h2{i}") for i in range(1, 5)}
    assert inter_leaf_limit(four, thin) == 150  # the leaf's one uplink


def test_peak_offered_load_is_over_every_pair_of_the_dag():
    dag = Dag(
        coflows=[
            Coflow("a", (Flow("a.0", "h11", "h21", 10),)),
            Coflow("b", (Flow("b.0", "h12", "h31", 10), Flow("b.1", "h21", "h22", 10))),
        ]
    )
    assert peak_offered_mbps(dag, PLAN) == 200


def measured(mbps: float, peak: float) -> Calibration:
    return Calibration(8, 800.0, mbps, {}, 0.6, 0.9, peak)


def test_warning_names_the_rate_that_would_fit_and_bmv2_gets_its_note():
    text = capacity_warning(measured(300.0, 600.0), PLAN, "ovs")
    assert "600 Mbit/s" in text and "300 Mbit/s" in text and "<= 50 Mbit/s would fit" in text
    assert "BMv2" not in text
    assert "BMv2's forwarding rate depends on how it was built" in capacity_warning(
        measured(300.0, 600.0), PLAN, "bmv2"
    )
    assert capacity_warning(measured(490.0, 600.0), PLAN, "ovs") is None  # >= 0.8 of the peak
    assert capacity_warning(measured(470.0, 600.0), PLAN, "ovs") is not None


@pytest.mark.parametrize("pace_mbps, warns", [(50.0, False), (10.0, True)])
@pytest.mark.processes
@pytest.mark.sockets
def test_burst_through_real_agents_measures_cancels_and_leaves_no_events(
    tmp_path: Path, monkeypatch, pace_mbps, warns
):
    # paced at 10 Mbit/s a 64 KB segment takes 52 ms: a window of 0.3 s after a warm-up of
    # 0.05 s read 0.70 (a CI run) and 1.21 (both cores busy) of the paced rate, as the
    # flows started late or their segments fell at the window's edges; 0.2 s and 0.6 s
    # leave the connections time to open and the edges a smaller share
    monkeypatch.setattr(cal_mod, "WARMUP_S", 0.2)
    monkeypatch.setattr(cal_mod, "WINDOW_S", 0.6)
    # loopback sends 64 KB segments: rates of 100+ Mbit/s keep pacing's steps short
    plan = FabricPlan(spines=1, leaves=2, hosts_per_leaf=1, host_bw_mbps=400, fabric_bw_mbps=400)
    dag = Dag(coflows=[Coflow("a", (Flow("a.0", "h11", "h21", 10),))])
    with AgentSet([LocalHost("h11"), LocalHost("h21")], tmp_path / "run", 0) as agents:
        agents.start()
        # both agents listen on 127.0.0.1: pace the burst so the figure is a known rate
        orig, seen = agents.send_many, []

        def paced(orders):
            seen.extend(orders)
            orig([replace(o, rate_mbps=pace_mbps) for o in orders])

        monkeypatch.setattr(agents, "send_many", paced)
        cal = calibrate(agents, plan, dag)
        # each host's k-th flow in ECMP slot k: its flows spread evenly over the spines
        assert [(o.slot, o.slots) for o in seen if o.host == "h11"] == [(k, 16) for k in range(8)]
        assert agents.events(0.3) == []  # every calibration event was consumed
        # flows that ended by themselves leave their connections in the pool; cancelled
        # ones (too slow to end soon after the window) are closed, never reused
        assert [st["total"] for st in agents.stats("h11").connections.values()] == [
            0 if warns else 8
        ]
    assert cal.pairs == 2 and cal.nominal_mbps == 800 and cal.peak_offered_mbps == 400
    assert set(cal.per_host_mbps) == {"h11", "h21"}
    for mbps in cal.per_host_mbps.values():
        assert 0.8 <= mbps / (cal_mod.FLOWS_PER_HOST * pace_mbps) <= 1.2  # the paced rate
    assert cal.measured_mbps == pytest.approx(sum(cal.per_host_mbps.values()), abs=0.05)
    # the DAG may offer 400 Mbit/s between leaves: ~800 carried (8 flows x 50 Mbit/s each,
    # the line rate's share) is enough, ~160 is not
    assert (cal.warning is not None) is warns


def test_a_flow_cancelled_before_its_header_arrived_is_not_waited_for():
    from types import SimpleNamespace

    flows = {"calibration/h11/0": ("h11", "h21"), "calibration/h11/1": ("h11", "h21")}
    ends = {("calibration/h11/0", "receiver"), ("calibration/h11/1", "receiver")}
    agents = SimpleNamespace(stats=lambda host: SimpleNamespace(received={"calibration/h11/1": 5}))
    cal_mod._forget_unseen(agents, flows, ends)
    assert ends == {("calibration/h11/1", "receiver")}  # its receiver knows it: still expected


def test_the_run_ignores_late_calibration_events():
    from coflowbed.emulation import backend as emulation
    from coflowbed.emulation.agents.client import AgentEvent

    class Agents:
        def events(self, timeout):
            return [
                AgentEvent(
                    "h21",
                    "flow_failed",
                    "calibration/h11/3",
                    {"side": "receiver", "error": "reset"},
                )
            ]

    backend = emulation.EmulationBackend.__new__(emulation.EmulationBackend)
    backend.agents, backend.times = Agents(), emulation.ReleaseTimes()
    backend.link = type("L", (), {"error": None})()
    assert backend.wait_events(0.1) == []


def test_rail_burst_pairs_go_to_the_next_rail_of_the_next_server():
    """Same index on the next leaf would be the sender's own server: shift by one."""
    rail = FabricPlan(2, 2, 2, 25, 50, nics=2)
    pairs = [(s.name, d.name) for s, d in burst_pairs(rail)]
    assert pairs == [("h1n0", "h2n1"), ("h2n0", "h1n1"), ("h1n1", "h2n0"), ("h2n1", "h1n0")]
    assert burst_pairs(FabricPlan(2, 2, 1, 25, 50, nics=2)) == []


def _reads(totals):
    """A ``read`` that gives one port's counters with the given rx byte totals in turn."""
    from controller.stats import PortCount

    seq = iter(totals)
    return lambda: {"l1": {3: PortCount(next(seq), 0, 0, 0)}}


def test_quiet_counters_wait_for_the_burst_tail_to_drain(monkeypatch):
    """Readings 0, 150 KB, 300 KB, 301 KB: the tail moves 150 KB per reading twice,
    then 1 KB (< QUIET_BYTES): the baseline is the 301 KB reading, so the 152 KB the
    rail test once found on a spine port are counted before the iteration."""
    monkeypatch.setattr(cal_mod, "_pause_until", lambda t: None)
    got = cal_mod.quiet_counters(_reads([0, 150_000, 300_000, 301_000]))
    assert got["l1"][3].rx_bytes == 301_000


def test_quiet_counters_give_up_after_the_timeout_with_a_warning(monkeypatch, caplog):
    """Counters that never stop moving: the last reading once QUIET_TIMEOUT_S is over."""
    monkeypatch.setattr(cal_mod, "QUIET_TIMEOUT_S", 0.2)
    got = cal_mod.quiet_counters(_reads(range(0, 10**9, 100_000)))
    assert got["l1"][3].rx_bytes >= 100_000
    assert "still carried traffic" in caplog.text
