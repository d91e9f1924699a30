"""The NCCL-tree hook of the DP all-reduce (CommBuilder._tree): which buckets become
``.up``/``.down`` tree coflows, and their bytes against the closed forms."""

from __future__ import annotations

from collections import defaultdict

import pytest

from workload import generate
from workload.jobspec import parse_job
from workload.placement import generic_hosts


def job(hidden: int, algorithm: str, dp: int = 8, dp_mode: str = "allreduce"):
    """A dense 1-layer job, DP all-reduce (or ZeRO-2) over ``dp`` hosts (one rank each)."""
    return parse_job(
        {
            "name": "t",
            "model": {"layers": 1, "hidden": hidden, "seq_len": 16, "micro_batch": 1},
            "parallelism": {"dp": dp},
            "microbatches": 1,
            "dp_mode": dp_mode,
            "byte_scale": 1.0,
            "collectives": {"algorithm": algorithm},
        }
    )


def dp_coflows(j):
    """The DP coflows of the job's DAG on generic hosts."""
    return [c for c in generate(j, generic_hosts(j.hosts_needed)).coflows if c.ctype.value == "DP"]


def sent(coflows):
    """Bytes each host sends."""
    out: dict[str, int] = defaultdict(int)
    for c in coflows:
        for f in c.flows:
            out[f.src] += f.bytes
    return out


def test_tree_buckets_carry_2s_per_inner_host():
    # h = 256: layer params 12h^2 = 786432, S = 4 B x that = 3145728 per rank.  8 hosts:
    # tree: up then down, 2(n-1) = 14 edges x S/2 each per phase (7S); an inner host
    # sends 2S, the hosts at the two roots S.  Ring: every host sends 2(n-1)/n·S = 1.75S.
    s = 4 * 12 * 256**2
    tree = dp_coflows(job(256, "tree"))
    assert [c.coflow_id for c in tree] == ["i0.dp.s0.L0.ar.dense.up", "i0.dp.s0.L0.ar.dense.down"]
    assert [c.bytes for c in tree] == [7 * s, 7 * s]
    assert tree[1].deps == ("i0.dp.s0.L0.ar.dense.up",)
    assert sorted(sent(tree).values()) == [s, s] + [2 * s] * 6
    ring = dp_coflows(job(256, "ring"))
    assert set(sent(ring).values()) == {round(1.75 * s)}


@pytest.mark.parametrize(
    "hidden,expected",
    [
        # h = 64: S = 4·12·64^2 = 196608 B over 8 nodes at 100 Gbit/s (12500 B/µs).
        # ring: (8.4 + 14·14)·1.4 + 1.75 S/12500 = 286.2 + 27.5 = 313.7 µs;
        # tree: 8.4 + 2·3·14 + S/(5750 x 0.5 [log2(S/64) = 11]) = 92.4 + 68.4 = 160.8 µs.
        (64, "up"),
        # h = 256: S = 3145728 B. ring 286.2 + 440.4 = 726.6 µs;
        # tree 92.4 + S/(5750 x 0.6 [log2 = 15]) = 92.4 + 911.8 = 1004.2 µs -> ring.
        (256, ""),
    ],
)
def test_auto_follows_nccl_cost_model(hidden, expected):
    ids = [c.coflow_id for c in dp_coflows(job(hidden, "auto"))]
    assert ids[0].endswith(".up") == (expected == "up")


def test_auto_leaves_zero2_on_rings():
    # h = 64 picks tree for an all-reduce (above), but NCCL has no tree reduce-scatter /
    # all-gather: with ZeRO-2 the bucket stays a ring (steps k0.. of rs then ag).
    ids = [c.coflow_id for c in dp_coflows(job(64, "auto", dp_mode="zero2"))]
    assert ids and not any(i.endswith((".up", ".down")) for i in ids)
    assert {i.split(".")[4] for i in ids} == {"rs", "ag"}
