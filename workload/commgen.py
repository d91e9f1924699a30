"""Communication coflows of one job: PP send/recv, EP all-to-alls and DP ring
collectives, built at host level with scaled bytes.  The schedule logic that decides
*when* each is issued lives in ``workload.generator``.

Coflow ids (stable, documented in docs/workloads.md):
``i<it>.pp.s<from>-s<to>.h<j>.<F|B><mb>``,
``i<it>.ep.s<stage>g<group>.<F|B><mb>.L<lid>.<d|c>[.p<phase>]``,
``i<it>.dp.s<stage>.L<lid>.<rs|ag|ar>.<dense|expert>[.k<step>|.up|.down]`` (``.up`` /
``.down``: NCCL tree all-reduce); flow ids append ``:<n>``.

On hosts with several NICs (``Placement.nics``) flows run between NIC endpoints: each
GPU's traffic on its own NIC, traffic between GPUs of one host dropped (workload.nics);
DP all-reduces are then rings (no NCCL trees).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from workload import collectives as coll, hostcoll, nccl, sizes
from workload.dag import Coflow, CoflowIdentity, CoflowType, Compute, Flow
from workload.flowblock import FlowBlock
from workload.jobspec import JobSpec
from workload.nics import dense_rank_rings, expert_rank_rings, pp_pairs
from workload.placement import Placement
from workload.sizes import scaled, scaled_array

PHASE = {"F": "fwd", "B": "bwd"}
Phase = tuple[np.ndarray, np.ndarray, np.ndarray]  # src, dst, bytes of one EP sub-phase


def _phase_arrays(phase: list[tuple[int, int, int]]) -> Phase:
    """A phase of (src, dst, bytes) triples as three int64 arrays."""
    a, b, nb = (np.array(col, dtype=np.int64) for col in zip(*phase, strict=True))
    return a, b, nb


def pp_id(it: int, kind: str, src: int, dst: int, j: int, mb: int) -> str:
    """Id of the PP coflow carrying microbatch ``mb`` from (virtual) stage src to dst
    on host replica j."""
    return f"i{it}.pp.s{src}-s{dst}.h{j}.{kind}{mb}"


class CommBuilder:
    """Creates the coflows of one job into ``out`` (a list), returning their ids."""

    def __init__(
        self,
        job: JobSpec,
        placement: Placement,
        out: list[Coflow],
        local: list[Compute] | None = None,
    ) -> None:
        """Prepare per-job constants (message sizes, EP groups, DP rings); transfers
        that stay inside a server become zero-time computes in ``local``."""
        self.job, self.pl, self.out = job, placement, out
        self.local = [] if local is None else local
        m, p = job.model, job.parallelism
        self.k, self.scale = placement.ranks_per_host, job.byte_scale
        self.nics, self.multi = placement.nics, placement.multi
        self.maps = [placement.nic_map(st, p.tp) for st in range(p.pp)] if self.multi else []
        self.rows = [placement.endpoints(st) for st in range(p.pp)]  # FlowBlock host rows
        self.gpu_pp_bytes = sizes.pp_message_bytes(
            m.micro_batch, m.seq_len, m.hidden, p.tp, p.sequence_parallel
        )
        self.pp_bytes = self.k * p.tp * self.gpu_pp_bytes
        self.hosts_per_group = max(1, p.ep // self.k)
        self.ep_on_fabric = m.moe is not None and p.ep > self.k
        if m.moe is not None and self.ep_on_fabric:
            self.experts = m.moe.experts
            self.ep_bytes = sizes.ep_a2a_bytes(
                m.micro_batch, m.seq_len, m.hidden, m.moe.top_k, p.tp
            )
        self._matrix = lru_cache(maxsize=8192)(self._ep_matrix)

    # -- PP ---------------------------------------------------------------
    def pp(
        self, it: int, kind: str, src: int, dst: int, j: int, mb: int, deps: Sequence[str]
    ) -> str:
        """One PP send/recv coflow from virtual stage src to dst (a single flow between
        the j-th hosts of their devices, stage = vstage % pp)."""
        cid = pp_id(it, kind, src, dst, j, mb)
        lid = self.job.chunk_layers(src)[-1 if kind == "F" else 0]
        pp = self.job.parallelism.pp
        ident = CoflowIdentity(
            CoflowType.PP, self.job.name, it, mb, lid, "send_recv", 0, PHASE[kind], src % pp
        )
        flows = self._pp_flows(cid, src % pp, dst % pp, j)
        if not flows:
            return self._nvlink(cid, it, src % pp, j, deps)
        self.out.append(Coflow(cid, flows, ident, tuple(deps)))
        return cid

    def _pp_flows(self, cid: str, src: int, dst: int, j: int) -> tuple[Flow, ...]:
        """Flows of a PP transfer from the j-th host of stage src to that of dst: one
        host-to-host flow, or (multi-NIC) one per NIC pair its GPUs use (GPU u to GPU
        u), none when both are slots of one server."""
        if not self.multi:
            flow = Flow(
                f"{cid}:0",
                self.pl.host(src, j),
                self.pl.host(dst, j),
                scaled(self.pp_bytes, self.scale),
            )
            return (flow,)
        pairs = pp_pairs(self.maps[src], self.maps[dst], j, self.k * self.job.parallelism.tp)
        return tuple(
            Flow(
                f"{cid}:{n}",
                self.pl.endpoint(src, j * self.nics + a),
                self.pl.endpoint(dst, j * self.nics + b),
                scaled(count * self.gpu_pp_bytes, self.scale),
            )
            for n, ((a, b), count) in enumerate(sorted(pairs.items()))
        )

    def _nvlink(self, cid: str, it: int, stage: int, j: int, deps: Sequence[str]) -> str:
        """A transfer inside one server (NVLink): a zero-time compute named ``cid`` on
        the j-th host of ``stage``, so dependants keep their dependency."""
        host = self.pl.host(stage, j)
        self.local.append(Compute(cid, host, 0.0, tuple(deps), "nvlink", it, self.job.name))
        return cid

    # -- EP ---------------------------------------------------------------
    def ep_groups(self, stage: int) -> list[list[int]]:
        """Host indices (within the stage) of each EP group that spans hosts."""
        g = self.hosts_per_group
        return [list(range(q * g, (q + 1) * g)) for q in range(self.job.hosts_per_stage // g)]

    def _ep_matrix(
        self, it: int, lid: int, mb: int, transpose: bool, stage: int, group: int
    ) -> list[Phase]:
        """Scaled host-level dispatch (or combine) matrix of one EP group and its
        phases (src, dst, bytes arrays): the whole matrix, or Hermod's matchings when
        ``ep_matching`` is on.  Indices are group-local hosts, or stage-local NIC
        endpoints (multi-NIC)."""
        job = self.job
        rng = np.random.default_rng([job.seed, it, lid, mb])
        pop = coll.gate_popularity(self.experts, job.ep_skew, rng)
        ranks = coll.a2a_rank_matrix(self.ep_bytes, job.parallelism.ep, pop)
        hosts = coll.scale_bytes(self._endpoint_matrix(ranks, stage, group), self.scale)
        if transpose:
            hosts = np.ascontiguousarray(hosts.T)
        if job.collectives.ep_matching:
            return [_phase_arrays(ph) for ph in coll.decompose_matchings(hosts)]
        a, b = np.nonzero(hosts)
        return [(a, b, hosts[a, b])]

    def _endpoint_matrix(self, ranks: np.ndarray, stage: int, group: int) -> np.ndarray:
        """Unscaled EP group matrix between the group's hosts, or between the stage's
        NIC endpoints (multi-NIC)."""
        p = self.job.parallelism
        if not self.multi:
            return p.tp * coll.host_matrix(ranks, self.k)
        return self.maps[stage].matrix(ranks, group * p.ep)

    def ep(
        self,
        it: int,
        stage: int,
        kind: str,
        mb: int,
        lid: int,
        which: int,
        group: int,
        deps: Sequence[str],
    ) -> str:
        """The all-to-all (``which`` 0 = dispatch direction, 1 = combine direction) of one
        EP group; returns the id of its last (sub-)coflow."""
        # fwd: dispatch T then combine T^T; bwd: grads retrace them (T, then T^T).
        where = (stage, group) if self.multi else (0, 0)  # single NIC: one matrix for all
        phases = self._matrix(it, lid, mb, which == 1, *where)
        base = f"i{it}.ep.s{stage}g{group}.{kind}{mb}.L{lid}.{'dc'[which]}"
        if not any(len(nb) for _a, _b, nb in phases):
            return self._nvlink(base, it, stage, group * self.hosts_per_group, deps)
        first = 0 if self.multi else group * self.hosts_per_group
        prev = tuple(deps)
        for step, phase in enumerate(phases):
            cid = base if len(phases) == 1 else f"{base}.p{step}"
            a, b, nb = phase
            flows = FlowBlock(cid, self.rows[stage], first + a, first + b, nb)
            ident = CoflowIdentity(
                CoflowType.EP, self.job.name, it, mb, lid, "all_to_all", step, PHASE[kind], stage
            )
            self.out.append(Coflow(cid, flows, ident, prev))
            prev = (cid,)
        return prev[0]

    # -- DP ---------------------------------------------------------------
    def dp_parts(self, stage: int, lid: int) -> list[tuple[str, float, Counter[coll.Edge], int]]:
        """Buckets of layer ``lid``: (part, per-rank params, GPU rings crossing each
        endpoint pair, ranks per ring)."""
        p = self.job.parallelism
        lp = sizes.rank_layer_params(self.job, lid)
        parts = [("dense", lp.dense, self._ring_edges("dense", stage), p.dp)]
        if lp.expert > 0 and p.dp // p.ep > 1:
            parts.append(("expert", lp.expert, self._ring_edges("expert", stage), p.dp // p.ep))
        return parts

    def _ring_edges(self, part: str, stage: int) -> Counter[coll.Edge]:
        """GPU rings (one per TP rank) of ``part`` crossing each endpoint pair."""
        p = self.job.parallelism
        if not self.multi:
            rings = self._host_rings(part)
            return Counter({e: w * p.tp for e, w in coll.ring_edge_weights(rings).items()})
        ranks = dense_rank_rings(p.dp) if part == "dense" else expert_rank_rings(p.dp, p.ep)
        return self.maps[stage].ring_edges(ranks)

    def _host_rings(self, part: str) -> list[list[int]]:
        """Host index of each rank of ``part``'s rings (one NIC per host)."""
        p = self.job.parallelism
        if part == "dense":
            return coll.dense_dp_rings(p.dp, self.k)
        return coll.expert_dp_rings(p.dp, p.ep, self.k)

    def dp(self, it: int, stage: int, lid: int, deps: Sequence[str], mid: int) -> dict[str, str]:
        """ZeRO-2 reduce-scatter + all-gather (or one all-reduce) of each bucket of layer
        ``lid``; returns part -> id of the bucket's last coflow (parts on one host omitted)."""
        if self.job.dp_mode == "zero2":
            plan = [
                ("reduce_scatter", "rs", sizes.GRAD_BYTES),
                ("all_gather", "ag", sizes.PARAM_BYTES),
            ]
        else:
            plan = [("all_reduce", "ar", sizes.GRAD_BYTES)]
        done: dict[str, str] = {}
        for part, params, edges, n in self.dp_parts(stage, lid):
            if not edges:
                continue
            prev = tuple(deps)
            for collective, short, width in plan:
                base = f"i{it}.dp.s{stage}.L{lid}.{short}.{part}"
                size = width * params
                tree = None
                if collective == "all_reduce":
                    tree = self._tree(base, stage, it, lid, mid, part, size, prev)
                prev = tree or self._ring(
                    base, collective, stage, it, lid, mid, edges, size, n, prev
                )
            done[part] = prev[0]
        return done

    def _tree(
        self,
        base: str,
        stage: int,
        it: int,
        lid: int,
        mid: int,
        part: str,
        size: float,
        deps: tuple[str, ...],
    ) -> tuple[str, ...] | None:
        """The all-reduce as NCCL's double binary trees over each ring's hosts (tp trees
        in parallel), coflows ``.up`` then ``.down``, when ``collectives.algorithm``
        picks tree for this bucket; None when it picks ring (always on multi-NIC hosts:
        the trees are built host to host)."""
        c = self.job.collectives
        if c.algorithm == "ring" or self.multi:
            return None
        groups = [hostcoll.distinct_hosts(r) for r in self._host_rings(part)]
        if nccl.pick_algorithm(c.algorithm, len(groups[0]), size, c.link_gbps) != "tree":
            return None
        tp = self.job.parallelism.tp
        phases = hostcoll.merge([hostcoll.tree_phases(g, tp * size) for g in groups])
        ident = CoflowIdentity(
            CoflowType.DP, self.job.name, it, mid, lid, "all_reduce", 0, "", stage
        )
        row = self.pl.stage_hosts[stage]
        made = hostcoll.chain_coflows(base, phases, row, ident, deps, self.scale)
        self.out.extend(made)
        return (made[-1].coflow_id,)

    def _ring(
        self,
        base: str,
        collective: str,
        stage: int,
        it: int,
        lid: int,
        mid: int,
        edges: dict,
        size: float,
        n: int,
        deps: tuple[str, ...],
    ) -> tuple[str, ...]:
        """A ring collective over n ranks with per-rank buffer ``size``: its steps as a
        chain of coflows, or one collapsed coflow; returns (last id,)."""
        steps = sizes.ring_steps(collective, n)
        expand = self.job.collectives.use_steps(n)
        src = np.fromiter((a for a, _ in edges), np.int64, len(edges))
        dst = np.fromiter((b for _, b in edges), np.int64, len(edges))
        weight = np.fromiter(edges.values(), np.float64, len(edges))
        per_step = weight * size / n
        nbytes = scaled_array(per_step * (1 if expand else steps), self.scale)
        prev = deps
        for step in range(steps if expand else 1):
            cid = f"{base}.k{step}" if expand else base
            flows = FlowBlock(cid, self.rows[stage], src, dst, nbytes)
            ident = CoflowIdentity(
                CoflowType.DP, self.job.name, it, mid, lid, collective, step, "", stage
            )
            self.out.append(Coflow(cid, flows, ident, prev))
            prev = (cid,)
        return prev
