"""coflowbed.analysis.report.tables: compare.csv keeps today's columns (n = 1: CI columns empty)
and adds n, std and CI; compare.md carries them; runs.csv one row per run."""

from __future__ import annotations

import json

from coflowbed.analysis.comparison import ComparedRun, PlannedRun, tabulate
from coflowbed.analysis.report.tables import estimate_cell, speedup_cell, write_all
from coflowbed.analysis.stats import estimate, speedup
from coflowbed.results.files import read_csv_rows

TODAY = [
    "policy",
    "partial",
    "coflows",
    "avg_cct_s",
    "p95_cct_s",
    "iteration_time_s",
    "avg_cct_DP_s",
    "speedup_avg_cct",
    "speedup_iteration_time",
    "fidelity_iter",
    "fidelity_cct_p50",
]


def _run(policy: str, k: int, it: float) -> ComparedRun:
    metrics = {
        "avg_cct_s": it / 4,
        "p95_cct_s": it / 2,
        "iteration_time_s": it,
        "avg_cct_DP_s": it / 3,
        "fidelity_iter": 1.0 + it / 100,
        "fidelity_cct_p50": None,
        "sim_iteration_time_s": {"fair": 10.0, "hermod": 8.0}.get(policy),
    }
    return ComparedRun(policy, k, 1, f"/x/{policy}/r{k}", False, 3, None, metrics)


def _comparison(its: dict[str, list[float]]):
    n = len(next(iter(its.values())))
    plan = [PlannedRun(p, k, 1) for k in range(1, n + 1) for p in its]
    runs = [_run(p, k, its[p][k - 1]) for k in range(1, n + 1) for p in its]
    return tabulate("s", "s.yaml", plan, runs, False)


def test_one_repetition_keeps_todays_columns_and_leaves_the_intervals_empty(tmp_path):
    write_all(_comparison({"fair": [4.0], "fifo": [8.0]}), tmp_path)
    rows = read_csv_rows(tmp_path / "compare.csv")
    assert all(col in rows[0] for col in TODAY)
    fifo = rows[1]
    assert (fifo["n"], fifo["runs"], fifo["partial_runs"]) == (1, 1, 0)
    assert fifo["iteration_time_s"] == 8.0 and fifo["speedup_iteration_time"] == 0.5
    empty = ["iteration_time_s_std", "iteration_time_s_ci_low", "speedup_iteration_time_ci_low"]
    assert all(fifo[c] is None for c in empty)
    assert fifo["fidelity_iter"] == 1.08 and fifo["fidelity_cct_p50"] is None


def test_repetitions_fill_every_interval_column_and_the_markdown(tmp_path):
    its = {"fair": [10.0, 12.0, 11.0], "hermod": [8.0, 9.0, 10.0]}
    c = _comparison(its)
    write_all(c, tmp_path)
    hermod = read_csv_rows(tmp_path / "compare.csv")[1]
    e, s = estimate(its["hermod"]), speedup(its["fair"], its["hermod"])
    assert (hermod["iteration_time_s_ci_low"], hermod["iteration_time_s_ci_high"]) == (
        e.ci_low,
        e.ci_high,
    )
    assert hermod["speedup_iteration_time_ci_low"] == s.ci_low
    assert hermod["fidelity_iter_std"] == estimate([1.08, 1.09, 1.1]).std
    md = (tmp_path / "compare.md").read_text()
    assert estimate_cell(e) == "9.000 ± 1.000 [6.516, 11.484]" and estimate_cell(e) in md
    assert speedup_cell(s) == "1.222 [0.911, 1.533]" and speedup_cell(s) in md
    assert c.speedup_method in md
    (answer,) = [ln for ln in md.splitlines() if ln.startswith("**Answer.** ")]
    # the answer names both measures, in the report's words (hermod 1.22x, interval over 1)
    assert answer.startswith("**Answer.** hermod is not clearly better than fair on iteration time")
    assert "average CCT" in answer
    (line,) = [ln for ln in md.splitlines() if ln.startswith("In numbers: iteration: fair 11")]
    # the model's speed-up beside the emulated one: fair 10 s / hermod 8 s simulated
    assert "; hermod 9.000 s (x1.22 [0.91, 1.53], model x1.25), emulated/simulated 1.09 " in line
    assert line.endswith("(speed-up over fair, 95% CI over 3 paired runs)")
    runs = read_csv_rows(tmp_path / "runs.csv")
    assert [(r["policy"], r["repetition"]) for r in runs] == [
        ("fair", 1),
        ("hermod", 1),
        ("fair", 2),
        ("hermod", 2),
        ("fair", 3),
        ("hermod", 3),
    ]
    saved = json.loads((tmp_path / "compare.json").read_text())
    assert saved["stats"][1]["metrics"]["iteration_time_s"] == e.to_dict()
    assert saved["stats"][1]["speedups"]["speedup_iteration_time"] == s.to_dict()
