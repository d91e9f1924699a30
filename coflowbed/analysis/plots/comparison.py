"""Plots of a comparison folder: iteration time per policy with its confidence interval
(compare_iteration.png) and the CCT CDF per coflow type, one line per policy over all its
complete runs pooled (compare_cct_cdf.png)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from coflowbed.analysis.comparison import Comparison
from coflowbed.analysis.plots.figure import plt, save_figure
from coflowbed.results.files import read_coflows_csv

ITERATION_PNG = "compare_iteration.png"
CCT_CDF_PNG = "compare_cct_cdf.png"
JOBS_PNG = "compare_jobs.png"
JOB_METRIC = "job_{}_iteration_time_s"  # comparison.job_metrics


def iteration_ci(c: Comparison, out: Path) -> Path:
    """Mean iteration time per policy, error bars = the CI, one dot per complete run."""
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(c.stats) + 2), 3.8))
    for i, ps in enumerate(c.stats):
        e = ps.metrics["iteration_time_s"]
        if e.mean is None:
            continue
        err = None
        if e.ci_low is not None and e.ci_high is not None:
            err = [[e.mean - e.ci_low], [e.ci_high - e.mean]]
        ax.bar(i, e.mean, color="tab:blue", alpha=0.6, yerr=err, capsize=6)
        dots = _complete_values(c, ps.policy, "iteration_time_s")
        ax.plot([i] * len(dots), dots, "k.", ms=5)
    ax.set_xticks(range(len(c.stats)), [f"{ps.policy}\nn={ps.n}" for ps in c.stats])
    ax.set_ylabel("iteration time (s)")
    ax.set_title(f"{c.scenario}: iteration time, {c.confidence:.0%} CI (dots: runs)")
    ax.grid(axis="y", alpha=0.3)
    return save_figure(fig, out)


def _complete_values(c: Comparison, policy: str, metric: str) -> list[float]:
    """The metric over the policy's complete runs, in order."""
    vals = [r.metrics.get(metric) for r in c.runs if r.policy == policy and not r.partial]
    return [v for v in vals if v is not None]


def pooled_ccts(c: Comparison) -> dict[str, dict[str, list[float]]]:
    """{coflow type: {policy: sorted CCTs of every complete run of the policy}}."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in c.runs:
        path = Path(r.run_dir) / "coflows.csv"
        if r.partial or not path.is_file():
            continue
        for row in read_coflows_csv(path):
            if row["cct_s"] is not None:
                out[row["ctype"]][r.policy].append(row["cct_s"])
    return {t: {p: sorted(v) for p, v in by.items()} for t, by in sorted(out.items())}


def cct_cdf_by_type(c: Comparison, out: Path) -> Path:
    """One panel per coflow type, one CDF line per policy (its complete runs pooled)."""
    data = pooled_ccts(c)
    fig, axes = plt.subplots(1, max(1, len(data)), figsize=(4.2 * max(1, len(data)), 3.6))
    axes = axes if len(data) > 1 else [axes]
    for ax, (ctype, by_policy) in zip(axes, data.items()):
        for policy in c.policies:
            ccts = by_policy.get(policy, [])
            if ccts:
                ys = [(i + 1) / len(ccts) for i in range(len(ccts))]
                ax.step(ccts, ys, where="post", label=f"{policy} ({len(ccts)})")
        ax.set_title(f"{ctype} coflows")
        ax.set_xlabel("CCT (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("fraction of coflows")
    fig.suptitle(f"{c.scenario}: CCT CDF per coflow type (complete runs pooled)")
    return save_figure(fig, out)


def compared_jobs(c: Comparison) -> list[str]:
    """Jobs of a multi-job comparison (their per-job metrics), [] for one job."""
    head, tail = JOB_METRIC.split("{}")
    return sorted(
        m[len(head) : -len(tail)] for m in c.metric_names if m.startswith(head) and m.endswith(tail)
    )


def job_iterations(c: Comparison, jobs: list[str], out: Path) -> Path:
    """Mean iteration time of every job under every policy: one bar group per policy."""
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(c.stats) + 2), 3.8))
    width = 0.8 / len(jobs)
    for k, job in enumerate(jobs):
        means = [ps.metrics[JOB_METRIC.format(job)].mean for ps in c.stats]
        xs = [i + (k - (len(jobs) - 1) / 2) * width for i in range(len(c.stats))]
        ax.bar(xs, [m or 0.0 for m in means], width, label=f"job {job}")
    ax.set_xticks(range(len(c.stats)), [f"{ps.policy}\nn={ps.n}" for ps in c.stats])
    ax.set_ylabel("iteration time (s)")
    ax.set_title(f"{c.scenario}: iteration time per job")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out)


def plot_comparison(c: Comparison, out_dir: Path) -> list[Path]:
    """The comparison plots into ``out_dir`` (per job too when there are several)."""
    out = [iteration_ci(c, out_dir / ITERATION_PNG), cct_cdf_by_type(c, out_dir / CCT_CDF_PNG)]
    jobs = compared_jobs(c)
    if jobs:
        out.append(job_iterations(c, jobs, out_dir / JOBS_PNG))
    return out


def compare_bars(table: list[dict], out: Path, title: str) -> Path:
    """Average and P95 CCT and iteration time per policy, side by side."""
    metrics = [
        ("avg_cct_s", "avg CCT"),
        ("p95_cct_s", "P95 CCT"),
        ("iteration_time_s", "iteration"),
    ]
    metrics = [(k, lbl) for k, lbl in metrics if any(row.get(k) is not None for row in table)]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.5), squeeze=False)
    names = [row["policy"] for row in table]
    for ax, (key, label) in zip(axes[0], metrics):
        ax.bar(names, [row.get(key) or 0 for row in table], color="tab:blue")
        ax.set_title(f"{label} (s)")
        ax.tick_params(axis="x", rotation=45)
    fig.suptitle(title)
    return save_figure(fig, out)
