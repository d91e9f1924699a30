"""Per-run plots from a run folder's samples and records (``coflowbed plot`` draws them
beside ``coflowbed.analysis.plots.run``' timeline and CCT CDF):

- ``utilisation.png``: utilisation over time of the busiest links (samples/ports.csv);
- ``queues.png``: per-level backlog over time on the port with the largest backlog
  (samples/queues.csv);
- ``gantt.png``: one iteration, one row per host: compute (compute.csv) and the host's
  outgoing flows (flows.csv) coloured by their coflow's type (coflows.csv ``ctype``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from coflowbed.analysis.plots.figure import plt, save_figure
from coflowbed.results.files import read_csv_rows

BUSIEST_LINKS = 6
TYPE_COLOURS = {"EP": "tab:red", "DP": "tab:blue", "PP": "tab:green", "OTHER": "tab:purple"}
COMPUTE_COLOUR = "0.75"


def _rows(path: Path) -> list[dict]:
    """Rows of a CSV, none if it is missing or empty."""
    return read_csv_rows(path) if path.is_file() and path.stat().st_size else []


def utilisation_series(rows: list[dict], link_mbps: dict) -> dict[str, tuple[list, list]]:
    """Per port: (times at interval ends, tx utilisation 0..1 over each interval)."""
    by_dev: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_dev[r["dev"]].append(r)
    out = {}
    for dev, rs in by_dev.items():
        rs.sort(key=lambda r: r["t_s"])
        cap = link_mbps.get(dev, 0) * 1e6 / 8
        pts = [
            (b["t_s"], (b["tx_bytes"] - a["tx_bytes"]) / ((b["t_s"] - a["t_s"]) * cap))
            for a, b in zip(rs, rs[1:])
            if b["t_s"] > a["t_s"] and cap > 0
        ]
        out[dev] = ([t for t, _ in pts], [u for _, u in pts])
    return out


def busiest(series: dict[str, tuple[list, list]], n: int = BUSIEST_LINKS) -> list[str]:
    """The ``n`` ports of highest mean utilisation."""
    mean = {d: sum(u) / len(u) for d, (_, u) in series.items() if u}
    return sorted(mean, key=lambda d: -mean[d])[:n]


def plot_utilisation(run_dir: Path, out: Path) -> Path | None:
    """utilisation.png of the busiest links (None without samples)."""
    meta = json.loads((run_dir / "samples" / "meta.json").read_text())
    series = utilisation_series(_rows(run_dir / "samples" / "ports.csv"), meta["link_mbps"])
    top = busiest(series)
    if not top:
        return None
    fig, ax = plt.subplots(figsize=(9, 4))
    for dev in top:
        ax.plot(*series[dev], label=f"{dev} ({meta['link_mbps'][dev]:g} Mbit/s)", lw=1.2)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("egress utilisation")
    ax.set_ylim(0, 1.1)
    ax.set_title(f"{run_dir.name}: busiest links (sampled every {meta['period_s']:g} s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    return save_figure(fig, out)


def bottleneck(rows: list[dict]) -> str | None:
    """The port with the largest total backlog at any one sample."""
    total: dict[tuple[str, float], int] = defaultdict(int)
    for r in rows:
        total[(r["dev"], r["t_s"])] += r["backlog_bytes"]
    if not total or max(total.values()) == 0:
        return None
    return max(total, key=lambda k: total[k])[0]


def plot_queues(run_dir: Path, out: Path) -> Path | None:
    """queues.png: per-level backlog on the bottleneck port (None without backlog)."""
    rows = _rows(run_dir / "samples" / "queues.csv")
    dev = bottleneck(rows)
    if dev is None:
        return None
    meta = json.loads((run_dir / "samples" / "meta.json").read_text())
    fig, ax = plt.subplots(figsize=(9, 4))
    for level in sorted({r["level"] for r in rows if r["dev"] == dev}):
        mine = sorted(
            (r["t_s"], r["backlog_bytes"] / 1e3)
            for r in rows
            if r["dev"] == dev and r["level"] == level
        )
        if any(b for _, b in mine):
            ax.step(*zip(*mine), where="post", label=f"level {level}")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("backlog (kB)")
    ax.set_title(
        f"{run_dir.name}: queue backlog per level on {dev} "
        f"(the largest; sampled every {meta['period_s']:g} s)"
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, out)


def first_iteration(coflows: list[dict]) -> int | None:
    """The lowest iteration number of the run's coflows."""
    its = [r["iteration"] for r in coflows if r["iteration"] is not None]
    return min(its) if its else None


def plot_gantt(run_dir: Path, out: Path) -> Path | None:
    """gantt.png: one iteration, a row per host, compute grey, flows by coflow type."""
    coflows = _rows(run_dir / "coflows.csv")
    it = first_iteration(coflows)
    if it is None:
        return None
    ctype = {r["coflow_id"]: r["ctype"] for r in coflows if r["iteration"] == it}
    flows = [f for f in _rows(run_dir / "flows.csv") if f["coflow_id"] in ctype]
    comps = [c for c in _rows(run_dir / "compute.csv") if c["iteration"] == it]
    hosts = sorted({f["src"] for f in flows} | {c["host"] for c in comps})
    row = {h: i for i, h in enumerate(hosts)}
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.45 * len(hosts) + 1.2)))
    for c in comps:
        if c["start_s"] is not None and c["finish_s"] is not None:
            ax.barh(
                row[c["host"]],
                c["finish_s"] - c["start_s"],
                left=c["start_s"],
                height=0.8,
                color=COMPUTE_COLOUR,
                edgecolor="0.5",
                lw=0.3,
            )
    for f in flows:
        if f["start_s"] is not None and f["finish_s"] is not None:
            ax.barh(
                row[f["src"]],
                f["finish_s"] - f["start_s"],
                left=f["start_s"],
                height=0.4,
                color=TYPE_COLOURS.get(ctype[f["coflow_id"]], "black"),
                alpha=0.6,
            )
    handles = [plt.Rectangle((0, 0), 1, 1, color=COMPUTE_COLOUR, label="compute")]
    handles += [
        plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.6, label=t)
        for t, c in TYPE_COLOURS.items()
        if t in ctype.values()
    ]
    ax.legend(handles=handles, fontsize=7, loc="upper right")
    ax.set_yticks(range(len(hosts)), hosts)
    ax.invert_yaxis()
    ax.set_xlabel("time since start (s)")
    ax.set_title(f"{run_dir.name}: iteration {it}, compute and outgoing flows per host")
    return save_figure(fig, out)


def plot_samples(run_dir: Path) -> list[Path]:
    """Every plot of this module the folder has data for; returns their paths."""
    out = [plot_gantt(run_dir, run_dir / "gantt.png")]
    if (run_dir / "samples" / "meta.json").is_file():
        out += [
            plot_utilisation(run_dir, run_dir / "utilisation.png"),
            plot_queues(run_dir, run_dir / "queues.png"),
        ]
    return [p for p in out if p is not None]
