"""The sweep's table: a row per run (grid values, policy, seed, figures, speed-up over
fair at the same grid point and seed), written as sweep.csv, sweep.json and sweep.md."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coflowbed.analysis.report.tables import markdown_table
from coflowbed.studies.sweep.grid import RunSpec
from coflowbed.studies.sweep.worker import SweepResult

BASELINE = "fair"
SPEEDUPS = (("iteration_time_s", "speedup_iteration"), ("avg_cct_s", "speedup_avg_cct"))


def rows(
    specs: Sequence[RunSpec], results: Mapping[str, SweepResult], keys: Sequence[str]
) -> list[dict]:
    """A row per run that has a result, in grid order, with speed-ups over fair."""
    out = [_row(s, results[s.run_id], keys) for s in specs if s.run_id in results]
    _add_speedups(out, keys)
    return out


def _row(spec: RunSpec, r: SweepResult, keys: Sequence[str]) -> dict:
    """One run's row."""
    point = dict(spec.point)
    row: dict[str, Any] = {k: _cell(point[k]) for k in keys}
    row.update(policy=spec.policy, seed=spec.seed, partial=r.partial, coflows=r.coflows)
    row.update(iteration_time_s=r.iteration_time_s, avg_cct_s=r.avg_cct_s, p95_cct_s=r.p95_cct_s)
    row.update({f"avg_cct_{t}_s": v for t, v in r.cct_by_type})
    if spec.mode == "emulate":  # emulated figures carry their emulated/simulated ratio
        row.update(fidelity_iter=r.fidelity_iter, fidelity_cct_p50=r.fidelity_cct_p50)
    row.update(wall_s=r.wall_s, run=f"runs/{spec.run_id}", error=r.error)
    return row


def _cell(value: Any) -> Any:
    """A grid value as a table cell (mappings and lists as compact JSON)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return value


def _add_speedups(table: list[dict], keys: Sequence[str]) -> None:
    """speedup_* = fair's value / the run's (> 1: faster than fair), same point and seed."""
    fair = {_group(r, keys): r for r in table if r["policy"] == BASELINE}
    for r in table:
        base = fair.get(_group(r, keys), {})
        for col, name in SPEEDUPS:
            b, v = base.get(col), r.get(col)
            r[name] = b / v if b and v else None


def _group(row: dict, keys: Sequence[str]) -> tuple:
    """The grid point and seed of a row."""
    return (*(row[k] for k in keys), row["seed"])


def write(table: list[dict], out_dir: Path, meta: dict) -> None:
    """sweep.csv, sweep.json (``meta`` + rows) and sweep.md into ``out_dir``."""
    cols = list(dict.fromkeys(k for r in table for k in r))
    with (out_dir / "sweep.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows({k: ("" if r.get(k) is None else r[k]) for k in cols} for r in table)
    (out_dir / "sweep.json").write_text(json.dumps({**meta, "rows": table}, indent=1) + "\n")
    (out_dir / "sweep.md").write_text(markdown_table(table, [c for c in cols if c != "error"]))


def read(out_dir: Path) -> dict:
    """sweep.json of a sweep folder."""
    return json.loads((out_dir / "sweep.json").read_text())
