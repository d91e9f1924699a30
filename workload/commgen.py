"""Communication coflows of one job: PP send/recv, EP all-to-alls and DP ring
collectives, built at host level with scaled bytes.  The schedule logic that decides
*when* each is issued lives in ``workload.generator``.

Coflow ids (stable, documented in docs/workloads.md):
``i<it>.pp.s<from>-s<to>.h<j>.<F|B><mb>``,
``i<it>.ep.s<stage>g<group>.<F|B><mb>.L<lid>.<d|c>[.p<phase>]``,
``i<it>.dp.s<stage>.L<lid>.<rs|ag|ar>.<dense|expert>[.k<step>]``; flow ids append ``:<n>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from workload import collectives as coll, sizes
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow
from workload.flowblock import FlowBlock
from workload.jobspec import JobSpec
from workload.placement import Placement

PHASE = {"F": "fwd", "B": "bwd"}
Phase = tuple[np.ndarray, np.ndarray, np.ndarray]  # src, dst, bytes of one EP sub-phase


def scaled(nbytes: float, scale: float) -> int:
    """Scaled integer bytes, at least 1."""
    return max(1, round(nbytes * scale))


def scaled_array(nbytes: np.ndarray, scale: float) -> np.ndarray:
    """``scaled`` of every entry (round half to even, as Python's round), as int64."""
    return np.maximum(1, np.rint(nbytes * scale)).astype(np.int64)


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

    def __init__(self, job: JobSpec, placement: Placement, out: list[Coflow]) -> None:
        """Prepare per-job constants (message sizes, EP groups, DP rings)."""
        self.job, self.pl, self.out = job, placement, out
        m, p = job.model, job.parallelism
        self.k, self.scale = placement.ranks_per_host, job.byte_scale
        self.pp_bytes = (
            self.k
            * p.tp
            * sizes.pp_message_bytes(m.micro_batch, m.seq_len, m.hidden, p.tp, p.sequence_parallel)
        )
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
        flow = Flow(
            f"{cid}:0",
            self.pl.host(src % pp, j),
            self.pl.host(dst % pp, j),
            scaled(self.pp_bytes, self.scale),
        )
        self.out.append(Coflow(cid, (flow,), ident, tuple(deps)))
        return cid

    # -- EP ---------------------------------------------------------------
    def ep_groups(self, stage: int) -> list[list[int]]:
        """Host indices (within the stage) of each EP group that spans hosts."""
        g = self.hosts_per_group
        return [list(range(q * g, (q + 1) * g)) for q in range(self.job.hosts_per_stage // g)]

    def _ep_matrix(self, it: int, lid: int, mb: int, transpose: bool) -> list[Phase]:
        """Scaled host-level dispatch (or combine) matrix of one EP group and its
        phases (src, dst, bytes arrays of host indices in the group): the whole matrix,
        or Hermod's matchings when ``ep_matching`` is on."""
        job = self.job
        rng = np.random.default_rng([job.seed, it, lid, mb])
        pop = coll.gate_popularity(self.experts, job.ep_skew, rng)
        ranks = coll.a2a_rank_matrix(self.ep_bytes, job.parallelism.ep, pop)
        hosts = coll.scale_bytes(job.parallelism.tp * coll.host_matrix(ranks, self.k), self.scale)
        if transpose:
            hosts = np.ascontiguousarray(hosts.T)
        if job.collectives.ep_matching:
            return [_phase_arrays(ph) for ph in coll.decompose_matchings(hosts)]
        a, b = np.nonzero(hosts)
        return [(a, b, hosts[a, b])]

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
        phases = self._matrix(it, lid, mb, which == 1)
        base = f"i{it}.ep.s{stage}g{group}.{kind}{mb}.L{lid}.{'dc'[which]}"
        first = group * self.hosts_per_group
        row = self.pl.stage_hosts[stage]
        prev = tuple(deps)
        for step, phase in enumerate(phases):
            cid = base if len(phases) == 1 else f"{base}.p{step}"
            a, b, nb = phase
            flows = FlowBlock(cid, row, first + a, first + b, nb)
            ident = CoflowIdentity(
                CoflowType.EP, self.job.name, it, mb, lid, "all_to_all", step, PHASE[kind], stage
            )
            self.out.append(Coflow(cid, flows, ident, prev))
            prev = (cid,)
        return prev[0]

    # -- DP ---------------------------------------------------------------
    def dp_parts(self, lid: int) -> list[tuple[str, float, Iterable[list[int]], int]]:
        """Buckets of layer ``lid``: (part, per-rank params, rings, ranks per ring)."""
        p = self.job.parallelism
        lp = sizes.rank_layer_params(self.job, lid)
        parts: list[tuple[str, float, Iterable[list[int]], int]] = [
            ("dense", lp.dense, coll.dense_dp_rings(p.dp, self.k), p.dp)
        ]
        if lp.expert > 0 and p.dp // p.ep > 1:
            parts.append(
                ("expert", lp.expert, coll.expert_dp_rings(p.dp, p.ep, self.k), p.dp // p.ep)
            )
        return parts

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
        for part, params, rings, n in self.dp_parts(lid):
            edges = coll.ring_edge_weights(rings)
            if not edges:
                continue
            prev = tuple(deps)
            for collective, short, width in plan:
                base = f"i{it}.dp.s{stage}.L{lid}.{short}.{part}"
                prev = self._ring(
                    base, collective, stage, it, lid, mid, edges, width * params, n, prev
                )
            done[part] = prev[0]
        return done

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
        per_step = weight * self.job.parallelism.tp * size / n
        nbytes = scaled_array(per_step * (1 if expand else steps), self.scale)
        row = self.pl.stage_hosts[stage]
        prev = deps
        for step in range(steps if expand else 1):
            cid = f"{base}.k{step}" if expand else base
            flows = FlowBlock(cid, row, src, dst, nbytes)
            ident = CoflowIdentity(
                CoflowType.DP, self.job.name, it, mid, lid, collective, step, "", stage
            )
            self.out.append(Coflow(cid, flows, ident, prev))
            prev = (cid,)
        return prev
