"""``report.html``: one self-contained page per run or comparison folder.

A run folder (it has ``summary.json``): the key figures with the emulated/simulated
ratio beside each emulated one, its plots, a per-type summary of ``coflows.csv``, the
environment (``versions.json``, switch, MTU, calibration, machine), the resolved
``scenario.yaml`` and every CSV table of the folder (numbers to 3 significant digits,
each linked to its file).  A comparison folder (``compare.json``): the page of
``compared`` (the answer first), after the comparison's plots are drawn again and every
run's own page is written (its plots drawn when it has none).  Any other folder with CSV
files: its tables and PNGs.  Images are inlined as base64 data URIs and the style sheet
is inline: the page fetches nothing.  Text is escaped with ``html.escape``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from coflowbed.analysis.plots.comparison import plot_comparison
from coflowbed.analysis.plots.run import plot_run
from coflowbed.analysis.report import compared
from coflowbed.analysis.report.environment import environment
from coflowbed.analysis.report.markup import STYLE, cell, esc, figure, link, sig3, table
from coflowbed.results.files import read_csv_rows
from coflowbed.results.records import percentile

MAX_ROWS = 200  # rows of a CSV shown; the page says how many more the file has
RUN_PLOTS = ("timeline.png", "cct_cdf.png", "gantt.png", "utilisation.png", "queues.png")


def csv_section(path: Path, href: str) -> str:
    """One CSV file as a folded table (numbers to 3 significant digits, at most MAX_ROWS
    rows) under its name, linked to the file (``href``, relative to the page)."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    name = f"<h3>{link(href, path.name)}</h3>"
    if not rows:
        return f"{name}<p>empty</p>"
    body = [[cell(c) for c in r] for r in rows[1 : MAX_ROWS + 1]]
    more = len(rows) - 1 - MAX_ROWS
    note = f"<p>{more} more rows in {esc(path.name)}</p>" if more > 0 else ""
    fold = f"<summary>{len(rows) - 1} rows</summary>"
    return f"{name}<details>{fold}{table(rows[0], body, path.name)}{note}</details>"


def images(folder: Path, first: tuple[str, ...] = ()) -> str:
    """Every PNG of ``folder`` inlined, those named in ``first`` first (in that order)."""
    order = {name: i for i, name in enumerate(first)}
    pngs = sorted(folder.glob("*.png"), key=lambda p: (order.get(p.name, len(first)), p.name))
    return "<h2>Plots</h2>" + "".join(figure(p) for p in pngs) if pngs else ""


def _ratio(a: object, b: object) -> float | None:
    """a / b for two numbers (None otherwise)."""
    ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and b
    return a / b if ok else None  # type: ignore[operator]


def _sim_cct(run_dir: Path) -> list[float]:
    """Simulated CCTs of the compared coflows (fidelity.csv)."""
    path = run_dir / "fidelity.csv"
    if not path.is_file() or not path.stat().st_size:
        return []
    return [r["simulated_cct_s"] for r in read_csv_rows(path) if r["simulated_cct_s"] is not None]


def key_figures(run_dir: Path, s: dict) -> list[tuple[str, object, object, object]]:
    """(figure, this run, simulated, this run / simulated) rows; for an emulated run
    the simulated column is its fidelity check (``fidelity`` of summary.json)."""
    fid = s.get("fidelity") or {}
    sims = _sim_cct(run_dir)
    sim = {
        "iteration_time_s": fid.get("sim_iteration_time_s"),
        "avg_cct_s": fid.get("sim_avg_cct_s"),
        "p95_cct_s": percentile(sims, 95),
        "max_cct_s": max(sims) if sims else None,
    }
    if s.get("mode") == "simulated":
        sim = {}
    rows: list[tuple[str, object, object, object]] = []
    for key in ("iteration_time_s", "avg_cct_s", "p95_cct_s", "max_cct_s"):
        ratio = fid.get("iteration_ratio") if key == "iteration_time_s" else None
        rows.append((key, s.get(key), sim.get(key), ratio or _ratio(s.get(key), sim.get(key))))
    rows.append(("coflows finished", s.get("coflows"), None, None))
    rows.append(("coflows total", s.get("coflows_total"), None, None))
    for key in ("cct_ratio_p50", "cct_ratio_p90"):
        if key in fid:
            rows.append((f"per-coflow CCT ratio {key[-3:]}", None, None, fid[key]))
    for kind, ratio in (fid.get("cct_sum_ratio_by_type") or {}).items():
        rows.append((f"summed CCT ratio, {kind} coflows", None, None, ratio))
    for end, ratio in zip(("lowest", "highest"), fid.get("spine_link_ratio") or ()):
        rows.append((f"spine-link bytes, switch / model, {end}", None, None, ratio))
    return rows


def coflow_summary(rows: list[dict]) -> list[list[object]]:
    """Per coflow type of coflows.csv: count, finished, bytes, avg/p95/max CCT, levels."""
    out = []
    for t in sorted({r["ctype"] for r in rows}):
        mine = [r for r in rows if r["ctype"] == t]
        cct = [r["cct_s"] for r in mine if r["cct_s"] is not None]
        levels = sorted({r["level"] for r in mine if r["level"] is not None})
        out.append(
            [
                t,
                len(mine),
                len(cct),
                sum(r["bytes"] for r in mine),
                sig3(sum(cct) / len(cct) if cct else None),
                sig3(percentile(cct, 95)),
                sig3(max(cct) if cct else None),
                " ".join(map(str, levels)),
            ]
        )
    return out


def run_sections(run_dir: Path) -> list[str]:
    """The parts of a run folder's page before its CSV tables."""
    s = json.loads((run_dir / "summary.json").read_text())
    state = "PARTIAL" if s.get("partial") else "complete"
    out = [f"<p>{esc(state)} run{': ' + esc(s['error']) if s.get('error') else ''}</p>"]
    if (run_dir.resolve().parent.parent / "compare.json").is_file():
        out.append(f"<p>A run of {link('../../report.html', 'a comparison')}.</p>")
    figs = [(k, sig3(a), sig3(b), sig3(r)) for k, a, b, r in key_figures(run_dir, s)]
    out.append("<h2>Key figures</h2>")
    out.append(table(("figure", "this run", "simulated", "this run / simulated"), figs, "key"))
    out.append(images(run_dir, RUN_PLOTS))
    if (run_dir / "coflows.csv").stat().st_size:
        header = (
            "type",
            "coflows",
            "finished",
            "bytes",
            "avg CCT s",
            "p95 CCT s",
            "max CCT s",
            "levels",
        )
        out.append("<h2>Coflows by type</h2>")
        out.append(table(header, coflow_summary(read_csv_rows(run_dir / "coflows.csv")), "types"))
    out.append("<h2>Environment</h2>" + table(("what", "value"), environment(run_dir, s), "env"))
    scen = run_dir / "scenario.yaml"
    if scen.is_file():
        out.append(f"<h2>Scenario (resolved)</h2><pre>{esc(scen.read_text())}</pre>")
    return out


def csv_files(folder: Path) -> list[Path]:
    """The CSV files of a folder and of its samples/ folder."""
    return sorted(folder.glob("*.csv")) + sorted((folder / "samples").glob("*.csv"))


def tables_section(folder: Path) -> str:
    """Every CSV file of the folder as a table linked to its file."""
    parts = [csv_section(p, p.relative_to(folder).as_posix()) for p in csv_files(folder)]
    return "<h2>Tables</h2>" + "".join(parts) if parts else ""


def page(folder: Path) -> str:
    """The whole HTML page of ``folder``."""
    if (folder / "compare.json").is_file():
        body = compared.sections(folder)
    elif (folder / "summary.json").is_file():
        body = [*run_sections(folder), tables_section(folder)]
    else:
        body = [tables_section(folder), images(folder)]
    title = esc(page_title(folder.resolve()))
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width"><title>{title}</title>'
        f"<style>{STYLE}</style></head><body><h1>{title}</h1>{''.join(body)}</body></html>\n"
    )


def page_title(folder: Path) -> str:
    """The folder's name; ``<policy>/r<k>`` for a run of a comparison."""
    in_comparison = (folder.parent.parent / "compare.json").is_file()
    return f"{folder.parent.name}/{folder.name}" if in_comparison else folder.name


def write_report(folder: Path) -> Path:
    """Write ``folder/report.html``; returns its path.  For a comparison, first its plots
    and every run's page (``write_run_pages``)."""
    folder = Path(folder)
    if (folder / "compare.json").is_file():
        c = compared.load(folder)
        write_run_pages([Path(r.run_dir) for r in c.runs])
        plot_comparison(c, folder)
    out = folder / "report.html"
    out.write_text(page(folder))
    return out


def write_run_pages(run_dirs: list[Path]) -> None:
    """report.html of every run folder that has a summary.json, its plots drawn first
    when it has no timeline.png."""
    for d in run_dirs:
        if (d / "summary.json").is_file() and (d / "coflows.csv").is_file():
            if not (d / "timeline.png").is_file():
                plot_run(d)
            write_report(d)
