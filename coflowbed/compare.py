"""Run one scenario under several policies (same workload, same seed) and tabulate:
average and P95 CCT, CCT per coflow type, iteration time, speed-up against ``fair``, and
each run's fidelity (emulated / simulated iteration time and median CCT ratio; empty for
simulated runs and ``--no-check``)."""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Callable
from pathlib import Path

from coflowbed.results import RunSummary
from coflowbed.scenario import Scenario

log = logging.getLogger("compare")

RunOne = Callable[[Scenario, Path], RunSummary]  # (scenario with policy set, out dir) -> summary


def with_policy(scen: Scenario, policy: str) -> Scenario:
    """A copy of ``scen`` scheduled by ``policy`` (no parameters)."""
    from dataclasses import replace

    return replace(scen, policy=policy, policy_params={})


def compare(scen: Scenario, policies: list[str], out_dir: Path, run_one: RunOne) -> list[dict]:
    """Run every policy into ``out_dir/<policy>``; write compare.csv/.json/.md; return rows."""
    summaries = []
    for i, pol in enumerate(policies, 1):
        log.info("policy %d/%d: %s", i, len(policies), pol)
        summaries.append(run_one(with_policy(scen, pol), out_dir / pol))
    rows = [_row(pol, s) for pol, s in zip(policies, summaries)]
    _add_speedups(rows)
    for row, s in zip(rows, summaries):
        row.update(fidelity_columns(s))
    write_table(rows, out_dir)
    from coflowbed.plots import compare_bars

    compare_bars(rows, out_dir / "compare.png", f"{scen.name}: policies compared")
    return rows


def _row(policy: str, s: RunSummary) -> dict:
    """One table row: the run's CCT and iteration figures."""
    row = {
        "policy": policy,
        "partial": s.partial,
        "coflows": s.coflows,
        "avg_cct_s": s.avg_cct_s,
        "p95_cct_s": s.p95_cct_s,
        "iteration_time_s": s.iteration_time_s,
    }
    for ctype, st in sorted(s.cct_by_type.items()):
        row[f"avg_cct_{ctype}_s"] = st.avg_s
    return row


def _add_speedups(rows: list[dict]) -> None:
    """speedup_* = fair's value / this policy's value (> 1 is better than fair)."""
    fair = next((r for r in rows if r["policy"] == "fair"), None)
    for r in rows:
        for key in ("avg_cct_s", "iteration_time_s"):
            base, val = (fair or {}).get(key), r.get(key)
            r[f"speedup_{key.removesuffix('_s')}"] = (base / val) if base and val else None


def fidelity_columns(summary: RunSummary) -> dict:
    """``fidelity_iter`` and ``fidelity_cct_p50`` of a run's summary (None without a figure)."""
    block = summary.fidelity or {}
    return {
        "fidelity_iter": block.get("iteration_ratio"),
        "fidelity_cct_p50": block.get("cct_ratio_p50"),
    }


def write_table(rows: list[dict], out_dir: Path) -> None:
    """compare.csv, compare.json and a Markdown table compare.md."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with (out_dir / "compare.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows({k: ("" if r.get(k) is None else r.get(k)) for k in cols} for r in rows)
    (out_dir / "compare.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out_dir / "compare.md").write_text(markdown(rows, cols))


def markdown(rows: list[dict], cols: list[str]) -> str:
    """A Markdown table with 3 significant decimals."""

    def fmt(v):
        return "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"
