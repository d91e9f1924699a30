"""The inter-job layer: several jobs on one fabric, each ranked inside by the scenario's
policy (Hermod, the LLM baselines, any registered one), and the fabric's K levels
shared between the jobs by an inter-job rule:

- ``fair`` (default): every job's ranks are compressed onto all K levels on their own,
  so level i holds level i of every job and the jobs share each level max-min fairly
  (an equal share of every level; no job is preferred).
- ``priority``: strict job priority by the scenario's ``priority`` key per job (smaller
  is more urgent, as levels): the K levels are split into one contiguous block per
  priority class, more urgent classes on more urgent levels.
- ``crux``: Crux's classes (``controller.policies.crux``): jobs with a higher GPU
  intensity get more urgent blocks, the job order compressed to at most K classes.

Blocks: c classes share K levels as K // c each, the remainder going to the most urgent
classes first; a job's own ranks are compressed (the inner policy's scheme) into its
block.  The ranks returned are the final levels, ``(level,)``: ``compress`` keeps their
order in both backends, so the emulator's controller and the simulator run this same
object and get the same levels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from controller.compress import compress
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.crux import compress_jobs, contending_pairs

INTER_JOB_MODES = ("fair", "priority", "crux")
DEFAULT_MODE = "fair"


@dataclass(frozen=True)
class JobClass:
    """What the inter-job layer knows of one job."""

    name: str
    priority: int = 0  # inter_job: priority; smaller is more urgent
    intensity: float = 1.0  # Crux's GPU intensity (workload.multijob.gpu_intensity)
    leaves: tuple[int, ...] = ()  # leaf switches the job's hosts hang off (contention)

    def to_wire(self) -> dict:
        """JSON form (an infinite intensity as null)."""
        finite = math.isfinite(self.intensity)
        return {
            "name": self.name,
            "priority": self.priority,
            "intensity": self.intensity if finite else None,
            "leaves": list(self.leaves),
        }

    @classmethod
    def from_wire(cls, d: Any, where: str) -> JobClass:
        """Parse the JSON form; ValueError naming ``where``."""
        if not isinstance(d, dict) or set(d) != {"name", "priority", "intensity", "leaves"}:
            raise ValueError(f"{where}: must be an object with name, priority, intensity, leaves")
        intensity = math.inf if d["intensity"] is None else float(d["intensity"])
        return cls(str(d["name"]), int(d["priority"]), intensity, tuple(map(int, d["leaves"])))


@dataclass(frozen=True)
class InterJobSpec:
    """The scenario's inter-job rule and its jobs (crosses to the controller)."""

    mode: str
    jobs: tuple[JobClass, ...]

    def to_wire(self) -> dict:
        """JSON form."""
        return {"mode": self.mode, "jobs": [j.to_wire() for j in self.jobs]}

    @classmethod
    def from_wire(cls, d: Any, where: str = "inter_job") -> InterJobSpec:
        """Parse the JSON form; ValueError naming ``where``."""
        if not isinstance(d, dict) or set(d) != {"mode", "jobs"}:
            raise ValueError(f"{where}: must be an object with mode and jobs")
        if d["mode"] not in INTER_JOB_MODES or not isinstance(d["jobs"], list):
            raise ValueError(f"{where}.mode: must be one of {', '.join(INTER_JOB_MODES)}")
        jobs = tuple(JobClass.from_wire(j, f"{where}.jobs[{i}]") for i, j in enumerate(d["jobs"]))
        return cls(d["mode"], jobs)

    def classes(self, levels: int) -> dict[str, int]:
        """Class per job (0 = most urgent) under this rule with ``levels`` levels."""
        if self.mode == "fair":
            return {j.name: 0 for j in self.jobs}
        if self.mode == "priority":
            distinct = sorted({j.priority for j in self.jobs})
            return {j.name: min(distinct.index(j.priority), levels - 1) for j in self.jobs}
        intensity = {j.name: j.intensity for j in self.jobs}
        contend = contending_pairs({j.name: [str(x) for x in j.leaves] for j in self.jobs})
        return compress_jobs(intensity, contend, levels)


def level_blocks(classes: int, levels: int) -> list[tuple[int, int]]:
    """(first level, number of levels) of each class, most urgent first: K // c each,
    the remainder to the most urgent classes."""
    size, extra = divmod(levels, classes)
    out, base = [], 0
    for c in range(classes):
        n = size + (1 if c < extra else 0)
        out.append((base, n))
        base += n
    return out


class InterJobPolicy(Policy):
    """``inner`` ranks inside each job; ``spec`` shares the levels between jobs (module
    docstring).  Coflows of a job ``spec`` does not name are ranked as a job of the
    least urgent class."""

    compression = "top"  # the ranks are levels already: any scheme keeps their order
    dag_compression = None

    def __init__(self, inner: Policy, spec: InterJobSpec) -> None:
        """Wrap ``inner``; ValueError for a policy whose ranks are levels already."""
        super().__init__()
        if inner.levels_given:
            raise ValueError(f"policy {inner.name!r} gives levels itself; no inter_job layer")
        self.inner, self.spec = inner, spec
        self.name = f"{inner.name}+{spec.mode}"
        self.clairvoyant = inner.clairvoyant
        self.ranks_by_identity = inner.ranks_by_identity
        self.byte_thresholds = inner.byte_thresholds
        self.reads_bytes_sent = inner.reads_bytes_sent
        self.rates_are_limits = inner.rates_are_limits
        self.hold_rates = inner.hold_rates
        self._scheme = (inner.dag_compression if inner.ranks_by_identity else None) or (
            inner.compression
        )

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Inner decisions per job, their ranks compressed into the job's level block."""
        classes = self.spec.classes(fabric.levels)
        blocks = level_blocks(max(classes.values(), default=0) + 1, fabric.levels)
        out: dict[str, Decision] = {}
        for job, mine in by_job(states).items():
            base, size = blocks[classes.get(job, len(blocks) - 1)]
            out.update(self._job_decisions(mine, fabric, now, base, size))
        return out

    def _job_decisions(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float, base: int, size: int
    ) -> dict[str, Decision]:
        """One job's decisions at levels ``base .. base+size-1``."""
        got = self.inner.decide(states, replace(fabric, levels=size), now)
        levels = compress({cid: d.rank for cid, d in got.items()}, size, self._scheme)
        return {cid: Decision((base + levels[cid],), d.flow_rates_bps) for cid, d in got.items()}


def by_job(states: Sequence[CoflowState]) -> Mapping[str, list[CoflowState]]:
    """States grouped by their coflow's job, in arrival order within each job."""
    out: dict[str, list[CoflowState]] = {}
    for s in states:
        out.setdefault(s.coflow.identity.job, []).append(s)
    return out
