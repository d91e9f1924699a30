"""The sweep's line plot: a metric (default: speed-up over fair) against one grid key,
a line per policy (averaged over seeds and any other grid key), a panel per value of
another grid key."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from coflowbed.analysis.plots.figure import plt, save_figure
from coflowbed.core.errors import UserError
from coflowbed.studies.sweep.table import read


def sweep_lines(rows: list[dict], plot: dict, out: Path, title: str) -> Path:
    """Draw ``plot`` (PlotSpec as a mapping: x, y, panels) from the table into ``out``."""
    panels = _split(rows, plot.get("panels"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    for ax, (value, part) in zip(axes[0], panels.items()):
        _panel(ax, part, plot["x"], plot["y"])
        ax.set_title(f"{plot['panels']} = {value}" if plot.get("panels") else title)
    fig.suptitle(title if plot.get("panels") else "")
    return save_figure(fig, out)


def _split(rows: list[dict], key: str | None) -> dict[Any, list[dict]]:
    """Rows per value of ``key`` (all in one group without it)."""
    groups: dict[Any, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r[key] if key else ""].append(r)
    return dict(groups)


def _panel(ax, rows: list[dict], x: str, y: str) -> None:
    """One line per policy: mean of ``y`` at each ``x``."""
    lines: dict[str, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get(y) is not None:
            lines[r["policy"]][r[x]].append(r[y])
    for policy, pts in lines.items():
        xs = sorted(pts)
        ax.plot(xs, [mean(pts[v]) for v in xs], marker="o", label=policy)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    if lines:
        ax.legend(fontsize=8)


def plot_sweep(sweep_dir: Path) -> Path:
    """Redraw a sweep folder's plot from its sweep.json (the plot its sweep file named,
    else the metric against the first grid key)."""
    data = read(sweep_dir)
    if not data.get("plot") and not data["keys"]:
        raise UserError(
            str(sweep_dir), "plot", "a sweep without a grid has nothing to plot against"
        )
    plot = data.get("plot") or {"x": data["keys"][0], "y": "speedup_iteration", "panels": None}
    return sweep_lines(data["rows"], plot, sweep_dir / plot.get("file", "sweep.png"), data["name"])
