"""The files of one run (emulated or simulated): ``flows.csv``, ``compute.csv``,
``coflows.csv``, ``iterations.csv``, ``trace.json`` and ``summary.json`` written from
the records (``coflowbed.results.records``), and any result CSV read back as rows.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from operator import attrgetter
from pathlib import Path
from typing import Any

from coflowbed.results.records import (
    CoflowRecord,
    ComputeRecord,
    FlowRecord,
    IterationRecord,
    RunSummary,
    summarize,
)
from coflowbed.results.trace import write_trace


def _write_csv(path: Path, rows: Sequence, extra_cols: dict | None = None) -> None:
    """Write dataclass rows (plus computed columns) as CSV."""
    if not rows:
        path.write_text("")
        return
    extra = list((extra_cols or {}).values())
    names = [f.name for f in fields(rows[0])]
    values = _fields_getter(names)  # the records' fields are scalars: no asdict copy
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)  # writes None as ""
        w.writerow(names + list(extra_cols or {}))
        w.writerows((*values(r), *(fn(r) for fn in extra)) for r in rows)


def _fields_getter(names: list[str]) -> Callable[[Any], tuple]:
    """A function of a record giving its ``names`` fields as a tuple (``attrgetter`` of
    one name gives the bare value)."""
    get = attrgetter(*names)
    return get if len(names) > 1 else lambda r: (get(r),)


def write_results(
    out_dir: Path,
    flows: Sequence[FlowRecord],
    coflows: Sequence[CoflowRecord],
    iterations: Sequence[IterationRecord],
    partial: bool,
    extra: Mapping[str, Any] | None = None,
    computes: Sequence[ComputeRecord] = (),
) -> RunSummary:
    """Write the result files into ``out_dir`` (``compute.csv`` and ``trace.json`` too);
    return the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_csv(out_dir / "flows.csv", flows)
    _write_csv(out_dir / "compute.csv", computes)
    write_trace(out_dir / "trace.json", flows, coflows, computes)
    _write_csv(out_dir / "coflows.csv", coflows, {"cct_s": lambda r: r.cct_s})
    _write_csv(out_dir / "iterations.csv", iterations, {"time_s": lambda r: r.time_s})
    summary = summarize(coflows, iterations, partial, extra)
    summary.write(out_dir)
    return summary


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
