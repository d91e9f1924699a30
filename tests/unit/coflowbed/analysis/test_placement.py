"""Bytes per leaf-spine link: the model's placement against switch counters
(coflowbed.analysis.placement)."""

from __future__ import annotations

import pytest

from coflowbed.analysis import placement
from coflowbed.sim.fabric import ecmp_spine
from topo.plan import FabricPlan
from workload.dag import Coflow, Flow

PLAN = FabricPlan(spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=80, fabric_bw_mbps=80)


def test_model_bytes_follow_each_flows_spine_and_skip_same_leaf_flows():
    flows = (
        Flow("a.0", "h11", "h21", 3_000_000),
        Flow("a.1", "h22", "h12", 2_000_000),
        Flow("a.2", "h11", "h12", 9_000_000),  # one leaf: no spine link
    )
    got = placement.model_link_bytes([Coflow("a", flows)], PLAN)
    s0 = ecmp_spine("h11", "h21", "a.0", 2) + 1
    s1 = ecmp_spine("h22", "h12", "a.1", 2) + 1
    want: dict[str, int] = {}
    for link, n in ((f"l1-s{s0}", 3e6), (f"s{s0}-l2", 3e6), (f"l2-s{s1}", 2e6), (f"s{s1}-l1", 2e6)):
        want[link] = want.get(link, 0) + int(n)
    assert got == want


def test_links_below_a_megabyte_in_the_model_are_not_compared():
    flows = (Flow("a.0", "h11", "h21", 3_000_000), Flow("b.0", "h22", "h12", 500_000))
    model = placement.model_link_bytes([Coflow("a", flows)], PLAN)
    ports = {
        f"l{a}": {str(PLAN.uplink_port(s)): {"tx_bytes": 6_000_000} for s in (1, 2)} for a in (1, 2)
    } | {f"s{s}": {str(a): {"tx_bytes": 6_000_000} for a in (1, 2)} for s in (1, 2)}
    rows = {r.link: r for r in placement.compare_links([Coflow("a", flows)], PLAN, ports)}
    assert len(rows) == 8 and all(r.switch_bytes == 6_000_000 for r in rows.values())
    for link, r in rows.items():
        if model.get(link, 0) >= placement.MIN_MODEL_BYTES:
            assert r.ratio == pytest.approx(6e6 / model[link])
        else:
            assert r.ratio is None
    compared = [6e6 / n for n in model.values() if n >= placement.MIN_MODEL_BYTES]
    assert placement.ratio_range(rows.values()) == (min(compared), max(compared))
    assert set(model.values()) & {500_000}  # b's links alone are not compared
    assert placement.ratio_range([]) is None
