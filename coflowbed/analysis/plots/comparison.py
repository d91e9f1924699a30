"""Plots of a comparison folder: iteration time per policy with its confidence interval
and the fluid model's value beside it (compare_iteration.png), the average CCT per coflow
type and policy with its interval (compare_cct_types.png), the CCT CDF per coflow type,
one line per policy over all its complete runs pooled (compare_cct_cdf.png), and the
emulated / simulated ratios per policy (compare_fidelity.png, emulated runs only)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from coflowbed.analysis.comparison import Comparison, PolicyStats
from coflowbed.analysis.plots.figure import plt, save_figure
from coflowbed.analysis.stats import Estimate
from coflowbed.results.files import read_coflows_csv

ITERATION_PNG = "compare_iteration.png"
CCT_CDF_PNG = "compare_cct_cdf.png"
JOBS_PNG = "compare_jobs.png"
CCT_TYPES_PNG = "compare_cct_types.png"
FIDELITY_PNG = "compare_fidelity.png"
MODEL = "sim_iteration_time_s"  # the fluid model's iteration time (emulated runs, checked)
JOB_METRIC = "job_{}_iteration_time_s"  # comparison.job_metrics


def iteration_ci(c: Comparison, out: Path) -> Path:
    """Mean iteration time per policy, error bars = the CI, one dot per complete run; the
    fluid model's mean iteration time as a hatched bar beside it when the runs were
    checked (emulated runs)."""
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(c.stats) + 2), 3.8))
    shift = 0.2 if any(_mean(ps, MODEL) is not None for ps in c.stats) else 0.0
    for i, ps in enumerate(c.stats):
        e = ps.metrics["iteration_time_s"]
        if e.mean is None:
            continue
        ax.bar(
            i - shift,
            e.mean,
            width=0.4 if shift else 0.8,
            color="tab:blue",
            alpha=0.6,
            yerr=_error(e),
            capsize=6,
            label="measured" if i == 0 else None,
        )
        dots = _complete_values(c, ps.policy, "iteration_time_s")
        ax.plot([i - shift] * len(dots), dots, "k.", ms=5)
        model = _mean(ps, MODEL)
        if model is not None:
            ax.bar(
                i + shift,
                model,
                width=0.4,
                color="white",
                edgecolor="tab:orange",
                hatch="//",
                label="model (simulated)" if i == 0 else None,
            )
    ax.set_xticks(range(len(c.stats)), [f"{ps.policy}\nn={ps.n}" for ps in c.stats])
    ax.set_ylabel("iteration time (s)")
    ax.set_title(f"{c.scenario}: iteration time, {c.confidence:.0%} CI (dots: runs)")
    ax.grid(axis="y", alpha=0.3)
    if shift:
        ax.legend(fontsize=8, loc="lower right")
    return save_figure(fig, out)


def _mean(ps: PolicyStats, metric: str) -> float | None:
    """A policy's mean of ``metric`` (None when it has none)."""
    e = ps.metrics.get(metric)
    return None if e is None else e.mean


def _error(e: Estimate) -> list[list[float]] | None:
    """Error bar lengths below and above the mean: the interval (None without one)."""
    if e.mean is None or e.ci_low is None or e.ci_high is None:
        return None
    return [[e.mean - e.ci_low], [e.ci_high - e.mean]]


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


def metric_family(c: Comparison, head: str, tail: str) -> list[str]:
    """The ``X`` of every metric named ``<head>X<tail>`` (``avg_cct_EP_s``: EP)."""
    names = [m for m in c.metric_names if m.startswith(head) and m.endswith(tail)]
    return sorted(m[len(head) : len(m) - len(tail)] for m in names if len(m) > len(head + tail))


def grouped_bars(c: Comparison, metrics: dict[str, str], ax) -> None:
    """One bar group per entry of ``metrics`` (label: metric), a bar per policy with the
    interval as error bars; groups of no value are left empty."""
    width = 0.8 / max(1, len(c.stats))
    for k, ps in enumerate(c.stats):
        xs, ys, lows, highs = [], [], [], []
        for i, metric in enumerate(metrics.values()):
            e = ps.metrics.get(metric)
            if e is None or e.mean is None:
                continue
            err = _error(e) or [[0.0], [0.0]]
            xs.append(i + (k - (len(c.stats) - 1) / 2) * width)
            ys.append(e.mean)
            lows.append(err[0][0])
            highs.append(err[1][0])
        ax.bar(xs, ys, width, yerr=[lows, highs], capsize=3, label=ps.policy)
    ax.set_xticks(range(len(metrics)), list(metrics))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def cct_by_type(c: Comparison, out: Path) -> Path | None:
    """Average CCT per coflow type, a bar per policy with its interval (None when the
    runs recorded no type)."""
    types = metric_family(c, "avg_cct_", "_s")
    if not types:
        return None
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(types) + 2), 3.8))
    grouped_bars(c, {f"{t} coflows": f"avg_cct_{t}_s" for t in types}, ax)
    ax.set_ylabel("average CCT (s)")
    ax.set_title(f"{c.scenario}: average CCT per coflow type, {c.confidence:.0%} CI")
    return save_figure(fig, out)


def fidelity_ratios(c: Comparison) -> dict[str, str]:
    """{label: metric} of the emulated / simulated ratios the runs have a value of."""
    out = {"iteration": "fidelity_iter", "CCT P50": "fidelity_cct_p50"}
    out.update(
        {f"summed CCT {t}": f"fidelity_sum_{t}" for t in metric_family(c, "fidelity_sum_", "")}
    )
    return {k: m for k, m in out.items() if any(_mean(ps, m) is not None for ps in c.stats)}


def fidelity_bars(c: Comparison, out: Path) -> Path | None:
    """Emulated / simulated per policy (iteration, CCT P50, summed CCT per type) with the
    intervals and a line at 1 (None for simulated or unchecked runs: no ratio)."""
    ratios = fidelity_ratios(c)
    if not ratios:
        return None
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(ratios) + 2), 3.8))
    grouped_bars(c, ratios, ax)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("emulated / simulated")
    ax.set_title(f"{c.scenario}: emulated / simulated per policy, {c.confidence:.0%} CI")
    return save_figure(fig, out)


def plot_comparison(c: Comparison, out_dir: Path) -> list[Path]:
    """The comparison plots into ``out_dir`` (per job too when there are several); the
    ones the comparison has no data for are not drawn."""
    out = [
        iteration_ci(c, out_dir / ITERATION_PNG),
        cct_by_type(c, out_dir / CCT_TYPES_PNG),
        cct_cdf_by_type(c, out_dir / CCT_CDF_PNG),
        fidelity_bars(c, out_dir / FIDELITY_PNG),
    ]
    jobs = compared_jobs(c)
    if jobs:
        out.append(job_iterations(c, jobs, out_dir / JOBS_PNG))
    return [p for p in out if p is not None]


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
