"""Result records and files of one run (emulated or simulated): ``flows.csv``,
``coflows.csv``, ``iterations.csv`` and ``summary.json``.

Times are seconds since the run's time zero (the first coflow release).  A run that did
not finish every coflow is written with ``partial: true`` and its unfinished coflows
have an empty ``finish_s``.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable, Sequence

from workload.dag import Coflow


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
    def of(cls, cf: Coflow) -> "CoflowRecord":
        """An empty record carrying the coflow's identity."""
        i = cf.identity
        return cls(cf.coflow_id, cf.ctype.value, i.job, i.iteration, i.mid, i.lid,
                   i.collective, i.step, len(cf.flows), cf.bytes)


@dataclass
class IterationRecord:
    """One training iteration: from its first node's start to its last node's end."""

    iteration: int
    start_s: float
    finish_s: float | None

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


def cct_stats(records: Iterable[CoflowRecord]) -> dict:
    """count, avg_s, p95_s, max_s of the finished coflows among ``records``."""
    ccts = [r.cct_s for r in records if r.cct_s is not None]
    return {"count": len(ccts), "avg_s": mean(ccts), "p95_s": percentile(ccts, 95),
            "max_s": max(ccts) if ccts else None}


def summarize(coflows: Sequence[CoflowRecord], iterations: Sequence[IterationRecord],
              partial: bool, extra: dict | None = None) -> dict:
    """The ``summary.json`` content: overall and per-type CCT, iteration time."""
    overall = cct_stats(coflows)
    by_type = {t: cct_stats(r for r in coflows if r.ctype == t)
               for t in sorted({r.ctype for r in coflows})}
    its = [it.time_s for it in iterations if it.time_s is not None]
    out = {
        "partial": partial,
        "coflows": overall["count"],
        "coflows_total": len(coflows),
        "avg_cct_s": overall["avg_s"],
        "p95_cct_s": overall["p95_s"],
        "max_cct_s": overall["max_s"],
        "cct_by_type": by_type,
        "iterations": len(its),
        "iteration_time_s": mean(its),
        "iteration_times_s": its,
    }
    out.update(extra or {})
    return out


def _write_csv(path: Path, rows: Sequence, extra_cols: dict | None = None) -> None:
    """Write dataclass rows (plus computed columns) as CSV."""
    if not rows:
        path.write_text("")
        return
    names = [f.name for f in fields(rows[0])] + list(extra_cols or {})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names)
        w.writeheader()
        for r in rows:
            d = asdict(r)
            for col, fn in (extra_cols or {}).items():
                d[col] = fn(r)
            w.writerow({k: ("" if v is None else v) for k, v in d.items()})


def write_results(out_dir: Path, flows: Sequence[FlowRecord], coflows: Sequence[CoflowRecord],
                  iterations: Sequence[IterationRecord], partial: bool,
                  extra: dict | None = None) -> dict:
    """Write the four result files into ``out_dir``; return the summary dict."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_csv(out_dir / "flows.csv", flows)
    _write_csv(out_dir / "coflows.csv", coflows, {"cct_s": lambda r: r.cct_s})
    _write_csv(out_dir / "iterations.csv", iterations, {"time_s": lambda r: r.time_s})
    summary = summarize(coflows, iterations, partial, extra)
    write_summary(out_dir, summary)
    return summary


def write_summary(out_dir: Path, summary: dict) -> None:
    """(Re)write ``summary.json`` in ``out_dir``."""
    (Path(out_dir) / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def read_coflows_csv(path: Path) -> list[dict]:
    """Rows of a ``coflows.csv`` as dicts (numbers converted, blanks -> None)."""
    return read_csv_rows(path)


def read_csv_rows(path: Path) -> list[dict]:
    """Rows of any result CSV as dicts (numbers converted, blanks -> None)."""
    with Path(path).open() as fh:
        return [{k: _num(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _num(text: str):
    """'' -> None, ints and floats converted, other text unchanged."""
    if text == "":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def iteration_records(spans: dict[int, tuple[float, float | None]]) -> list[IterationRecord]:
    """IterationRecords from {iteration: (start_s, finish_s or None)}."""
    return [IterationRecord(i, s, f) for i, (s, f) in sorted(spans.items())]
