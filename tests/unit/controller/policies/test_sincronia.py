"""Sincronia BSSI against brute-force optimal orders on small big-switch instances."""

from __future__ import annotations

import itertools
import random

import pytest

import controller.policies as policies
from controller.policies import CoflowState, FabricView
from workload.dag import Coflow, Flow

HOSTS = ["h1", "h2", "h3"]
RATE = 8.0  # bit/s: one byte per second per port, so work = bytes


def _states(instance) -> list[CoflowState]:
    """CoflowStates from {cid: [(src, dst, bytes), ...]} in insertion (arrival) order."""
    out = []
    for seq, (cid, flows) in enumerate(instance.items()):
        fl = tuple(Flow(f"{cid}.{i}", s, d, b) for i, (s, d, b) in enumerate(flows))
        out.append(CoflowState(Coflow(cid, fl), 0.0, seq))
    return out


def _bssi_order(instance, weights=None) -> list[str]:
    """Coflow ids in Sincronia's order."""
    pol = policies.get("sincronia", weights=weights)
    out = pol.decide(_states(instance), FabricView.uniform(HOSTS, RATE), 0.0)
    return sorted(out, key=lambda c: out[c].rank)


def _open_shop_cost(instance, order, weights) -> float:
    """Σ w·C with C(k) = max over ports of the work of coflows up to k (concurrent open shop:
    the big-switch ordering model Sincronia's analysis uses)."""
    done: dict[tuple, float] = {}
    total = 0.0
    for cid in order:
        for s, d, b in instance[cid]:
            done[("up", s)] = done.get(("up", s), 0.0) + b
            done[("down", d)] = done.get(("down", d), 0.0) + b
        ports = {("up", s) for s, _, _ in instance[cid]} | {
            ("down", d) for _, d, _ in instance[cid]
        }
        total += weights[cid] * max(done[p] for p in ports)
    return total


def _fluid_cost(instance, order, weights) -> float:
    """Σ w·CCT under a greedy order-respecting fluid allocation on the big switch (ports of
    rate 1 byte/s; each flow in order takes min(free sender, free receiver))."""
    left = {(c, i): float(b) for c in order for i, (_, _, b) in enumerate(instance[c])}
    now, total = 0.0, 0.0
    while left:
        up, down, rate = dict.fromkeys(HOSTS, 1.0), dict.fromkeys(HOSTS, 1.0), {}
        for c in order:
            for i, (s, d, _) in enumerate(instance[c]):
                r = min(up[s], down[d])
                if (c, i) in left and r > 1e-12:
                    rate[(c, i)], up[s], down[d] = r, up[s] - r, down[d] - r
        dt = min(left[k] / r for k, r in rate.items())
        now += dt
        for k, r in rate.items():
            left[k] -= r * dt
            if left[k] <= 1e-9:
                del left[k]
                if not any(key[0] == k[0] for key in left):
                    total += weights[k[0]] * now
    return total


def _random_instance(rng: random.Random, n: int) -> dict:
    """``n`` coflows of 1..3 flows with sizes 1..20 among HOSTS."""
    return {
        f"c{c}": [(*rng.sample(HOSTS, 2), rng.randint(1, 20)) for _ in range(rng.randint(1, 3))]
        for c in range(n)
    }


def _ratio(instance, weights, cost) -> float:
    """BSSI's cost over the best permutation's cost."""
    best = min(cost(instance, p, weights) for p in itertools.permutations(instance))
    return cost(instance, _bssi_order(instance, weights), weights) / best


@pytest.mark.parametrize("seed", range(25))
def test_within_4x_of_brute_force_optimum_on_random_instances(seed):
    rng = random.Random(seed)
    instance = _random_instance(rng, rng.randint(3, 6))
    weights = {c: float(rng.randint(1, 3)) for c in instance}
    assert _ratio(instance, weights, _fluid_cost) <= 4.0
    assert _ratio(instance, weights, _open_shop_cost) <= 2.0 + 1e-9  # Mastrolilli et al.


def test_single_port_reduces_to_smiths_rule_which_is_optimal():
    rng = random.Random(1)
    for _ in range(20):
        instance = {f"c{c}": [("h1", "h2", rng.randint(1, 50))] for c in range(6)}
        weights = {c: float(rng.randint(1, 5)) for c in instance}
        assert _ratio(instance, weights, _open_shop_cost) == pytest.approx(1.0)


def test_big_coflow_goes_last_where_the_wrong_order_is_over_4x_worse():
    instance = {"big": [("h1", "h2", 100)], **{f"s{i}": [("h1", "h2", 1)] for i in range(5)}}
    ones = dict.fromkeys(instance, 1.0)
    order = _bssi_order(instance)
    assert order[-1] == "big"
    worst = _fluid_cost(instance, ["big", *order[:-1]], ones)
    assert worst / _fluid_cost(instance, order, ones) > 4.0  # so the 4x check above has teeth


def test_weights_change_the_order():
    instance = {"a": [("h1", "h2", 10)], "b": [("h1", "h2", 5)]}
    assert _bssi_order(instance) == ["b", "a"]
    assert _bssi_order(instance, {"a": 3.0}) == ["a", "b"]  # 3/10 > 1/5


def test_positions_are_a_permutation_and_finished_coflows_come_first():
    states = _states(_random_instance(random.Random(4), 8))
    done = states[5]
    done.remaining.update({f.flow_id: 0 for f in done.coflow.flows})
    out = policies.get("sincronia").decide(states, FabricView.uniform(HOSTS, RATE), 0.0)
    assert sorted(d.rank[0] for d in out.values()) == list(range(8))
    assert out[done.coflow_id].rank == (0,)
