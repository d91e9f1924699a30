"""Plots made from a run folder's files, after the measurement: a coflow timeline
(one bar per coflow from arrival to finish, coloured by level; a large run's coflows
packed into lanes per coflow type, so that the figure fits a screen) and a CCT CDF per
type."""

from __future__ import annotations

from pathlib import Path

from coflowbed.analysis.plots.figure import plt, save_figure
from coflowbed.analysis.plots.samples import plot_samples
from coflowbed.results.files import read_coflows_csv, read_csv_rows

LABELLED = 40  # up to this many coflows: one labelled row each; more: packed lanes
MAX_TIMELINE_IN = 8.0  # the timeline's height cap in inches (880 px at 110 dpi)


def timeline(rows: list[dict], out: Path, title: str, faults: list[dict] | None = None) -> Path:
    """Gantt chart of coflows: arrival -> finish, colour = level; ``faults`` (rows of
    faults.csv) shaded from injection to repair, with a line where the reroute was done.
    Up to ``LABELLED`` coflows get a labelled row each; more are packed into lanes
    grouped by coflow type (a lane holds coflows that do not overlap in time), and the
    figure is at most ``MAX_TIMELINE_IN`` high."""
    rows = sorted((r for r in rows if r["arrival_s"] is not None), key=lambda r: r["arrival_s"])
    placed, ticks = lanes(rows) if len(rows) > LABELLED else one_row_each(rows)
    n = max((lane for lane, _ in placed), default=-1) + 1
    fig, ax = plt.subplots(figsize=(9, min(MAX_TIMELINE_IN, max(2.5, 0.28 * n + 1))))
    cmap = plt.get_cmap("viridis", 8)
    for lane, r in placed:
        end = r["finish_s"] if r["finish_s"] is not None else r["arrival_s"]
        colour = cmap(r["level"]) if isinstance(r["level"], int) else "grey"
        hatch = "" if r["finish_s"] is not None else "//"
        ax.barh(lane, end - r["arrival_s"], left=r["arrival_s"], color=colour, hatch=hatch)
        if len(rows) <= LABELLED:  # label small charts: level and CCT at the bar's end
            cct = "unfinished" if r["cct_s"] is None else f"{r['cct_s']:.2f} s"
            ax.text(end, lane, f" L{r['level']} {cct}", va="center", fontsize=8)
    if len(rows) > LABELLED:
        group_lines(ax, placed)
    for f in faults or []:
        mark_fault(ax, f, max((r["finish_s"] or r["arrival_s"] for r in rows), default=1.0))
    ends = [r["finish_s"] or r["arrival_s"] for r in rows]
    ax.set_xlim(0, 1.15 * max(ends, default=1.0) or 1.0)  # room for the labels
    ax.set_yticks(list(ticks), list(ticks.values()), fontsize=7 if len(ticks) > 20 else 9)
    ax.set_ylim(n - 0.5, -0.5)  # first row on top
    ax.set_xlabel("time since start (s)")
    ax.set_title(f"{title}: coflows from arrival to completion (colour = level, 0 darkest)")
    return save_figure(fig, out)


def group_lines(ax, placed: list[tuple[int, dict]]) -> None:
    """A thin line above the first lane of each coflow type but the top one."""
    firsts: dict[str, int] = {}
    for lane, r in placed:
        firsts[r["ctype"]] = min(lane, firsts.get(r["ctype"], lane))
    for first in sorted(firsts.values())[1:]:
        ax.axhline(first - 0.5, color="0.6", lw=0.6)


def one_row_each(rows: list[dict]) -> tuple[list[tuple[int, dict]], dict[float, str]]:
    """(row, coflow) pairs, one row per coflow, and the rows' labels."""
    ticks: dict[float, str] = {i: f"{r['coflow_id']} ({r['ctype']})" for i, r in enumerate(rows)}
    return list(enumerate(rows)), ticks


def lanes(rows: list[dict]) -> tuple[list[tuple[int, dict]], dict[float, str]]:
    """(lane, coflow) pairs: per coflow type (in name order), each coflow in the first
    lane of its type whose last coflow has finished by its arrival (rows by arrival);
    and a label per type at the middle of its lanes."""
    placed: list[tuple[int, dict]] = []
    ticks: dict[float, str] = {}
    first = 0  # the type's first lane
    for ctype in sorted({r["ctype"] for r in rows}):
        ends: list[float] = []  # per lane of the type: when its last coflow finished
        mine = [r for r in rows if r["ctype"] == ctype]
        for r in mine:
            end = r["finish_s"] if r["finish_s"] is not None else float("inf")
            free = next((i for i, e in enumerate(ends) if e <= r["arrival_s"]), len(ends))
            ends[free : free + 1] = [end]
            placed.append((first + free, r))
        ticks[first + (len(ends) - 1) / 2] = f"{ctype} ({len(mine)} coflows, {len(ends)} lanes)"
        first += len(ends)
    return placed, ticks


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
