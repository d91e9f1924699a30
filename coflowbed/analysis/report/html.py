"""``report.html``: one self-contained page per run or comparison folder.

A run folder (it has ``summary.json``): the key figures with the emulated/simulated
ratio beside each emulated one, a per-type summary of ``coflows.csv``, the
environment (``versions.json``, switch, MTU, calibration, machine), the resolved
``scenario.yaml``, every CSV table of the folder and every PNG.  A comparison folder
(no ``summary.json``): every CSV table and every PNG.  Images are inlined as base64
data URIs and the style sheet is inline: the page fetches nothing.  Text is escaped
with ``html.escape``; CSV cells are shown as written in the file.
"""

from __future__ import annotations

import base64
import csv
import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from coflowbed.analysis.report.tables import ANSWER_PREFIX
from coflowbed.results.files import read_csv_rows
from coflowbed.results.records import percentile

MAX_ROWS = 200  # rows of a CSV shown; the page says how many more the file has
STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1200px}"
    ".answer{font-size:17px;font-weight:bold;background:#eef4ff;padding:.6em}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px;text-align:right}"
    "th{background:#eee}td:first-child,th:first-child{text-align:left}"
    "pre{background:#f6f6f6;padding:.5em;overflow:auto;font-size:12px}"
    "img{max-width:100%;border:1px solid #ddd;margin:.5em 0}"
)


def esc(v: object) -> str:
    """Escaped text of a cell (blank for None)."""
    return "" if v is None else html.escape(str(v))


def fmt(v: object) -> str:
    """A figure as shown: floats to 6 significant digits, None as a dash."""
    if v is None:
        return "–"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def table(header: Sequence[str], rows: Iterable[Sequence[object]], name: str = "") -> str:
    """An HTML table (``data-table`` = ``name``); cells escaped."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table data-table="{esc(name)}"><tr>{head}</tr>{body}</table>'


def csv_section(path: Path) -> str:
    """One CSV file as a table of its cells as written (at most MAX_ROWS rows)."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return f"<h3>{esc(path.name)}</h3><p>empty</p>"
    body, more = rows[1 : MAX_ROWS + 1], len(rows) - 1 - MAX_ROWS
    note = f"<p>{more} more rows in {esc(path.name)}</p>" if more > 0 else ""
    return f"<h3>{esc(path.name)}</h3>{table(rows[0], body, path.name)}{note}"


def images(folder: Path) -> str:
    """Every PNG of ``folder`` inlined as a data URI."""
    out = []
    for png in sorted(folder.glob("*.png")):
        data = base64.b64encode(png.read_bytes()).decode()
        out.append(
            f'<figure><img alt="{esc(png.name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(png.name)}</figcaption></figure>"
        )
    return "<h2>Plots</h2>" + "".join(out) if out else ""


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
                fmt(sum(cct) / len(cct) if cct else None),
                fmt(percentile(cct, 95)),
                fmt(max(cct) if cct else None),
                " ".join(map(str, levels)),
            ]
        )
    return out


def environment(run_dir: Path, s: dict) -> list[tuple[str, object]]:
    """(what, value) rows: switch, MTU, fabric, calibration, machine, versions."""
    raw = s.get("fabric")
    fabric: dict = raw if isinstance(raw, dict) else {}
    cal = s.get("calibration") or {}
    rows: list[tuple[str, object]] = [
        ("mode", s.get("mode") or "emulated"),
        ("switch", s.get("switch")),
        ("MTU", fabric.get("mtu")),
        ("fabric", fabric or s.get("fabric")),
        ("levels", s.get("levels")),
        ("policy", s.get("policy")),
        ("calibration fraction of nominal", cal.get("fraction")),
        (
            "calibration measured / nominal Mbit/s",
            f"{cal['measured_mbps']} / {cal['nominal_mbps']}" if cal else None,
        ),
        ("calibration warning", cal.get("warning")),
        ("sent again by TCP", _retransmitted(s.get("retransmitted"))),
        ("levels moved while running (up / down)", _moves(s.get("level_moves"))),
        ("machine", s.get("machine", "not recorded")),
        ("sampling", s.get("sampling", "off")),
    ]
    vpath = run_dir / "versions.json"
    if vpath.is_file():
        rows += [(f"version: {k}", v) for k, v in json.loads(vpath.read_text()).items()]
    return [(k, json.dumps(v) if isinstance(v, dict) else fmt(v)) for k, v in rows]


def _retransmitted(block: dict | None) -> str | None:
    """summary.json's ``retransmitted`` in words (None: not measured)."""
    if not block:
        return None
    return (
        f"{block['bytes']} B ({block['share'] * 100:.2f} % of the bytes) by "
        f"{block['flows']} of {block['flows_measured']} flows"
    )


def _moves(block: dict | None) -> str | None:
    """summary.json's ``level_moves`` as "up / down" (None: static levels, or a
    simulation)."""
    return None if not block else f"{block['up']} / {block['down']}"


def run_sections(run_dir: Path) -> list[str]:
    """The parts of a run folder's page before its CSV tables."""
    s = json.loads((run_dir / "summary.json").read_text())
    state = "PARTIAL" if s.get("partial") else "complete"
    out = [f"<p>{esc(state)} run{': ' + esc(s['error']) if s.get('error') else ''}</p>"]
    figs = [(k, fmt(a), fmt(b), fmt(r)) for k, a, b, r in key_figures(run_dir, s)]
    out.append("<h2>Key figures</h2>")
    out.append(table(("figure", "this run", "simulated", "this run / simulated"), figs, "key"))
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


def headline(compare_md: str) -> str:
    """A comparison's one-line answer (from compare.md) as the page's first paragraph."""
    line = next((ln for ln in compare_md.splitlines() if ln.startswith(ANSWER_PREFIX)), "")
    return f'<p class="answer">{esc(line.removeprefix(ANSWER_PREFIX))}</p>' if line else ""


def page(folder: Path) -> str:
    """The whole HTML page of ``folder``."""
    body = run_sections(folder) if (folder / "summary.json").is_file() else []
    md = folder / "compare.md"
    if md.is_file():
        text = md.read_text()
        body.insert(0, headline(text))
        body.append(f"<h2>compare.md</h2><pre>{esc(text)}</pre>")
    body.append("<h2>Tables</h2>" + "".join(csv_section(p) for p in csv_files(folder)))
    body.append(images(folder))
    title = esc(folder.resolve().name)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{STYLE}</style></head><body><h1>{title}</h1>{''.join(body)}</body></html>\n"
    )


def write_report(folder: Path) -> Path:
    """Write ``folder/report.html``; returns its path."""
    out = Path(folder) / "report.html"
    out.write_text(page(Path(folder)))
    return out
