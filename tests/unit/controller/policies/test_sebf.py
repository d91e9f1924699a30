"""Varys SEBF: order by Γ; MADD makes a coflow's flows finish together; work conservation."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

import controller.policies as policies
from controller.policies import CoflowState, FabricView
from workload.dag import Coflow, Flow

MB = 1 << 20
GBPS = 1e9
HOSTS = [f"h{i}" for i in range(1, 9)]


def _coflow_state(cid: str, flows, seq: int, remaining=None) -> CoflowState:
    """Coflow ``cid`` from (src, dst, bytes) triples; ``seq`` is its arrival order."""
    fl = tuple(Flow(f"{cid}.{i}", s, d, b) for i, (s, d, b) in enumerate(flows))
    return CoflowState(Coflow(cid, fl), 0.0, seq, remaining=dict(remaining or {}))


def _left(state: CoflowState) -> dict[str, int]:
    """Bytes left per flow id."""
    return {f.flow_id: state.remaining.get(f.flow_id, f.bytes) for f in state.coflow.flows}


def _port_sums(states, decisions) -> tuple[dict, dict]:
    """Allocated bit/s per sender and per receiver host."""
    up, down = defaultdict(float), defaultdict(float)
    for s in states:
        for f in s.coflow.flows:
            r = decisions[s.coflow_id].flow_rates_bps.get(f.flow_id, 0.0)
            up[f.src] += r
            down[f.dst] += r
    return up, down


def _random_states(rng: random.Random, n: int):
    """``n`` random coflows of 1..4 flows among HOSTS."""
    out = []
    for c in range(n):
        flows = []
        for _ in range(rng.randint(1, 4)):
            s, d = rng.sample(HOSTS, 2)
            flows.append((s, d, rng.randint(1, 50) * MB))
        out.append(_coflow_state(f"c{c}", flows, c))
    return out


def test_orders_by_effective_bottleneck_not_total_bytes():
    fabric = FabricView.uniform(HOSTS, GBPS)
    incast = _coflow_state("incast", [("h1", "h5", 100 * MB), ("h2", "h5", 100 * MB)], 0)
    single = _coflow_state("single", [("h3", "h6", 150 * MB)], 1)
    spread = _coflow_state("spread", [(f"h{i}", f"h{i + 4}", 100 * MB) for i in range(1, 5)], 2)
    out = policies.get("sebf").decide([incast, single, spread], fabric, 0.0)
    assert out["incast"].rank[0] == pytest.approx(200 * MB * 8 / GBPS)
    assert out["single"].rank[0] == pytest.approx(150 * MB * 8 / GBPS)
    assert out["spread"].rank[0] == pytest.approx(100 * MB * 8 / GBPS)
    assert sorted(out, key=lambda c: out[c].rank) == ["spread", "single", "incast"]


def test_gamma_uses_port_rates_and_bytes_left():
    fabric = FabricView({"h1": GBPS, "h2": GBPS}, {"h1": GBPS, "h2": GBPS / 4})
    a = _coflow_state("a", [("h1", "h2", 100 * MB)], 0, remaining={"a.0": 10 * MB})
    b = _coflow_state("b", [("h2", "h1", 50 * MB)], 1)
    out = policies.get("sebf").decide([a, b], fabric, 0.0)
    assert out["a"].rank[0] == pytest.approx(10 * MB * 8 / (GBPS / 4))  # slow receiver port
    assert out["a"].rank < out["b"].rank


def test_madd_rates_make_each_coflows_flows_finish_together():
    fabric = FabricView.uniform(HOSTS, GBPS)
    rng = random.Random(7)
    for _ in range(30):
        states = _random_states(rng, rng.randint(1, 6))
        out = policies.get("sebf").decide(states, fabric, 0.0)
        for s in states:
            rates = out[s.coflow_id].flow_rates_bps
            finish = {fid: b * 8 / rates[fid] for fid, b in _left(s).items() if rates[fid] > 0}
            if finish:
                assert len(finish) == len(rates)  # a coflow runs whole or waits whole
                assert max(finish.values()) == pytest.approx(min(finish.values()), rel=1e-9)


def test_top_coflow_finishes_at_its_gamma_even_with_work_conservation():
    fabric = FabricView.uniform(HOSTS, GBPS)
    rng = random.Random(11)
    for _ in range(30):
        states = _random_states(rng, rng.randint(1, 6))
        out = policies.get("sebf", top_up=True).decide(states, fabric, 0.0)
        top = min(states, key=lambda s: out[s.coflow_id].rank)
        rates = out[top.coflow_id].flow_rates_bps
        cct = max(b * 8 / rates[fid] for fid, b in _left(top).items())
        assert cct == pytest.approx(out[top.coflow_id].rank[0], rel=1e-9)


@pytest.mark.parametrize("top_up", [False, True])
def test_rates_never_exceed_port_capacity(top_up):
    fabric = FabricView.uniform(HOSTS, GBPS)
    rng = random.Random(3)
    for _ in range(30):
        states = _random_states(rng, rng.randint(2, 10))
        out = policies.get("sebf", top_up=top_up).decide(states, fabric, 0.0)
        up, down = _port_sums(states, out)
        assert max(up.values()) <= GBPS * (1 + 1e-9)
        assert max(down.values()) <= GBPS * (1 + 1e-9)
        assert all(r >= 0 for d in out.values() for r in d.flow_rates_bps.values())


def test_blocked_coflow_waits_then_work_conservation_uses_leftover():
    fabric = FabricView.uniform(HOSTS, GBPS)
    a = _coflow_state("a", [("h1", "h2", 10 * MB)], 0)
    b = _coflow_state("b", [("h1", "h3", 40 * MB), ("h4", "h5", 40 * MB)], 1)
    madd = policies.get("sebf").decide([a, b], fabric, 0.0)
    assert madd["a"].flow_rates_bps == {"a.0": pytest.approx(GBPS)}
    assert madd["b"].flow_rates_bps == {"b.0": 0.0, "b.1": 0.0}  # h1 used up: b waits whole
    wc = policies.get("sebf", top_up=True).decide([a, b], fabric, 0.0)
    assert wc["b"].flow_rates_bps == {"b.0": 0.0, "b.1": pytest.approx(GBPS)}


def test_work_conservation_leaves_no_flow_with_spare_capacity_at_both_ends():
    fabric = FabricView.uniform(HOSTS, GBPS)
    rng = random.Random(5)
    for _ in range(30):
        states = _random_states(rng, rng.randint(2, 10))
        out = policies.get("sebf", top_up=True).decide(states, fabric, 0.0)
        up, down = _port_sums(states, out)
        for s in states:
            for f in s.coflow.flows:
                spare = min(GBPS - up[f.src], GBPS - down[f.dst])
                assert spare <= GBPS * 1e-6, (f.flow_id, spare)


def test_finished_flows_get_no_rate():
    fabric = FabricView.uniform(HOSTS, GBPS)
    a = _coflow_state("a", [("h1", "h2", MB), ("h3", "h4", MB)], 0, remaining={"a.0": 0})
    out = policies.get("sebf").decide([a], fabric, 0.0)
    assert set(out["a"].flow_rates_bps) == {"a.1"}


def test_unknown_host_gives_clear_error():
    fabric = FabricView.uniform(["h1", "h2"], GBPS)
    bad = _coflow_state("a", [("h1", "h9", MB)], 0)
    with pytest.raises(ValueError, match=r"flow 'a.0': host 'h9' has no ingress port"):
        policies.get("sebf").decide([bad], fabric, 0.0)


@pytest.mark.parametrize("block", [1, 3, 256, 4096])
def test_work_conserving_scan_matches_the_flow_by_flow_greedy(monkeypatch, block):
    """The block-wise scan grants exactly what a plain loop over flows in order would."""
    import numpy as np

    from controller.policies import sebf
    from controller.policies.base import FlowTable

    monkeypatch.setattr(sebf, "SCAN_BLOCK", block)
    rng = np.random.default_rng(block)
    n, hosts, coflows = 300, 12, 25
    owner = np.sort(rng.integers(0, coflows, n))
    table = FlowTable(
        (),
        owner,
        rng.integers(0, hosts, n),
        rng.integers(hosts, 2 * hosts, n),
        rng.uniform(1, 10, n),
        np.searchsorted(owner, np.arange(coflows + 1)),
        np.full(2 * hosts, 10.0),
        hosts,
    )
    order = rng.permutation(coflows)
    free = rng.uniform(0, 10, 2 * hosts) * (rng.uniform(size=2 * hosts) < 0.7)
    rates = np.zeros(n)
    sebf.work_conserve(order, table, rates, free_fast := free.copy())
    want, fr = np.zeros(n), free.copy()
    for c in order:
        for i in np.flatnonzero(owner == c):
            s, d = table.src[i], table.dst[i]
            if fr[s] > 1e-8 and fr[d] > 1e-8:
                extra = min(fr[s], fr[d])
                want[i] += extra
                fr[s] -= extra
                fr[d] -= extra
    np.testing.assert_allclose(rates, want)
    np.testing.assert_allclose(free_fast, fr, atol=1e-12)
    assert want.sum() > 0  # the instance does exercise the top-up
