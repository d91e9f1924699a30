"""An imported workload (workload.imports.model) as a coflow DAG on given hosts.

Per iteration: the ``ga`` microbatches' forwards through the layers (GPipe order:
all forwards, then all backwards), stage after stage with the PP send/recv between
stages; then the backwards in reverse layer order: input-gradient compute and
collective, weight-gradient compute.  Forward and input-gradient collectives block
the hosts of the stage (the next compute waits); the weight-gradient collective runs
after the last microbatch's weight-gradient compute without blocking, followed by the
update delay, and the next iteration's forward of that layer waits for it.  The
parallel groups' collectives of one pass form one coflow.  See docs/workloads.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workload import hostcoll
from workload.commgen import pp_id
from workload.dag import Coflow, CoflowIdentity, CoflowType, Compute, Dag, Flow
from workload.imports.model import ImportedWorkload, Layer, Pass, groups
from workload.nccl import DEFAULT_LINK_GBPS
from workload.schema import SpecError
from workload.sizes import scaled

CTYPE = {"tp": CoflowType.TP, "ep": CoflowType.EP, "pp": CoflowType.PP}
PHASE = {"fwd": "fwd", "ig": "bwd", "wg": ""}


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """How to place and scale an import: ranks packed ``gpus_per_host`` per host in
    rank order, bytes x ``byte_scale``, all-reduces by ``algorithm`` (ring, tree,
    auto for links of ``link_gbps``), ``iterations`` passes over the layers."""

    gpus_per_host: int = 1
    byte_scale: float = 1.0
    algorithm: str = "ring"
    link_gbps: float = DEFAULT_LINK_GBPS
    iterations: int = 1


class _Builder:
    """Builds the DAG of one imported workload, host fronts as in workload.generator."""

    def __init__(self, wl: ImportedWorkload, hosts: Sequence[str], opts: ImportOptions) -> None:
        """Check the placement fits and prepare per-host state."""
        self.wl, self.opts, self.g = wl, opts, opts.gpus_per_host
        lay = wl.layout
        if (lay.tp * lay.dp) % self.g:
            raise SpecError(
                wl.source,
                None,
                f"{lay.tp * lay.dp} ranks per stage do not fill "
                f"hosts of {self.g} GPUs (gpus_per_host must divide tp x dp)",
            )
        need = lay.ranks // self.g
        if len(hosts) < need:
            raise SpecError(
                wl.source,
                None,
                f"{lay.ranks} ranks need {need} hosts at {self.g} GPUs per host, got {len(hosts)}",
            )
        self.hosts = list(hosts[:need])
        self.job = Path(wl.source).stem
        self.per_stage = need // lay.pp
        self.fronts: dict[int, list[str]] = {h: [] for h in range(need)}
        self.ready: dict[tuple[int, int], list[str]] = {}
        self.computes: list[Compute] = []
        self.coflows: list[Coflow] = []

    def stage_hosts(self, stage: int) -> range:
        """Host indices of pipeline ``stage``."""
        return range(stage * self.per_stage, (stage + 1) * self.per_stage)

    def build(self) -> None:
        """All iterations: forwards, backwards, per stage and microbatch."""
        pp = self.wl.layout.pp
        for it in range(self.opts.iterations):
            for mb in range(self.wl.ga):
                for s in range(pp):
                    self._forward(it, s, mb)
            for mb in range(self.wl.ga):
                for s in reversed(range(pp)):
                    self._backward(it, s, mb)

    def _forward(self, it: int, s: int, mb: int) -> None:
        """Forward of microbatch ``mb`` on stage ``s``, then the PP send to s+1."""
        for lid, layer in enumerate(self.wl.layers):
            extra = (
                {h: self.ready.pop((lid, h), []) for h in self.stage_hosts(s)} if mb == 0 else {}
            )
            self._compute(it, s, mb, lid, "fwd", layer.fwd.compute_s, extra)
            self._blocking(it, s, mb, lid, "fwd", layer.fwd)
        if s < self.wl.layout.pp - 1:
            self._pp(it, "F", s, s + 1, mb)

    def _backward(self, it: int, s: int, mb: int) -> None:
        """Backward of ``mb`` on stage ``s`` in reverse layer order, then PP to s-1."""
        last = mb == self.wl.ga - 1
        for lid in reversed(range(len(self.wl.layers))):
            layer = self.wl.layers[lid]
            self._compute(it, s, mb, lid, "ig", layer.ig.compute_s)
            self._blocking(it, s, mb, lid, "ig", layer.ig)
            self._compute(it, s, mb, lid, "wg", layer.wg.compute_s)
            if last:
                self._weight_grad(it, s, lid, layer)
        if s > 0:
            self._pp(it, "B", s, s - 1, mb)

    def _compute(
        self, it: int, s: int, mb: int, lid: int, part: str, sec: float, extra: dict | None = None
    ) -> None:
        """One compute on every host of the stage; it becomes the host's front."""
        for j, h in enumerate(self.stage_hosts(s)):
            nid = f"i{it}.c.s{s}h{j}.m{mb}.L{lid}.{part}"
            deps = (*self.fronts[h], *(extra or {}).get(h, ()))
            label = f"{part} mb{mb} L{lid} {self.wl.layers[lid].name} stage{s}"
            self.computes.append(Compute(nid, self.hosts[h], sec, deps, label, it, self.job))
            self.fronts[h] = [nid]

    def _collective(
        self, it: int, s: int, mb: int, lid: int, part: str, p: Pass, base: str
    ) -> list[Coflow]:
        """The pass's collective over all its groups of stage ``s`` as chained coflows
        after the fronts of the stage's hosts ([] when nothing crosses the fabric)."""
        if not p.collective or p.size == 0:
            return []
        phases = hostcoll.merge(
            [self._phases(p, ranks) for ranks in groups(self.wl.layout, p.group, s)]
        )
        if not phases:
            return []
        ident = CoflowIdentity(
            CTYPE.get(p.group, CoflowType.DP),
            self.job,
            it,
            mb,
            lid,
            p.collective,
            0,
            PHASE[part],
            s,
        )
        deps = [d for h in self.stage_hosts(s) for d in self.fronts[h]]
        made = hostcoll.chain_coflows(base, phases, self.hosts, ident, deps, self.opts.byte_scale)
        self.coflows.extend(made)
        return made

    def _phases(self, p: Pass, ranks: list[int]) -> list[hostcoll.Phase]:
        """Host-level phases of one group's collective."""
        on = [r // self.g for r in ranks]
        if p.collective == "all_reduce":
            return hostcoll.all_reduce_phases(self.opts.algorithm, on, p.size, self.opts.link_gbps)
        if p.collective == "all_to_all":
            return [hostcoll.a2a_phase(on, p.size)]
        return [hostcoll.ring_phase(p.collective, on, p.size)]

    def _blocking(self, it: int, s: int, mb: int, lid: int, part: str, p: Pass) -> None:
        """A forward / input-gradient collective: the stage's hosts wait for it."""
        made = self._collective(it, s, mb, lid, part, p, f"i{it}.s{s}.m{mb}.L{lid}.{part}")
        for h in self.stage_hosts(s) if made else ():
            self.fronts[h] = [*self.fronts[h], made[-1].coflow_id]

    def _weight_grad(self, it: int, s: int, lid: int, layer: Layer) -> None:
        """The weight-gradient collective (not blocking) and the update delay after it,
        which the next iteration's forward of the layer waits for."""
        made = self._collective(it, s, self.wl.ga - 1, lid, "wg", layer.wg, f"i{it}.s{s}.L{lid}.wg")
        after = [made[-1].coflow_id] if made else []
        for j, h in enumerate(self.stage_hosts(s)):
            nid = f"i{it}.c.s{s}h{j}.L{lid}.update"
            deps = (*self.fronts[h], *after)
            self.computes.append(
                Compute(nid, self.hosts[h], layer.update_s, deps, f"update L{lid}", it, self.job)
            )
            self.ready[(lid, h)] = [nid]

    def _pp(self, it: int, kind: str, src: int, dst: int, mb: int) -> None:
        """PP send/recv between the j-th hosts of two stages (g ranks x pp_bytes)."""
        nbytes = scaled(self.g * self.wl.pp_bytes, self.opts.byte_scale)
        pairs = zip(self.stage_hosts(src), self.stage_hosts(dst), strict=True)
        for j, (a, b) in enumerate(pairs):
            cid = pp_id(it, kind, src, dst, j, mb)
            ident = CoflowIdentity(
                CoflowType.PP,
                self.job,
                it,
                mb,
                0,
                "send_recv",
                0,
                "fwd" if kind == "F" else "bwd",
                src,
            )
            flow = Flow(f"{cid}:0", self.hosts[a], self.hosts[b], nbytes)
            self.coflows.append(Coflow(cid, (flow,), ident, tuple(self.fronts[a])))
            self.fronts[b] = [*self.fronts[b], cid]


def to_dag(wl: ImportedWorkload, hosts: Sequence[str], opts: ImportOptions) -> Dag:
    """The coflow DAG of ``wl`` on ``hosts`` (the first tp·dp·pp/gpus_per_host)."""
    b = _Builder(wl, hosts, opts)
    b.build()
    return Dag(b.coflows, b.computes, meta(wl, opts, b.hosts))


def meta(wl: ImportedWorkload, opts: ImportOptions, hosts: list[str]) -> dict:
    """JSON-ready description of the import, repeated in result files."""
    lay = wl.layout
    return {
        "generator": "coflowbed.workload.imports",
        "format": wl.fmt,
        "source": wl.source,
        "policy": wl.policy,
        "byte_scale": opts.byte_scale,
        "parallelism": {"tp": lay.tp, "dp": lay.dp, "pp": lay.pp, "ep": lay.ep},
        "ga": wl.ga,
        "layers": len(wl.layers),
        "iterations": opts.iterations,
        "gpus_per_host": opts.gpus_per_host,
        "algorithm": opts.algorithm,
        "hosts": hosts,
        "ignored": list(wl.ignored),
    }
