"""Plots made from a run folder's files, after the measurement: a coflow timeline
(one bar per coflow from arrival to finish, coloured by level) and a CCT CDF per type."""

from __future__ import annotations

from pathlib import Path

from coflowbed.analysis.plots.figure import plt, save_figure
from coflowbed.analysis.plots.samples import plot_samples
from coflowbed.results.files import read_coflows_csv, read_csv_rows


def timeline(rows: list[dict], out: Path, title: str, faults: list[dict] | None = None) -> Path:
    """Gantt chart of coflows: arrival -> finish, colour = level; ``faults`` (rows of
    faults.csv) shaded from injection to repair, with a line where the reroute was done."""
    rows = sorted((r for r in rows if r["arrival_s"] is not None), key=lambda r: r["arrival_s"])
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.28 * len(rows) + 1)))
    cmap = plt.get_cmap("viridis", 8)
    for i, r in enumerate(rows):
        end = r["finish_s"] if r["finish_s"] is not None else r["arrival_s"]
        colour = cmap(r["level"]) if isinstance(r["level"], int) else "grey"
        ax.barh(
            i,
            end - r["arrival_s"],
            left=r["arrival_s"],
            color=colour,
            hatch="" if r["finish_s"] is not None else "//",
        )
        if len(rows) <= 40:  # label small charts: level and CCT at the bar's end
            cct = "unfinished" if r["cct_s"] is None else f"{r['cct_s']:.2f} s"
            ax.text(end, i, f" L{r['level']} {cct}", va="center", fontsize=8)
    for f in faults or []:
        mark_fault(ax, f, max((r["finish_s"] or r["arrival_s"] for r in rows), default=1.0))
    ends = [r["finish_s"] or r["arrival_s"] for r in rows]
    ax.set_xlim(0, 1.15 * max(ends, default=1.0) or 1.0)  # room for the labels
    ax.set_yticks(
        range(len(rows)),
        [f"{r['coflow_id']} ({r['ctype']})" for r in rows],
        fontsize=7 if len(rows) > 20 else 9,
    )
    ax.invert_yaxis()
    ax.set_xlabel("time since start (s)")
    ax.set_title(f"{title}: coflows from arrival to completion (colour = level, 0 darkest)")
    return save_figure(fig, out)


def mark_fault(ax, f: dict, end: float) -> None:
    """One fault on a timeline: red span from injected to up (or the end), a dashed line
    at the reroute, the target named at the top."""
    start = f.get("injected_s")
    if start is None:
        return
    up = f.get("up_s") if f.get("up_s") is not None else end
    ax.axvspan(start, up, color="tab:red", alpha=0.12, lw=0)
    if f.get("rerouted_s") is not None:
        ax.axvline(f["rerouted_s"], color="tab:red", ls="--", lw=0.8)
    label = f"{f['target']} down"
    if f.get("kind") == "controller":
        label = "controller restarted"
    if f.get("restored_s") is not None and f.get("kind") == "controller":
        ax.axvline(f["restored_s"], color="tab:red", ls="--", lw=0.8)
        label += f", switches taken over in {f['resync_ms']:.0f} ms"
    if f.get("reroute_ms") is not None:
        label += f", rerouted in {f['reroute_ms']:.0f} ms"
    ax.text(start, -0.6, label, color="tab:red", fontsize=7, va="bottom")


def cct_groups(rows: list[dict]) -> dict[str, list[float]]:
    """Sorted finished CCTs per coflow type, or per job and type when the rows hold
    several jobs (``a EP``, ``b DP``, ...)."""
    several = len({r.get("job") for r in rows}) > 1
    out: dict[str, list[float]] = {}
    for r in rows:
        if r["cct_s"] is not None:
            key = f"{r['job']} {r['ctype']}" if several else r["ctype"]
            out.setdefault(key, []).append(r["cct_s"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def cct_cdf(rows: list[dict], out: Path, title: str) -> Path:
    """CDF of CCT, one line per coflow type (per job and type with several jobs)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, ccts in cct_groups(rows).items():
        ax.step(
            ccts,
            [(i + 1) / len(ccts) for i in range(len(ccts))],
            where="post",
            label=f"{label} (n={len(ccts)})",
        )
    ax.set_xlabel("coflow completion time (s)")
    ax.set_ylabel("fraction of coflows")
    ax.set_title(f"{title}: CCT distribution")
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, out)


def plot_run(run_dir: Path) -> list[Path]:
    """Write timeline.png and cct_cdf.png (and ``coflowbed.analysis.plots.samples``' utilisation,
    queue and Gantt plots) into ``run_dir``; returns their paths."""
    rows = read_coflows_csv(run_dir / "coflows.csv")
    faults_csv = run_dir / "faults.csv"
    faults = read_csv_rows(faults_csv) if faults_csv.exists() else []
    title = run_dir.name
    return [
        timeline(rows, run_dir / "timeline.png", title, faults),
        cct_cdf(rows, run_dir / "cct_cdf.png", title),
        *plot_samples(run_dir),
    ]
