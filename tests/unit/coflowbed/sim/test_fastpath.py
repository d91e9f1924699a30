"""The simulator's fast paths: policies deciding on arrays (``decide_table``) give the
same run as through ``decide``; held rates (``hold_rates``, Varys) let flows finish at
their own instants between two decisions without re-sharing their capacity."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from coflowbed.sim import BigSwitch, simulate
from controller import policies
from controller.policies import bigswitch
from controller.policies.base import CoflowState, Decision, FabricView, FlowTable, Policy
from controller.policies.sebf import Sebf
from controller.policies.sincronia import Sincronia
from workload.dag import Coflow, Dag, Flow

GBPS = 1e9


class DictSebf(Sebf):
    """SEBF forced through ``decide`` (per-flow dicts)."""

    def decide_table(self, table, ids, seq, now):
        """Decline: the simulator falls back to ``decide``."""
        return None


class DictSincronia(Sincronia):
    """Sincronia forced through ``decide``."""

    def decide_table(self, table, ids, seq, now):
        """Decline."""
        return None


def random_dag(seed: int, coflows: int = 12, hosts: int = 6) -> Dag:
    """Coflows of 1-6 random flows (1-40 MB) released over 2 s."""
    rng = random.Random(seed)
    out = []
    for c in range(coflows):
        flows = []
        for i in range(rng.randint(1, 6)):
            src, dst = rng.sample(range(hosts), 2)
            flows.append(Flow(f"c{c}.{i}", f"p{src}", f"p{dst}", rng.randint(1, 40) * 1_000_000))
        out.append(Coflow(f"c{c}", tuple(flows), release_s=round(rng.uniform(0, 2), 3)))
    return Dag(coflows=out)


@pytest.mark.parametrize("fast,slow", [(Sebf, DictSebf), (Sincronia, DictSincronia)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_array_decisions_give_the_same_run_as_decide(fast, slow, seed):
    dag = random_dag(seed)
    fabric = BigSwitch(tuple(f"p{i}" for i in range(6)), GBPS)
    a = simulate(dag, fabric, fast(), None)
    b = simulate(dag, fabric, slow(), None)
    assert a.sim.stats.finished and b.sim.stats.finished
    assert a.sim.tabular  # the fast run really used decide_table
    assert b.sim.tabular is False
    fa = [o.finish_s for o in a.sim.outcomes]
    fb = [o.finish_s for o in b.sim.outcomes]
    # decide() sees remaining bytes rounded up to whole bytes: 1e-6 relative
    assert fa == pytest.approx(fb, rel=1e-6)


class Fixed(Policy):
    """Test policy: fixed per-flow rates held until the next decision."""

    name = "fixed"
    hold_rates = True

    def __init__(self, rates: dict[str, float]) -> None:
        super().__init__()
        self.rates = rates

    def decide(self, states: Sequence[CoflowState], fabric: FabricView, now: float):
        """Rank 0, the fixed rates of the live flows."""
        return {
            s.coflow_id: Decision((0,), {f.flow_id: self.rates[f.flow_id] for f in s.coflow.flows})
            for s in states
        }


def test_held_rates_finish_flows_at_their_own_instants_without_resharing():
    # Links of 1 Gbit/s, every flow held at 0.5 Gbit/s (each link full: no top-up).
    # X: a p0->p1 1 Gbit (ends 2 s), b p2->p3 4 Gbit (8 s).  Y: c p0->p1 3 Gbit, d p2->p3
    # 4 Gbit.  Held: c stays at 0.5 when a ends at 2 s -> 3/0.5 = 6 s; X ends at 8 s.
    # Re-sharing at a's end would give c the whole link from 2 s: 2 + 2/1 = 4 s.
    hosts = tuple(f"p{i}" for i in range(4))
    gbit = 125_000_000
    dag = Dag(
        coflows=[
            Coflow("X", (Flow("a", "p0", "p1", gbit), Flow("b", "p2", "p3", 4 * gbit))),
            Coflow("Y", (Flow("c", "p0", "p1", 3 * gbit), Flow("d", "p2", "p3", 4 * gbit))),
        ]
    )
    policy = Fixed(dict.fromkeys("abcd", 0.5e9))
    res = simulate(dag, BigSwitch(hosts, 1e9), policy, None)
    finish = dict(zip("abcd", res.sim.flows.finish_s.tolist()))
    assert finish == pytest.approx({"a": 2.0, "b": 8.0, "c": 6.0, "d": 8.0})
    assert res.sim.outcomes[0].finish_s == pytest.approx(8.0)
    assert res.sim.stats.events == 1  # one jump to the coflows' common end
    policy.hold_rates = False
    res = simulate(dag, BigSwitch(hosts, 1e9), policy, None)
    assert res.sim.flows.finish_s[2] == pytest.approx(4.0)


def test_held_rates_jump_from_decision_to_decision():
    # 50 flows of one coflow held at (hard) rates 1..50 Mbit/s: every flow ends at its own
    # instant (recorded exactly), but the run needs one event, not 50.
    hosts = tuple(f"p{i}" for i in range(101))
    flows = tuple(Flow(f"f{i}", f"p{i}", f"p{50 + i}", 1_000_000) for i in range(1, 51))
    policy = Fixed({f"f{i}": i * 1e6 for i in range(1, 51)})
    policy.rates_are_limits = True
    res = simulate(Dag(coflows=[Coflow("X", flows)]), BigSwitch(hosts, 1e9), policy, None)
    assert res.sim.flows.finish_s.tolist() == pytest.approx([8.0 / i for i in range(1, 51)])
    assert res.sim.stats.events == 1
    policy.hold_rates = False  # the same rates, re-shared at each completion: 50 events
    assert (
        simulate(
            Dag(coflows=[Coflow("X", flows)]), BigSwitch(hosts, 1e9), policy, None
        ).sim.stats.events
        == 50
    )


def test_port_loads_dense_and_sorted_agree(monkeypatch):
    rng = np.random.default_rng(4)
    n, ports, coflows = 400, 20, 30
    owner = np.sort(rng.integers(0, coflows, n))
    table = FlowTable(
        (),
        owner,
        rng.integers(0, 10, n),
        rng.integers(10, 20, n),
        rng.uniform(1, 100, n),
        np.searchsorted(owner, np.arange(coflows + 1)),
        np.full(ports, 1e9),
        10,
    )
    dense = bigswitch.port_loads(table)
    monkeypatch.setattr(bigswitch, "DENSE_MAX", 0)
    sparse = bigswitch.port_loads(table)
    for a, b in zip(vars(dense).values(), vars(sparse).values()):
        np.testing.assert_allclose(a, b)


def test_a_horizon_inside_a_held_jump_keeps_the_flows_that_ended_before_it():
    # Same held rates as above; the run stops at 5 s: a (2 s) is done, X and Y are not,
    # and simulated time ends at the horizon, not at the last event before it.
    hosts = tuple(f"p{i}" for i in range(4))
    gbit = 125_000_000
    dag = Dag(
        coflows=[
            Coflow("X", (Flow("a", "p0", "p1", gbit), Flow("b", "p2", "p3", 4 * gbit))),
            Coflow("Y", (Flow("c", "p0", "p1", 3 * gbit), Flow("d", "p2", "p3", 4 * gbit))),
        ]
    )
    res = simulate(
        dag, BigSwitch(hosts, 1e9), Fixed(dict.fromkeys("abcd", 0.5e9)), None, horizon_s=5.0
    )
    assert res.partial and res.sim.now == pytest.approx(5.0)
    finish = res.sim.flows.finish_s.tolist()
    assert finish[0] == pytest.approx(2.0) and all(np.isnan(finish[1:]))


@pytest.mark.parametrize("fast", [False, True])
def test_long_runs_report_progress(monkeypatch, caplog, fast):
    """A run longer than PROGRESS_EVERY_S logs how far it got: here at every event of the
    per-flow loop, and after every compiled run of flow completions (``fast``; one
    ``run_groups`` call, which may take several decisions)."""
    from coflowbed.sim import engine, grouprun

    monkeypatch.setattr(engine, "PROGRESS_EVERY_S", 0.0)
    runs = []
    real = grouprun.run_groups
    monkeypatch.setattr(grouprun, "run_groups", lambda sim: runs.append(1) or real(sim))
    dag = random_dag(4)
    fabric = BigSwitch(tuple(f"p{i}" for i in range(6)), GBPS)
    with caplog.at_level("INFO", logger="sim"):
        sim = engine.Simulator(dag, fabric, policies.get("fair"), None, fast=fast).run()
    lines = [r.getMessage() for r in caplog.records if "coflows done" in r.getMessage()]
    events = sim.stats.events if not fast else len(runs)
    assert len(lines) >= events - 1 > 0
    assert f"/{len(dag.coflows)} coflows done" in lines[-1]


def metered() -> Policy:
    """Static levels with meters on half the coflows (capped, rates not held)."""
    from coflowbed.sim.levels import StaticPolicy

    return StaticPolicy(
        {f"c{i}": i % 3 for i in range(16)}, 2, {f"c{i}": 3e8 for i in range(0, 16, 2)}
    )


@pytest.mark.parametrize("policy", ["fair", "fifo", "sebf", "dclas", "sincronia", metered])
def test_lazy_compaction_changes_nothing(monkeypatch, policy):
    """Finished flows left in the active arrays (retired, compacted later) give the same
    run as dropping them at once; every flow finishes exactly once."""
    from coflowbed.sim import engine

    dag = random_dag(7, coflows=16)
    fabric = BigSwitch(tuple(f"p{i}" for i in range(6)), GBPS)
    runs = []
    for fraction in (0.0, 10.0):  # compact at every completion / only before decisions
        monkeypatch.setattr(engine, "COMPACT_FRACTION", fraction)
        pol = policy() if callable(policy) else policies.get(policy)
        sim = simulate(dag, fabric, pol, None).sim
        assert sim.stats.finished and (sim.left == 0).all()
        assert not np.isnan(sim.flows.finish_s).any()
        assert sim.sent == pytest.approx(np.bincount(sim.flows.coflow_of, sim.flows.size))
        runs.append([o.finish_s for o in sim.outcomes])
    assert runs[0] == pytest.approx(runs[1], rel=1e-12)
