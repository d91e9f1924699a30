"""The results of a comparison as typed values: one ``ComparedRun`` per run, one
``PolicyStats`` per policy (each metric's ``Estimate`` over its complete runs, the
speed-ups against the baseline), and the ``Comparison`` holding them; ``tabulate``
builds them from the runs.  Partial runs are kept and named but left out of the
statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from coflowbed.analysis.stats import (
    CONFIDENCE,
    SPEEDUP_METHOD,
    Estimate,
    Speedup,
    estimate,
    speedup,
)
from coflowbed.results.records import RunSummary

BASELINE = "fair"
BASE_METRICS = ("avg_cct_s", "p95_cct_s", "iteration_time_s")
FIDELITY_METRICS = ("fidelity_iter", "fidelity_cct_p50")
SPEEDUP_OF = {"speedup_avg_cct": "avg_cct_s", "speedup_iteration_time": "iteration_time_s"}


@dataclass(frozen=True)
class PlannedRun:
    """One run of a comparison: the policy, its repetition (1-based) and seed."""

    policy: str
    repetition: int
    seed: int

    @property
    def name(self) -> str:
        """``<policy>/r<k>``, also the run's folder under the comparison's."""
        return f"{self.policy}/r{self.repetition}"


@dataclass(frozen=True)
class ComparedRun:
    """What one finished run of a comparison measured (a row of runs.csv)."""

    policy: str
    repetition: int
    seed: int
    run_dir: str
    partial: bool
    coflows: int
    error: str | None
    metrics: Mapping[str, float | None]

    @property
    def name(self) -> str:
        """``<policy>/r<k>``."""
        return f"{self.policy}/r{self.repetition}"

    def to_dict(self) -> dict:
        """The JSON object (metrics flattened beside the identity, as in runs.csv)."""
        head = {
            "policy": self.policy,
            "repetition": self.repetition,
            "seed": self.seed,
            "run_dir": self.run_dir,
            "partial": self.partial,
            "coflows": self.coflows,
            "error": self.error,
        }
        return {**head, **self.metrics}


@dataclass(frozen=True)
class PolicyStats:
    """One policy over its runs: the figures of its complete runs and its speed-ups."""

    policy: str
    runs: int  # done (complete or partial)
    excluded: tuple[str, ...]  # partial runs, left out of the statistics
    coflows: int | None  # finished coflows of its complete runs (fewest)
    metrics: Mapping[str, Estimate]
    speedups: Mapping[str, Speedup]

    @property
    def n(self) -> int:
        """Complete runs (those the statistics use)."""
        return self.runs - len(self.excluded)

    def to_dict(self) -> dict:
        """The JSON object."""
        return {
            "policy": self.policy,
            "runs": self.runs,
            "n": self.n,
            "excluded": list(self.excluded),
            "coflows": self.coflows,
            "metrics": {k: e.to_dict() for k, e in self.metrics.items()},
            "speedups": {k: s.to_dict() for k, s in self.speedups.items()},
        }


@dataclass(frozen=True)
class Comparison:
    """A whole comparison: what was asked, what ran, and the statistics."""

    scenario: str
    source: str
    policies: tuple[str, ...]
    repeat: int
    seeds: tuple[int, ...]
    interrupted: bool
    not_done: tuple[str, ...]
    stats: tuple[PolicyStats, ...]
    runs: tuple[ComparedRun, ...]
    confidence: float = CONFIDENCE
    baseline: str = BASELINE
    speedup_method: str = SPEEDUP_METHOD
    metric_names: tuple[str, ...] = field(default=())

    @property
    def excluded(self) -> tuple[str, ...]:
        """Every partial run, by name."""
        return tuple(r.name for r in self.runs if r.partial)

    @property
    def partial(self) -> bool:
        """Interrupted, a run not done, or a partial run."""
        return self.interrupted or bool(self.not_done) or bool(self.excluded)

    def to_dict(self) -> dict:
        """compare.json (schema in docs/compare.md)."""
        return {
            "scenario": self.scenario,
            "source": self.source,
            "policies": list(self.policies),
            "repeat": self.repeat,
            "seeds": list(self.seeds),
            "confidence": self.confidence,
            "baseline": self.baseline,
            "speedup_method": self.speedup_method,
            "partial": self.partial,
            "interrupted": self.interrupted,
            "excluded": list(self.excluded),
            "not_done": list(self.not_done),
            "metrics": list(self.metric_names),
            "stats": [s.to_dict() for s in self.stats],
            "runs": [r.to_dict() for r in self.runs],
        }


def run_metrics(summary: RunSummary) -> dict[str, float | None]:
    """A run's figures: CCT, iteration time, average CCT per type, fidelity (the model's
    iteration time, the summed CCT ratio per type ``fidelity_sum_<type>``, the lowest
    and highest switch / model bytes of the spine links ``fidelity_links_min/max``),
    and the share of the bytes TCP sent again (emulated runs)."""
    out: dict[str, float | None] = {
        "avg_cct_s": summary.avg_cct_s,
        "p95_cct_s": summary.p95_cct_s,
        "iteration_time_s": summary.iteration_time_s,
    }
    for ctype, st in sorted(summary.cct_by_type.items()):
        out[f"avg_cct_{ctype}_s"] = st.avg_s
    block = summary.fidelity or {}
    out["fidelity_iter"] = block.get("iteration_ratio")
    out["fidelity_cct_p50"] = block.get("cct_ratio_p50")
    out["sim_iteration_time_s"] = block.get("sim_iteration_time_s")
    for ctype, ratio in sorted((block.get("cct_sum_ratio_by_type") or {}).items()):
        out[f"fidelity_sum_{ctype}"] = ratio
    if block.get("spine_link_ratio"):
        out["fidelity_links_min"], out["fidelity_links_max"] = block["spine_link_ratio"]
    out["retrans_share"] = (summary.retransmitted or {}).get("share")
    return {**out, **job_metrics(summary)}


def job_metrics(summary: RunSummary) -> dict[str, float | None]:
    """A multi-job run's per-job figures: iteration time and its emulated / simulated
    ratio (``job_<name>_iteration_time_s``, ``job_<name>_fidelity_iter``)."""
    ratios = (summary.fidelity or {}).get("job_iteration_ratio") or {}
    out: dict[str, float | None] = {}
    for job, block in sorted((summary.jobs or {}).items()):
        out[f"job_{job}_iteration_time_s"] = block["iteration_time_s"]
        if job in ratios:
            out[f"job_{job}_fidelity_iter"] = ratios[job]
    return out


def run_result(planned: PlannedRun, run_dir: str, summary: RunSummary) -> ComparedRun:
    """The ComparedRun of a planned run from its summary."""
    return ComparedRun(
        planned.policy,
        planned.repetition,
        planned.seed,
        run_dir,
        summary.partial,
        summary.coflows,
        summary.error,
        run_metrics(summary),
    )


def metric_names(runs: Sequence[ComparedRun]) -> tuple[str, ...]:
    """Every metric the runs have, in table order: CCT and iteration, per type, fidelity."""
    types = sorted({k for r in runs for k in r.metrics} - set(BASE_METRICS + FIDELITY_METRICS))
    return BASE_METRICS + tuple(types) + FIDELITY_METRICS


def policy_stats(
    policy: str, runs: Sequence[ComparedRun], names: Sequence[str], base: Sequence[ComparedRun]
) -> PolicyStats:
    """The statistics of one policy's runs (``base``: the baseline's runs, or empty)."""
    mine = [r for r in runs if r.policy == policy]
    done = [r for r in mine if not r.partial]
    return PolicyStats(
        policy,
        len(mine),
        tuple(r.name for r in mine if r.partial),
        min((r.coflows for r in done), default=None),
        {m: estimate(_values(done, m)) for m in names},
        {k: _speedup(base, done, m) for k, m in SPEEDUP_OF.items()} if base else {},
    )


def _values(runs: Sequence[ComparedRun], metric: str) -> list[float]:
    """The metric's values over ``runs`` (runs without it left out)."""
    return [v for r in runs if (v := r.metrics.get(metric)) is not None]


def _speedup(base: Sequence[ComparedRun], done: Sequence[ComparedRun], metric: str) -> Speedup:
    """Baseline over policy on ``metric``, paired by repetition (both complete)."""
    by_rep = {r.repetition: r.metrics.get(metric) for r in base if not r.partial}
    pairs = [(by_rep[r.repetition], r.metrics.get(metric)) for r in done if r.repetition in by_rep]
    base_vals = [b for b, x in pairs if b is not None and x is not None]
    new_vals = [x for b, x in pairs if b is not None and x is not None]
    return speedup(base_vals, new_vals)


def tabulate(
    scen_name: str,
    source: str,
    plan: Sequence[PlannedRun],
    runs: Sequence[ComparedRun],
    interrupted: bool,
) -> Comparison:
    """The Comparison of the runs done out of ``plan``."""
    policies = tuple(dict.fromkeys(p.policy for p in plan))
    names = metric_names(runs)
    base = [r for r in runs if r.policy == BASELINE] if BASELINE in policies else []
    done = {r.name for r in runs}
    return Comparison(
        scen_name,
        source,
        policies,
        max((p.repetition for p in plan), default=0),
        tuple(p.seed for p in plan if p.policy == policies[0]) if policies else (),
        interrupted,
        tuple(p.name for p in plan if p.name not in done),
        tuple(policy_stats(p, runs, names, base) for p in policies),
        tuple(runs),
        metric_names=names,
    )
