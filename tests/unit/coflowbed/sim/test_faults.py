"""Link faults in the flow-level simulator: capacity 0 while a link is down, ECMP over
the spines left, faults placed after a coflow; the run's recorded faults replayed."""

from __future__ import annotations

import numpy as np
import pytest

from coflowbed.experiment.faults import Fault, recorded_sim_faults, sim_faults
from coflowbed.sim import LeafSpine, LinkFault, simulate
from coflowbed.sim.fabric import ecmp_spine
from controller.policies.base import Decision, Policy
from tests.fakes import cf
from topo.plan import FabricPlan
from workload.dag import Dag

approx = lambda x: pytest.approx(x, rel=1e-9, abs=1e-9)  # noqa: E731
MBIT = 1e6 / 8  # bytes in one megabit


class OneLevel(Policy):
    """Every coflow on one level (per-flow max-min fair)."""

    name = "one-level"

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision(rank=(0,)) for s in states}


def one_level() -> OneLevel:
    return OneLevel()


def finish(result) -> dict[str, float | None]:
    return {r.coflow_id: r.finish_s for r in result.coflow_records()}


def test_a_dead_link_carries_nothing_until_it_is_back():
    # 1 spine, 2 leaves x 1 host, 100 Mbit/s everywhere: 100 Mbit takes 1 s; the only
    # path is down from 0.5 s to 1.5 s, so it ends at 2.0 s.
    fab = LeafSpine(("a", "b"), 1, 1, 100e6, 100e6)
    dag = Dag([cf("x", [("a", "b", int(100 * MBIT))])])
    r = simulate(dag, fab, one_level(), 8, faults=[LinkFault(((0, 0),), 0.5, 1.0)])
    assert finish(r)["x"] == approx(2.0)
    assert finish(simulate(dag, fab, one_level(), 8))["x"] == approx(1.0)


def test_flows_hash_over_the_spines_left():
    # 2 spines, 2 leaves x 2 hosts, host links 100, leaf-spine links 50 Mbit/s.  With
    # l1-s1 down from the start both inter-leaf flows share s2: 25 Mbit/s each, so
    # 25 Mbit takes 1 s (on two spines at most 50 each: no later than 0.5 s).
    hosts = ("a1", "a2", "b1", "b2")
    fab = LeafSpine(hosts, 2, 2, 100e6, 50e6)
    dag = Dag([cf("x", [("a1", "b1", int(25 * MBIT)), ("a2", "b2", int(25 * MBIT))])])
    r = simulate(dag, fab, one_level(), 8, faults=[LinkFault(((0, 0),), 0.0)])
    assert finish(r)["x"] == approx(1.0)
    ids = [f"f{i}" for i in range(64)]
    src, dst = ["a1"] * 64, ["b2"] * 64
    paths = fab.paths(src, dst, ids, frozenset({(0, 0)}))
    up_s1, down_s1 = 2 * 4 + 0 * 2 + 0, 2 * 4 + 2 * 2 + 1 * 2 + 0  # via s1
    assert not np.isin(paths[:, 1:3], [up_s1, down_s1]).any()
    # l2-s1 down: l1's flows to l2 avoid s1 too (s1 cannot reach l2)
    assert (fab.paths(src, dst, ids, frozenset({(1, 0)}))[:, 1] == 2 * 4 + 1).all()
    # nothing down: the plain hash, as before faults existed
    plain = fab.paths(src, dst, ids)
    assert (plain[:, 1] - 8 == [ecmp_spine("a1", "b2", f, 2) for f in ids]).all()
    cap = fab.capacity_with(frozenset({(1, 0)}))
    assert cap[8 + 1 * 2 + 0] == 0 and cap[8 + 4 + 1 * 2 + 0] == 0 and cap[8] == 50e6


def test_a_fault_after_a_coflow_starts_when_it_ends():
    # a (local a2 -> a1, 100 Mbit at 100 Mbit/s) ends at 1 s; then b's only path dies
    # for 1 s
    fab = LeafSpine(("a1", "a2", "b1", "b2"), 2, 1, 100e6, 100e6)
    dag = Dag(
        [
            cf("a", [("a2", "a1", int(100 * MBIT))]),
            cf("b", [("a1", "b1", int(200 * MBIT))]),
        ]
    )
    r = simulate(dag, fab, one_level(), 8, faults=[LinkFault(((0, 0),), 0.0, 1.0, after="a")])
    # b (no link shared with a): 100 Mbit by 1 s, nothing 1..2 s, 100 Mbit more -> 3 s
    assert finish(r) == {"a": approx(1.0), "b": approx(3.0)}


def test_scenario_faults_become_links_down():
    plan = FabricPlan(2, 4, 2, 100, 100)
    faults = [
        Fault(0, "link", "l2-s1", 1.0, None, 2.0),
        Fault(1, "switch", "s2", 3.0, None, 1.0),
        Fault(2, "controller", "controller", 4.0),
    ]
    got = sim_faults(faults, plan)
    assert got == [
        LinkFault(((1, 0),), 1.0, 2.0),
        LinkFault(((0, 1), (1, 1), (2, 1), (3, 1)), 3.0, 1.0),
    ]


def test_fidelity_replays_the_faults_as_they_happened(tmp_path):
    from coflowbed.experiment import faults as fl

    plan = FabricPlan(2, 4, 2, 100, 100)
    rec = fl.FaultRecord.of(Fault(0, "link", "l1-s2", 1.0, None, 2.0))
    rec.injected_s, rec.up_s = 1.004, 3.006
    late = fl.FaultRecord.of(Fault(1, "link", "l3-s1", 9.0))  # never injected
    fl.write_csv(tmp_path, [rec, late])
    (got,) = recorded_sim_faults(tmp_path, plan)
    assert got.links == ((0, 1),) and got.at_s == 1.004
    assert got.down_s == pytest.approx(2.002)
    assert recorded_sim_faults(tmp_path / "none", plan) == []
