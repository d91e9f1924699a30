"""The generated DAG: structure, sizes per formula, 1F1B order, dependencies."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from workload import dagindex, generate, sizes
from workload.dag import CoflowType, node_iteration
from workload.placement import generic_hosts
from workload.presets import load_preset, preset_names
from workload.schema import SpecError

MiB = 2**20


def make(preset, **overrides):
    """Job and DAG of a preset with dotted-key overrides, on generic hosts."""
    job = load_preset(preset, overrides)
    return job, generate(job, generic_hosts(job.hosts_needed))


def sent_per_host(coflows):
    """Bytes each host sends over the given coflows."""
    out = defaultdict(int)
    for cf in coflows:
        for f in cf.flows:
            out[f.src] += f.bytes
    return out


@pytest.mark.parametrize("name", preset_names())
def test_presets_give_valid_dags(name):
    job, dag = make(name)
    dagindex.validate(dag)  # unique ids, known deps, acyclic
    hosts = set(generic_hosts(job.hosts_needed))
    assert dag.hosts() <= hosts
    for cf in dag.coflows:
        assert cf.flows and cf.identity.job == job.name
        assert cf.ctype in (CoflowType.PP, CoflowType.EP, CoflowType.DP)
        for f in cf.flows:
            assert f.src != f.dst and f.src in hosts and f.dst in hosts and f.bytes > 0
    assert dag.meta["byte_scale"] == job.byte_scale
    # one job: every node's iteration span is keyed by the job's name (a compute left on
    # the default job split one iteration into two spans of iterations.csv)
    assert {node_iteration(n)[0] for n in dag.nodes()} == {job.name}
    assert {node_iteration(n)[1] for n in dag.nodes()} == set(range(job.iterations))
    assert len({f.flow_id for cf in dag.coflows for f in cf.flows}) == sum(
        len(cf.flows) for cf in dag.coflows
    )


def test_pp_coflows_carry_the_formula_bytes():
    job, dag = make("gpt3-175b", byte_scale=1.0)
    pp = [cf for cf in dag.coflows if cf.ctype is CoflowType.PP]
    p, m, d = 8, job.microbatches, job.hosts_per_stage
    assert len(pp) == 2 * (p - 1) * m * d
    for cf in pp:
        (flow,) = cf.flows
        assert flow.bytes == 8 * 6 * MiB  # 8 TP ranks x 6 MiB (SP) per host
        assert cf.identity.collective == "send_recv"


def test_ep_all_to_all_sizes_mixtral():
    job, dag = make(
        "mixtral-8x7b", byte_scale=1.0, ep_skew={"skew": 0.0}, **{"model.micro_batch": 1}
    )
    ep = [cf for cf in dag.coflows if cf.ctype is CoflowType.EP]
    assert len(ep) == 2 * 4 * 4 * 2 * 2  # stages x layers/stage x mbs x (fwd, bwd) x (d, c)
    for cf in ep:
        assert len(cf.flows) == 8 * 7
        assert {f.bytes for f in cf.flows} == {8 * MiB}  # 64 MiB / 8 ranks, uniform gate
        assert set(sent_per_host([cf]).values()) == {
            sizes.ring_wire_bytes("all_to_all", 8, 64 * MiB)
        }


def test_ep_skew_makes_imbalanced_but_conserving_matrix():
    _, dag = make("mixtral-8x7b", byte_scale=1.0, **{"model.micro_batch": 1})
    cf = next(c for c in dag.coflows if c.ctype is CoflowType.EP)
    recv = defaultdict(int)
    for f in cf.flows:
        recv[f.dst] += f.bytes
    assert max(recv.values()) > 1.2 * min(recv.values())
    # every rank still dispatches 64 MiB, minus what its own experts keep
    for b in sent_per_host([cf]).values():
        assert b < 64 * MiB


def _stage_params(job, stage):
    return sizes.rank_shard_params(job, stage)


def test_zero2_reduce_scatter_4p_and_all_gather_2p():
    job, dag = make("gpt3-13b", byte_scale=1.0, collectives={"ring": "steps"})
    n, t = job.parallelism.dp, job.parallelism.tp
    for stage in range(job.parallelism.pp):
        p = _stage_params(job, stage)
        stage_hosts = dag.meta["stage_hosts"][stage]
        for coll, width in (("reduce_scatter", 4), ("all_gather", 2)):
            cfs = [
                c
                for c in dag.coflows
                if c.ctype is CoflowType.DP
                and c.identity.stage == stage
                and c.identity.collective == coll
            ]
            assert len(cfs) == len(job.stage_layers(stage)) * (n - 1)
            sent = sent_per_host(cfs)
            assert set(sent) == set(stage_hosts)
            want = t * sizes.ring_wire_bytes(coll, n, width * p)  # t ranks per host
            for b in sent.values():
                assert b == pytest.approx(want, abs=len(cfs))  # rounding <= 1 B per flow


def test_allreduce_ring_steps_and_wire_bytes():
    job, dag = make(
        "tiny-moe", byte_scale=1.0, dp_mode="allreduce", **{"model.moe": None, "parallelism.ep": 1}
    )
    n = job.parallelism.dp
    layer0 = [c for c in dag.coflows if c.ctype is CoflowType.DP and c.identity.lid == 0]
    assert [c.identity.step for c in layer0] == list(range(2 * (n - 1)))
    for prev, cur in zip(layer0, layer0[1:]):
        assert cur.deps == (prev.coflow_id,)  # each step waits for the previous one
    size = 4 * sizes.rank_layer_params(job, 0).dense
    ring = dag.meta["stage_hosts"][0]
    for c in layer0:
        assert {(f.src, f.dst) for f in c.flows} == {(ring[i], ring[(i + 1) % n]) for i in range(n)}
        assert {f.bytes for f in c.flows} == {round(size / n)}
    for b in sent_per_host(layer0).values():
        assert b == pytest.approx(sizes.ring_wire_bytes("all_reduce", n, size), abs=8)


def test_collapsed_ring_carries_all_steps():
    _, steps = make("tiny-moe", collectives={"ring": "steps"})
    _, one = make("tiny-moe", collectives={"ring": "collapse"})
    dp_s = [c for c in steps.coflows if c.ctype is CoflowType.DP]
    dp_1 = [c for c in one.coflows if c.ctype is CoflowType.DP]
    assert len(dp_1) * 3 == len(dp_s)  # 4-rank ring: 3 steps per collective
    a, b = sent_per_host(dp_s), sent_per_host(dp_1)
    assert a.keys() == b.keys() and all(abs(a[h] - b[h]) <= 12 for h in a)


def _host_chains(dag):
    chains = defaultdict(list)
    for c in dag.computes:
        chains[c.host].append(c)
    return chains


@pytest.mark.parametrize("preset", ["tiny-moe", "gpt3-13b"])
def test_compute_chain_follows_1f1b(preset):
    job, dag = make(preset, iterations=2)
    p = job.parallelism.pp
    for host, chain in _host_chains(dag).items():
        for prev, cur in zip(chain, chain[1:]):
            assert prev.node_id in cur.deps  # previous compute of the same host
        stage = next(i for i, row in enumerate(dag.meta["stage_hosts"]) if host in row)
        ops = []
        for c in chain:
            if c.iteration == 0:
                op = c.node_id.split(".")[3]  # "F3" / "B0"
                if not ops or ops[-1] != op:
                    ops.append(op)
        warm = min(p - stage - 1, job.microbatches)
        assert ops[: warm + 1] == [f"F{k}" for k in range(warm + 1)] and ops[warm + 1] == "B0"
        for k in range(job.microbatches):
            assert ops.index(f"F{k}") < ops.index(f"B{k}")


def test_pp_and_ep_dependencies():
    job, dag = make("tiny-moe")
    by_id = {c.coflow_id: c for c in dag.coflows}
    comp = {c.node_id: c for c in dag.computes}
    send = by_id["i0.pp.s0-s1.h2.F1"]
    assert send.deps[0] == "i0.c.s0h2.F1.L1b"  # last forward piece of stage 0
    assert "i0.pp.s0-s1.h2.F1" in comp["i0.c.s1h2.F1.L2a"].deps
    back = by_id["i0.pp.s1-s0.h0.B0"]
    assert back.deps[0] == "i0.c.s1h0.B0.L2a"
    # stage 0's backward of mb0 starts with layer 1's EP all-to-all: it waits for the recv
    assert back.coflow_id in by_id["i0.ep.s0g0.B0.L1.d"].deps
    disp = by_id["i0.ep.s1g0.F0.L2.d"]
    assert {f"i0.c.s1h{j}.F0.L2a" for j in range(4)} <= set(disp.deps)
    assert disp.coflow_id in comp["i0.c.s1h3.F0.L2b"].deps


def test_next_iteration_waits_for_all_gather():
    job, dag = make("tiny-moe", iterations=2)
    comp = {c.node_id: c for c in dag.computes}
    ag_last = "i0.dp.s0.L1.ag.dense.k2"
    assert ag_last in {c.coflow_id for c in dag.coflows}
    assert ag_last in comp["i1.c.s0h0.F0.L1a"].deps
    assert "i0.c.s0h0.B3.L0a" in comp["i1.c.s0h0.F0.L0a"].deps  # chain across iterations
    rs0 = next(c for c in dag.coflows if c.coflow_id == "i0.dp.s1.L3.rs.dense.k0")
    assert set(rs0.deps) == {f"i0.c.s1h{j}.B3.L3a" for j in range(4)}


def test_ep_matching_phases_are_matchings_summing_to_the_all_to_all():
    _, whole = make("tiny-moe")
    _, split = make("tiny-moe", collectives={"ep_matching": True})
    base = {c.coflow_id: c for c in whole.coflows if c.ctype is CoflowType.EP}
    phases = defaultdict(list)
    for c in split.coflows:
        if c.ctype is CoflowType.EP:
            phases[c.coflow_id.rsplit(".p", 1)[0]].append(c)
    assert phases.keys() == base.keys()
    for cid, parts in phases.items():
        total = defaultdict(int)
        for k, c in enumerate(parts):
            assert c.identity.step == k
            assert len({f.src for f in c.flows}) == len(c.flows) == len({f.dst for f in c.flows})
            for f in c.flows:
                total[(f.src, f.dst)] += f.bytes
        assert total == {(f.src, f.dst): f.bytes for f in base[cid].flows}


def test_explicit_placement_and_host_errors():
    rows = [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]]
    job = load_preset("tiny-moe", {"placement.stage_hosts": rows})
    dag = generate(job, None)
    assert dag.hosts() == {h for r in rows for h in r}
    assert {f.src for c in dag.coflows for f in c.flows if c.identity.stage == 1} <= set(rows[1])
    with pytest.raises(SpecError, match=r"placement.stage_hosts\[0\].*'a1'"):
        generate(job, ["b1", "b2", "b3", "b4"])
    plain = load_preset("tiny-moe")
    with pytest.raises(SpecError, match="needs 8 hosts"):
        generate(plain, generic_hosts(7))


def test_default_placement_fills_fabric_hosts_in_order():
    from topo.plan import FabricPlan

    hosts = FabricPlan(2, 4, 4, 50, 50).host_names()
    job = load_preset("qwen-moe-12l")
    dag = generate(job, hosts)
    assert dag.meta["stage_hosts"][0] == ["h11", "h12", "h13", "h14"]  # a stage = a leaf
    ep = [c for c in dag.coflows if c.ctype is CoflowType.EP]
    assert all(f.src[:2] == f.dst[:2] for c in ep for f in c.flows)  # EP inside a leaf


def test_seed_changes_skewed_matrix_deterministically():
    _, a = make("tiny-moe")
    _, b = make("tiny-moe")
    _, c = make("tiny-moe", ep_skew={"skew": 0.8, "seed": 2})
    fa = [f.bytes for cf in a.coflows for f in cf.flows]
    assert fa == [f.bytes for cf in b.coflows for f in cf.flows]
    assert fa != [f.bytes for cf in c.coflows for f in cf.flows]
    assert np.isclose(sum(fa), sum(f.bytes for cf in c.coflows for f in cf.flows), rtol=0.2)


def test_combine_retraces_dispatch():
    _, dag = make("tiny-moe")
    by_id = {c.coflow_id: c for c in dag.coflows}
    for kind in ("F", "B"):
        d, c = by_id[f"i0.ep.s0g0.{kind}2.L1.d"], by_id[f"i0.ep.s0g0.{kind}2.L1.c"]
        assert {(f.dst, f.src, f.bytes) for f in c.flows} == {
            (f.src, f.dst, f.bytes) for f in d.flows
        }
        assert len({f.bytes for f in d.flows}) > 1  # skewed preset


INTERLEAVED = {"schedule": "interleaved-1f1b", "parallelism.virtual_stages": 2, "model.layers": 8}


def test_interleaved_dag_wraps_pipeline_and_shrinks_bubble():
    from workload import critical_path

    job, dag = make("tiny-moe", **INTERLEAVED)
    dagindex.validate(dag)
    assert job.stage_layers(0) == [0, 1, 4, 5] and job.stage_layers(1) == [2, 3, 6, 7]
    rows = dag.meta["stage_hosts"]
    wrap = next(c for c in dag.coflows if c.coflow_id == "i0.pp.s1-s2.h0.F0")
    (f,) = wrap.flows
    assert (f.src, f.dst) == (rows[1][0], rows[0][0])  # device 1 -> device 0 (chunk 2)
    assert wrap.identity.lid == 3 and wrap.identity.stage == 1
    comp = {c.node_id: c for c in dag.computes}
    assert "i0.pp.s1-s2.h0.F0" in comp["i0.c.s0h0.F0.L4a"].deps
    _, plain = make("tiny-moe", **{"model.layers": 8})
    assert critical_path(dag, 1e12) < critical_path(plain, 1e12)  # smaller bubble


@pytest.mark.parametrize(
    "overrides,reason",
    [
        ({"schedule": "interleaved-1f1b"}, "needs >= 2"),
        ({"parallelism.virtual_stages": 2, "model.layers": 8}, "needs schedule interleaved"),
        ({**INTERLEAVED, "microbatches": 3}, "multiple of pp=2"),
        ({**INTERLEAVED, "model.layers": 6}, "do not split evenly"),
    ],
)
def test_interleaved_spec_rules(overrides, reason):
    with pytest.raises(SpecError, match=reason):
        load_preset("tiny-moe", overrides)


def test_expert_buckets_ring_over_the_expert_dp_group():
    job, dag = make("tiny-moe", byte_scale=1.0, **{"parallelism.dp": 8})
    row = dag.meta["stage_hosts"][0]
    rs = [c for c in dag.coflows if c.coflow_id.startswith("i0.dp.s0.L0.rs.expert")]
    assert len(rs) == 1  # expert-DP group of dp/ep = 2 ranks: one step
    (cf,) = rs
    assert {(f.src, f.dst) for f in cf.flows} == {(row[g], row[g + 4]) for g in range(4)} | {
        (row[g + 4], row[g]) for g in range(4)
    }
    expert = sizes.rank_layer_params(job, 0).expert  # 2 experts of 2 x h x ffn params
    assert expert == 2 * 2 * 512 * 2048
    assert {f.bytes for f in cf.flows} == {4 * expert // 2}


def dag_digest(dag):
    """sha256 (first 16 hex digits) over every compute and coflow field, flows as
    (id, src, dst, bytes) tuples in order."""
    import hashlib

    h = hashlib.sha256()
    for c in dag.computes:
        h.update(repr((c.node_id, c.host, c.duration_s, c.deps, c.label, c.iteration)).encode())
    for cf in dag.coflows:
        flows = tuple((f.flow_id, f.src, f.dst, f.bytes) for f in cf.flows)
        h.update(repr((cf.coflow_id, cf.identity, cf.deps, cf.release_s, flows)).encode())
    return h.hexdigest()[:16]


# Digests of the DAGs the generator built with one Flow object per flow (commit
# 67bb382, before coflows held their flows as workload.flowblock arrays): the array
# path must give the same DAG, flow for flow.
PER_FLOW_DIGESTS = {
    "gpt3-13b": "58da376072b81683",
    "gpt3-175b": "b20a573cfb1ccfeb",
    "llama3-405b": "b748fab5041dcdf7",
    "llama3-70b": "234b2d07005d18cc",
    "mixtral-8x7b": "f2f0463eb14c055a",
    "qwen-moe-12l": "ee6a4022d9ade05e",
    "small-moe": "249b5be2cec4b89a",
    "tiny-moe": "751cf9f61c35dcd4",
}


@pytest.mark.parametrize("name", sorted(PER_FLOW_DIGESTS))
def test_presets_give_the_dag_of_the_per_flow_generator(name):
    """Same ids, hosts, bytes, dependencies and identities as before the flow arrays."""
    assert dag_digest(make(name)[1]) == PER_FLOW_DIGESTS[name]


def test_matching_phases_give_the_dag_of_the_per_flow_generator():
    """Hermod's matching sub-phases (no preset turns them on): Mixtral with
    ep_matching, digest recorded as above."""
    dag = make("mixtral-8x7b", **{"collectives.ep_matching": True})[1]
    assert dag_digest(dag) == "ea7e348654a8f3fc"
