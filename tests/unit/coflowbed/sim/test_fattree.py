"""The full-bisection fat-tree of the simulator: paths per tier, ECMP spread over the
cores, and its ``sim_fabric`` key."""

from __future__ import annotations

import numpy as np
import pytest

from coflowbed.core.errors import UserError
from coflowbed.experiment.scenario import scenario_from_raw
from coflowbed.experiment.simfabric import fattree_k
from coflowbed.sim.fabric import FatTree

HOSTS = tuple(f"t{i}" for i in range(16))  # k=4: 4 pods x 2 edges x 2 hosts


def _tree() -> FatTree:
    return FatTree(HOSTS, 4, 100e9)


def _links(tree: FatTree, src: str, dst: str, fid: str = "f") -> list[int]:
    """The real links (dummy dropped) of one flow."""
    (row,) = tree.paths([src], [dst], [fid])
    return [int(x) for x in row if x != tree.dummy]


def test_path_length_follows_the_tiers_a_flow_must_climb():
    tree = _tree()
    assert len(_links(tree, "t0", "t1")) == 2  # same edge switch
    assert len(_links(tree, "t0", "t2")) == 4  # same pod, other edge: via an aggregation
    assert len(_links(tree, "t0", "t15")) == 6  # other pod: via a core
    assert tree.capacity_bps.size == 2 * 16 + 4 * 4 * 2 * 2 + 1
    assert np.isinf(tree.capacity_bps[-1]) and (tree.capacity_bps[:-1] == 100e9).all()


def test_ecmp_spreads_inter_pod_flows_over_every_core_and_up_equals_down_aggregation():
    tree = _tree()
    ids = [f"f{i}" for i in range(400)]
    rows = tree.paths(["t0"] * 400, ["t15"] * 400, ids)
    t = tree._tier
    cores = {(int(r[2]) - 2 * 16 - t) % (2 * 2) for r in rows}  # agg x port of pod 0
    assert cores == set(range(4))
    # the core fixes the aggregation switch in both pods: same agg index up and down
    up_agg = (rows[:, 1] - 32) % 2
    down_agg = (rows[:, 4] - (32 + 3 * t)) % 2
    assert (up_agg == down_agg).all()


def test_smallest_even_k_that_holds_the_hosts():
    assert [fattree_k(n) for n in (2, 16, 17, 128, 129, 1024)] == [2, 4, 6, 8, 10, 16]
    with pytest.raises(ValueError, match="k"):
        FatTree(tuple(f"t{i}" for i in range(17)), 4, 1e9)


def test_sim_fabric_fattree_places_the_job_and_rejects_leaf_keys(tmp_path):
    base = {
        "fabric": {"spines": 1, "leaves": 1, "hosts_per_leaf": 2, "host_bw_mbps": 10},
        "policy": "fair",
        "workload": {"job": "tiny-moe"},  # 8 hosts
    }
    scen = scenario_from_raw(
        {**base, "sim_fabric": {"kind": "fattree", "host_gbps": 100}}, tmp_path / "s.yaml"
    )
    assert scen.sim_fabric is not None and scen.sim_fabric.hosts == 8
    model = scen.sim_fabric.model()
    assert isinstance(model, FatTree) and model.k == 4 and model.link_bps == 100e9
    with pytest.raises(UserError, match=r"sim_fabric\.spines: not a key of a fattree"):
        scenario_from_raw(
            {**base, "sim_fabric": {"kind": "fattree", "host_gbps": 1, "spines": 2}},
            tmp_path / "s.yaml",
        )
