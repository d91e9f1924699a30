"""Imported workloads as DAGs: the shipped examples give the coflow counts and bytes per
type that docs/workloads.md states (worked out below), with the documented order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from workload import dagindex, dagjson
from workload.imports import ImportOptions, import_workload
from workload.placement import generic_hosts
from workload.schema import SpecError

EXAMPLES = Path(__file__).resolve().parents[4] / "workload" / "examples"
MiB = 2**20


def load(name: str, fmt: str, hosts: int, **opts):
    """The example's DAG on ``hosts`` generic hosts."""
    dag = import_workload(EXAMPLES / name, fmt, generic_hosts(hosts), ImportOptions(**opts))
    dagindex.validate(dag)
    return dag


def per_type(dag):
    """(coflows, bytes) per coflow type."""
    n, b = Counter(), Counter()
    for cf in dag.coflows:
        n[cf.ctype.value] += 1
        b[cf.ctype.value] += cf.bytes
    return dict(n), dict(b)


def test_aicb_example_counts_and_bytes():
    # tp 2, dp 4, pp 2, ep 2, ga 2 on 16 hosts (1 GPU each); per stage 4 TP groups of 2,
    # 2 DP groups of 4, 4 EP groups of 2, 4 expert-DP groups of 2.
    # TP coflows: fwd of embedding, attention, dense (3) + ig of attention, dense (2),
    #   x 2 microbatches x 2 stages = 20.  Bytes: all-reduce of 1 MiB over 2 ranks, each
    #   rank sends 2(1)/2·S = 1 MiB, 8 ranks -> 8 MiB; reduce-scatter / all-gather of
    #   1 MiB: (1/2)·S x 8 = 4 MiB.  Per (mb, stage): 8+8+4 (fwd) + 8+4 (ig) = 32 MiB; x 4.
    # EP: all-to-all of 2 MiB in fwd and ig: 2 x 4 = 8 coflows; each rank sends S/2 to its
    #   partner: 8 ranks x 1 MiB = 8 MiB each -> 64 MiB.
    # PP: 8 host pairs x 2 microbatches x (F and B) = 32 coflows of pp_comm 1 MiB.
    # DP (weight gradients, once per stage): attention all-reduce 4 MiB over dp 4:
    #   8 ranks x 2(3)/4·4 MiB = 48 MiB; MoE all-reduce 8 MiB over pairs: 8 x 8 = 64 MiB;
    #   dense reduce-scatter 4 MiB over dp 4: 8 x (3/4)·4 = 24 MiB: 136 MiB x 2 stages,
    #   3 x 2 = 6 coflows.
    dag = load("aicb-moe-16.txt", "aicb", 16)
    assert per_type(dag) == (
        {"TP": 20, "EP": 8, "PP": 32, "DP": 6},
        {"TP": 128 * MiB, "EP": 64 * MiB, "PP": 32 * MiB, "DP": 272 * MiB},
    )
    # computes: 16 hosts x (2 mb x 4 layers x 3 passes / 2 stages ... ) = per host
    # 2 mb x 4 layers x (fwd, ig, wg) + 4 updates = 28, x 16 = 448
    assert len(dag.computes) == 448


def test_aicb_two_gpus_per_host_keep_tp_inside():
    # 8 hosts of 2 GPUs: each TP pair shares a host, so TP traffic never reaches the
    # fabric; EP pairs (ranks 2 apart) sit on different hosts and stay, and every DP /
    # expert-DP group still has one rank per host (host = DP index): DP unchanged.
    n, b = per_type(load("aicb-moe-16.txt", "aicb", 8, gpus_per_host=2))
    assert "TP" not in n and n["EP"] == 8 and b["EP"] == 64 * MiB and b["DP"] == 272 * MiB
    # PP: 4 host pairs x 2 microbatches x (F, B) = 16 coflows, each carrying both ranks
    # of the host: 2 x 1 MiB
    assert n["PP"] == 16 and b["PP"] == 16 * 2 * MiB


def test_astrasim_hybrid_example_counts_and_bytes():
    # tp 2, dp 4 on 8 hosts.  TP: fwd all-gather of 1 MiB (4 groups x 2 ranks x 1/2 MiB
    # = 4 MiB) + two ig all-reduces of 1 MiB (8 MiB each) = 3 coflows, 20 MiB.
    # DP: wg all-reduces of 4 and 8 MiB over 4 ranks, 8 ranks x 1.5·S = 48 + 96 MiB.
    dag = load("astrasim-transformer.txt", "astrasim", 8)
    assert per_type(dag) == ({"TP": 3, "DP": 2}, {"TP": 20 * MiB, "DP": 144 * MiB})


def test_astrasim_data_example_and_byte_scale():
    # DATA: all-reduces over all 4 NPUs: 4 x 1.5 x 37632 + 4 x 1.5 x 65536 = 619008 B;
    # byte_scale 0.5 halves each flow: 309504.
    assert per_type(load("astrasim-data.txt", "astrasim", 4))[1] == {"DP": 619008}
    assert per_type(load("astrasim-data.txt", "astrasim", 4, byte_scale=0.5))[1] == {"DP": 309504}


def test_tree_algorithm_splits_all_reduces_same_total():
    # Tree all-reduce = up + down coflows; its total, 2(n-1)·S per group, equals the ring's
    # n·2(n-1)/n·S.  The astrasim hybrid example has 2 TP + 2 DP all-reduces -> 4 more.
    ring = load("astrasim-transformer.txt", "astrasim", 8)
    tree = load("astrasim-transformer.txt", "astrasim", 8, algorithm="tree")
    assert len(tree.coflows) == len(ring.coflows) + 4
    assert per_type(tree)[1] == per_type(ring)[1]
    assert {c.coflow_id.rsplit(".", 1)[-1] for c in tree.coflows} >= {"up", "down"}


def test_order_blocking_and_weight_gradients():
    dag = load("aicb-moe-16.txt", "aicb", 16, iterations=2)
    nodes = {c.coflow_id: c for c in dag.coflows} | {c.node_id: c for c in dag.computes}
    # the forward collective blocks: the next layer's compute waits for it
    assert "i0.s0.m0.L0.fwd" in nodes["i0.c.s0h0.m0.L1.fwd"].deps
    # stage 1 waits for stage 0's PP send of the same microbatch
    assert "i0.pp.s0-s1.h0.F0" in nodes["i0.c.s1h0.m0.L0.fwd"].deps
    # the weight-gradient collective follows the last microbatch's wg compute of every
    # host of the stage, and no compute of this iteration waits for it ...
    wg = nodes["i0.s0.L1.wg"]
    assert set(wg.deps) == {f"i0.c.s0h{j}.m1.L1.wg" for j in range(8)}
    assert nodes["i0.c.s0h0.L1.update"].deps[-1] == "i0.s0.L1.wg"
    # ... but the next iteration's first forward of that layer waits for the update
    assert "i0.c.s0h0.L1.update" in nodes["i1.c.s0h0.m0.L1.fwd"].deps


def test_dag_json_round_trip(tmp_path):
    dag = load("aicb-moe-16.txt", "aicb", 16)
    dagjson.dump(dag, tmp_path / "d.json")
    back = dagjson.load(tmp_path / "d.json")
    assert back.coflows == dag.coflows and back.computes == dag.computes
    assert back.meta["format"] == "aicb" and back.meta["parallelism"]["dp"] == 4


@pytest.mark.parametrize(
    "hosts,gph,reason",
    [
        (8, 1, "16 ranks need 16 hosts at 1 GPUs per host, got 8"),
        (4, 3, "gpus_per_host must divide tp x dp"),
    ],
)
def test_placement_errors(hosts, gph, reason):
    with pytest.raises(SpecError, match=reason) as info:
        load("aicb-moe-16.txt", "aicb", hosts, gpus_per_host=gph)
    assert str(info.value).startswith(str(EXAMPLES / "aicb-moe-16.txt"))
