"""Job spec -> coflow DAG: compute nodes per host in pipeline-schedule order, with the
EP all-to-alls between per-layer compute pieces, PP send/recv between stages and
ZeRO-2 / all-reduce DP buckets per layer, for ``iterations`` iterations.

Dependencies (docs/workloads.md has the picture):
- every compute depends on the previous compute of its host (1F1B order, across
  iterations too);
- a forward of (virtual) stage i>0 waits for the PP coflow from stage i−1 (same
  microbatch and host replica), a backward of stage i<p−1 for the one from stage i+1;
  with interleaved 1F1B, virtual stage c runs on device c % pp;
- a MoE layer is split into an attention+gate piece (``a``) and an experts piece (``b``)
  with the EP all-to-all of the whole EP group between them;
- a layer's DP bucket starts after the layer's last backward on every host of the stage;
  the next iteration's first forward of that layer waits for its all-gather;
- with ``iteration_barrier``, the first compute of every host in iteration i+1 also
  waits for the last coflow of every DP bucket of iteration i (all stages).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from workload.commgen import CommBuilder, pp_id
from workload.dag import Coflow, Compute, Dag
from workload.jobspec import JobSpec
from workload.pipeline import stage_ops
from workload.placement import Placement, place
from workload.sizes import layer_times

log = logging.getLogger("workload.generator")
GENERATOR_VERSION = 1
Front = dict[int, list[str]]  # host index -> ids the host's next step depends on


class _Builder:
    """Builds the DAG of one job, stage by stage, all hosts of a stage in lockstep."""

    def __init__(self, job: JobSpec, placement: Placement) -> None:
        """Empty node lists and cross-iteration state."""
        self.job, self.pl = job, placement
        self.computes: list[Compute] = []
        self.coflows: list[Coflow] = []
        self.comm = CommBuilder(job, placement, self.coflows, self.computes)
        self.times = {lid: layer_times(job, lid) for lid in range(job.model.layers)}
        self.bwd = job.compute.bwd_factor
        self.last: dict[tuple[int, int], str] = {}  # (stage, host) -> last compute id
        self.ready: dict[tuple[int, int], dict[str, str]] = {}  # (stage, lid) -> AG ids
        self.dp_done: dict[int, list[str]] = {}  # iteration -> last coflow of each bucket

    def build(self) -> None:
        """All iterations, all stages."""
        for it in range(self.job.iterations):
            for stage in range(self.job.parallelism.pp):
                self._stage(it, stage)

    def _stage(self, it: int, stage: int) -> None:
        """One iteration of one stage: its schedule, then its DP buckets."""
        p = self.job.parallelism
        hosts = range(self.job.hosts_per_stage)
        front: Front = {
            j: [self.last[(stage, j)]] if (stage, j) in self.last else [] for j in hosts
        }
        if self.job.iteration_barrier and it > 0:
            for deps in front.values():
                deps.extend(self.dp_done.get(it - 1, []))
        last_bwd: dict[int, list[str]] = {}
        ops = stage_ops(self.job.schedule, p.pp, self.job.microbatches, stage, p.virtual_stages)
        # all-gathers of the previous iteration, consumed by each layer's first forward
        ready = {lid: self.ready.pop((stage, lid), {}) for lid in self.job.stage_layers(stage)}
        for kind, mb, vs in ops:
            if kind == "F":
                self._forward(it, stage, vs, mb, front, ready)
            else:
                self._backward(it, stage, vs, mb, front, last_bwd)
        for j in hosts:
            self.last[(stage, j)] = front[j][0]
        for lid in self.job.stage_layers(stage):
            done = self.comm.dp(it, stage, lid, last_bwd[lid], self.job.microbatches - 1)
            if done:
                self.ready[(stage, lid)] = done
                self.dp_done.setdefault(it, []).extend(done.values())

    def _forward(
        self, it: int, stage: int, vs: int, mb: int, front: Front, ready: dict[int, dict[str, str]]
    ) -> None:
        """Forward of ``mb`` through virtual stage ``vs``'s layers, then the PP send."""
        if vs > 0:
            for j, deps in front.items():
                deps.append(pp_id(it, "F", vs - 1, vs, j, mb))
        for lid in self.job.chunk_layers(vs):
            t, got = self.times[lid], ready.pop(lid, {})
            if self.job.model.is_moe(lid):
                self._compute(it, stage, "F", mb, lid, "a", t.attn_s, front, got.get("dense"))
                self._ep(it, stage, "F", mb, lid, 0, front)
                self._compute(it, stage, "F", mb, lid, "b", t.mlp_s, front, got.get("expert"))
                self._ep(it, stage, "F", mb, lid, 1, front)
            else:
                self._compute(it, stage, "F", mb, lid, "", t.total_s, front, got.get("dense"))
        if vs < self.job.total_vstages - 1:
            for j, deps in front.items():
                self.comm.pp(it, "F", vs, vs + 1, j, mb, deps)

    def _backward(
        self, it: int, stage: int, vs: int, mb: int, front: Front, last_bwd: dict[int, list[str]]
    ) -> None:
        """Backward of ``mb`` through ``vs``'s layers in reverse, then the PP send."""
        if vs < self.job.total_vstages - 1:
            for j, deps in front.items():
                deps.append(pp_id(it, "B", vs + 1, vs, j, mb))
        for lid in reversed(self.job.chunk_layers(vs)):
            t = self.times[lid]
            if self.job.model.is_moe(lid):
                self._ep(it, stage, "B", mb, lid, 0, front)
                self._compute(it, stage, "B", mb, lid, "b", self.bwd * t.mlp_s, front)
                self._ep(it, stage, "B", mb, lid, 1, front)
                self._compute(it, stage, "B", mb, lid, "a", self.bwd * t.attn_s, front)
            else:
                self._compute(it, stage, "B", mb, lid, "", self.bwd * t.total_s, front)
            last_bwd[lid] = [deps[0] for deps in front.values()]
        if vs > 0:
            for j, deps in front.items():
                self.comm.pp(it, "B", vs, vs - 1, j, mb, deps)

    def _compute(
        self,
        it: int,
        stage: int,
        kind: str,
        mb: int,
        lid: int,
        part: str,
        seconds: float,
        front: Front,
        extra: str | None = None,
    ) -> None:
        """One compute piece on every host of the stage; it becomes each host's front."""
        label = f"{'fwd' if kind == 'F' else 'bwd'} mb{mb} L{lid}{part} stage{stage}"
        row, tail = self.pl.stage_hosts[stage], f".{kind}{mb}.L{lid}{part}"
        for j, deps in front.items():
            nid = f"i{it}.c.s{stage}h{j}{tail}"
            if extra is not None:
                deps.append(extra)
            self.computes.append(
                Compute(nid, row[j], seconds, tuple(deps), label, it, self.job.name)
            )
            front[j] = [nid]

    def _ep(
        self, it: int, stage: int, kind: str, mb: int, lid: int, which: int, front: Front
    ) -> None:
        """The EP all-to-all of every group that spans hosts, after all its hosts' fronts."""
        if not self.comm.ep_on_fabric:
            return
        for g, members in enumerate(self.comm.ep_groups(stage)):
            deps = [d for j in members for d in front[j]]
            last = self.comm.ep(it, stage, kind, mb, lid, which, g, deps)
            for j in members:
                front[j] = [front[j][0], last]


def generate(job: JobSpec, hosts: Sequence[str] | None, nics: int = 1, slots: int = 1) -> Dag:
    """The coflow DAG of ``job`` placed on ``hosts``: slots of servers with ``nics``
    NICs and ``slots`` slots each (see workload.placement; flows then run between NIC
    endpoints, computes on the slots)."""
    placement = place(job, hosts, nics, slots)
    b = _Builder(job, placement)
    b.build()
    dag = Dag(b.coflows, b.computes, job_meta(job, placement))
    log.info(
        "job %s: %d computes, %d coflows, %d flows",
        job.name,
        len(dag.computes),
        len(dag.coflows),
        sum(len(c.flows) for c in dag.coflows),
    )
    return dag


def job_meta(job: JobSpec, placement: Placement) -> dict:
    """JSON-ready description of the job that every result file repeats."""
    m, p = job.model, job.parallelism
    return {
        "generator": "coflowbed.workload",
        "generator_version": GENERATOR_VERSION,
        "job": job.name,
        "byte_scale": job.byte_scale,
        "source": job.source,
        "model": {
            "layers": m.layers,
            "hidden": m.hidden,
            "seq_len": m.seq_len,
            "micro_batch": m.micro_batch,
            "ffn_hidden": m.ffn_hidden,
            "vocab": m.vocab,
            "moe": None
            if m.moe is None
            else {"experts": m.moe.experts, "top_k": m.moe.top_k, "layers": sorted(m.moe.layers)},
        },
        "parallelism": {
            "tp": p.tp,
            "pp": p.pp,
            "dp": p.dp,
            "ep": p.ep,
            "sequence_parallel": p.sequence_parallel,
            "virtual_stages": p.virtual_stages,
        },
        "microbatches": job.microbatches,
        "iterations": job.iterations,
        "schedule": job.schedule,
        "dp_mode": job.dp_mode,
        "iteration_barrier": job.iteration_barrier,
        "gpus_per_host": job.placement.gpus_per_host,
        "nics_per_server": placement.nics,
        "slots_per_server": placement.slots,
        "stage_hosts": [list(r) for r in placement.stage_hosts],
        "ep_skew": job.ep_skew,
        "seed": job.seed,
        "ring": job.collectives.ring,
        "ep_matching": job.collectives.ep_matching,
        "algorithm": job.collectives.algorithm,
    }
