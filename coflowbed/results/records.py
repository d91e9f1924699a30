"""The records of one run, emulated or simulated, as typed values: a flow, a coflow, a
compute node and an iteration of the DAG, with the run's summary (``RunSummary``, the
content of ``summary.json``) and the statistics it is made of.

Times are seconds since the run's time zero (the first coflow release).  A run that did
not finish every coflow has ``partial: true``, and its unfinished coflows have no
``finish_s``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any

from workload.dag import DEFAULT_JOB, Coflow, Dag


@dataclass
class FlowRecord:
    """Measured (or simulated) timing of one flow."""

    flow_id: str
    coflow_id: str
    src: str
    dst: str
    bytes: int
    start_s: float | None = None  # sender began the flow (took a connection)
    finish_s: float | None = None  # receiver got the last byte
    bytes_received: int = 0
    retrans_bytes: int | None = None  # sender's TCP sent these again (None: not measured)


@dataclass
class CoflowRecord:
    """Timing and identity of one coflow; CCT = finish - arrival (release)."""

    coflow_id: str
    ctype: str
    job: str
    iteration: int
    mid: int
    lid: int
    collective: str
    step: int
    flows: int
    bytes: int
    arrival_s: float | None = None
    start_s: float | None = None
    finish_s: float | None = None
    level: int | None = None
    rank: str = ""

    @property
    def cct_s(self) -> float | None:
        """Coflow completion time, None while unfinished."""
        if self.finish_s is None or self.arrival_s is None:
            return None
        return self.finish_s - self.arrival_s

    @classmethod
    def of(cls, cf: Coflow) -> CoflowRecord:
        """An empty record carrying the coflow's identity."""
        i = cf.identity
        return cls(
            cf.coflow_id,
            cf.ctype.value,
            i.job,
            i.iteration,
            i.mid,
            i.lid,
            i.collective,
            i.step,
            len(cf.flows),
            cf.bytes,
        )


@dataclass(frozen=True)
class ComputeRecord:
    """Timing of one compute node (a host's forward or backward work): ``compute.csv``."""

    node_id: str
    host: str
    label: str
    iteration: int
    duration_s: float  # the DAG's
    start_s: float | None
    finish_s: float | None


def compute_records(
    dag: Dag, started: Mapping[str, float], finished: Mapping[str, float]
) -> list[ComputeRecord]:
    """A ``ComputeRecord`` per compute node of ``dag``, with its start and finish from
    ``started`` / ``finished`` (node id -> run seconds; absent: it did not run)."""
    return [
        ComputeRecord(
            c.node_id,
            c.host,
            c.label,
            c.iteration,
            c.duration_s,
            started.get(c.node_id),
            finished.get(c.node_id),
        )
        for c in dag.computes
    ]


@dataclass
class IterationRecord:
    """One training iteration of one job: from its first node's start to its last
    node's end."""

    iteration: int
    start_s: float
    finish_s: float | None
    job: str = DEFAULT_JOB

    @property
    def time_s(self) -> float | None:
        """Iteration time, None if unfinished."""
        return None if self.finish_s is None else self.finish_s - self.start_s


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, math.ceil(q / 100 * len(ordered)) - 1)
    return ordered[k]


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for no values."""
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class CctStats:
    """count, average, p95 and maximum CCT of the finished coflows of a set."""

    count: int
    avg_s: float | None
    p95_s: float | None
    max_s: float | None


def cct_stats(records: Iterable[CoflowRecord]) -> CctStats:
    """CCT figures of the finished coflows among ``records``."""
    ccts = [r.cct_s for r in records if r.cct_s is not None]
    return CctStats(len(ccts), mean(ccts), percentile(ccts, 95), max(ccts) if ccts else None)


Block = Mapping[str, Any]  # a nested section, written by its own type (named per field)
_ALWAYS = {"policy", "levels", "byte_scale", "fabric", "error"}  # written even when null


@dataclass(frozen=True)
class RunSummary:
    """``summary.json``: what a run (emulated or simulated) measured, and how it ran.
    ``write`` / ``read`` are its only file form; unknown keys are refused."""

    partial: bool
    coflows: int  # finished
    coflows_total: int
    avg_cct_s: float | None
    p95_cct_s: float | None
    max_cct_s: float | None
    cct_by_type: Mapping[str, CctStats]
    iterations: int  # finished
    iteration_time_s: float | None
    iteration_times_s: tuple[float, ...]
    # both backends
    policy: str | None = None
    levels: int | str | None = None  # K, or "exact" (a simulation without levels)
    byte_scale: float | None = None
    fabric: Block | str | None = None  # emulated: the plan's sizes; simulated: its description
    error: str | None = None
    # emulated runs (coflowbed.emulation.runner)
    scenario: str | None = None
    switch: str | None = None
    bringup_s: float | None = None
    wall_s: float | None = None
    connections: Block | None = None  # pooled connections (runner._prepare_iteration)
    calibration: Block | None = None  # coflowbed.emulation.calibrate.Calibration.to_dict
    release: Block | None = None  # coflowbed.emulation.backend.ReleaseTimes.summary
    retransmitted: Block | None = None  # coflowbed.emulation.backend.retransmitted: TCP's repairs
    level_change_s: Block | None = None  # the controller's write times (JobReport)
    level_moves: Block | None = None  # active coflows moved up / down a level (JobReport)
    fidelity: Block | None = None  # coflowbed.analysis.fidelity: a Fidelity/-Skipped/-Error block
    faults: Sequence[Block] | None = None  # experiment.faults.FaultRecord per scenario fault
    lost: Block | None = None  # agents lost mid-run and their flows (emulation.name_losses)
    sampling: Block | None = None  # coflowbed.emulation.sampler.SamplingInfo (samples/)
    jobs: Block | None = None  # multi-job runs: per job, ``job_summary`` (docs/results.md)
    # simulated runs (coflowbed.sim.result)
    mode: str | None = None
    simulated: bool | None = None  # a compare --sim run
    source: str | None = None
    flows: int | None = None
    sim_events: int | None = None
    sim_policy_calls: int | None = None
    sim_wall_s: float | None = None
    sim_end_s: float | None = None
    sim_finish_tol: float | None = None  # the run's finishing tolerance (Simulator)
    sim_control_delay: Block | None = None  # release_s, rerank_s, paid (coflowbed.sim.control)
    sim_total_wall_s: float | None = None
    model: str | None = None  # simulate --model: None/absent = default, or "coflowsim"
    # packet-level runs (coflowbed.packet): transport, scale, drops, retransmissions
    packet: Block | None = None

    def to_json(self) -> dict:
        """The JSON object (optional fields only when set, but for ``_ALWAYS``)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.default is MISSING or v is not None or f.name in _ALWAYS:
                out[f.name] = v
        out["cct_by_type"] = {t: asdict(st) for t, st in self.cct_by_type.items()}
        out["iteration_times_s"] = list(self.iteration_times_s)
        return out

    @classmethod
    def from_json(cls, data: Any, source: str = "summary.json") -> RunSummary:
        """Parse the JSON object; ValueError naming ``source`` and the key."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: not a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: {unknown[0]}: unknown key")
        try:
            by_type = {t: CctStats(**st) for t, st in data["cct_by_type"].items()}
            return cls(
                **{
                    **data,
                    "cct_by_type": by_type,
                    "iteration_times_s": tuple(data["iteration_times_s"]),
                }
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{source}: not a run summary: {e}") from None

    def write(self, out_dir: Path) -> None:
        """(Re)write ``out_dir/summary.json``."""
        text = json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"
        (Path(out_dir) / "summary.json").write_text(text)

    @classmethod
    def read(cls, run_dir: Path) -> RunSummary:
        """``run_dir/summary.json``; ValueError naming the file when it is not one."""
        path = Path(run_dir) / "summary.json"
        try:
            return cls.from_json(json.loads(path.read_text()), str(path))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: cannot read: {e}") from None


def summarize(
    coflows: Sequence[CoflowRecord],
    iterations: Sequence[IterationRecord],
    partial: bool,
    extra: Mapping[str, Any] | None = None,
) -> RunSummary:
    """The run summary: overall and per-type CCT, iteration time, plus ``extra`` facts
    (fields of RunSummary: TypeError on anything else)."""
    overall = cct_stats(coflows)
    by_type = {
        t: cct_stats(r for r in coflows if r.ctype == t) for t in sorted({r.ctype for r in coflows})
    }
    its = [it.time_s for it in iterations if it.time_s is not None]
    jobs = sorted({r.job for r in coflows} | {it.job for it in iterations})
    per_job = {j: job_summary(j, coflows, iterations) for j in jobs} if len(jobs) > 1 else None
    extra = {"jobs": per_job, **(extra or {})}
    return RunSummary(
        partial,
        overall.count,
        len(coflows),
        overall.avg_s,
        overall.p95_s,
        overall.max_s,
        by_type,
        len(its),
        mean(its),
        tuple(its),
        **extra,
    )


def job_summary(
    job: str, coflows: Sequence[CoflowRecord], iterations: Sequence[IterationRecord]
) -> dict:
    """JSON block of one job of a multi-job run: its iteration times (mean and each),
    coflow count, average CCT and CCT figures per coflow type."""
    mine = [r for r in coflows if r.job == job]
    its = [it.time_s for it in iterations if it.job == job and it.time_s is not None]
    return {
        "iteration_time_s": mean(its),
        "iteration_times_s": its,
        "coflows": len(mine),
        "avg_cct_s": cct_stats(mine).avg_s,
        "cct_by_type": {
            t: asdict(cct_stats(r for r in mine if r.ctype == t))
            for t in sorted({r.ctype for r in mine})
        },
    }


def iteration_records(
    spans: Mapping[tuple[str, int], tuple[float, float | None]],
) -> list[IterationRecord]:
    """IterationRecords from {(job, iteration): (start_s, finish_s or None)}."""
    return [IterationRecord(i, s, f, job) for (job, i), (s, f) in sorted(spans.items())]
