"""coflowbed.analysis.comparison: partial runs left out of the statistics (counted, named), the
speed-up paired by repetition, n = 1 without intervals."""

from __future__ import annotations

import pytest

from coflowbed.analysis.comparison import ComparedRun, PlannedRun, tabulate
from coflowbed.analysis.stats import estimate, speedup


def _run(policy: str, k: int, it: float, partial: bool = False) -> ComparedRun:
    metrics = {"avg_cct_s": it / 4, "p95_cct_s": it / 2, "iteration_time_s": it}
    return ComparedRun(policy, k, 1, f"/x/{policy}/r{k}", partial, 3, None, metrics)


def _plan(policies, n):
    return [PlannedRun(p, k, 1) for k in range(1, n + 1) for p in policies]


def test_partial_runs_are_counted_named_and_left_out():
    runs = [
        _run("fair", 1, 10.0),
        _run("hermod", 1, 8.0),
        _run("fair", 2, 12.0),
        _run("hermod", 2, 99.0, partial=True),
        _run("fair", 3, 11.0),
        _run("hermod", 3, 10.0),
    ]
    c = tabulate("s", "s.yaml", _plan(["fair", "hermod"], 3), runs, False)
    fair, hermod = c.stats
    assert (hermod.runs, hermod.n, hermod.excluded) == (3, 2, ("hermod/r2",))
    assert hermod.metrics["iteration_time_s"] == estimate([8.0, 10.0])
    assert fair.metrics["iteration_time_s"] == estimate([10.0, 12.0, 11.0])
    # paired over the repetitions where both are complete: r1 and r3
    assert hermod.speedups["speedup_iteration_time"] == speedup([10.0, 11.0], [8.0, 10.0])
    assert c.partial and c.excluded == ("hermod/r2",) and not c.interrupted
    assert c.to_dict()["excluded"] == ["hermod/r2"]


def test_a_single_repetition_has_means_but_no_intervals():
    c = tabulate(
        "s",
        "s.yaml",
        _plan(["fair", "fifo"], 1),
        [_run("fair", 1, 4.0), _run("fifo", 1, 8.0)],
        False,
    )
    fifo = c.stats[1]
    assert fifo.n == 1 and fifo.metrics["iteration_time_s"].mean == 8.0
    assert fifo.metrics["iteration_time_s"].ci_low is None
    assert fifo.speedups["speedup_iteration_time"].value == pytest.approx(0.5)
    assert not c.partial


def test_without_fair_there_is_no_speedup_and_runs_not_done_are_named():
    plan = _plan(["fifo", "sebf"], 2)
    c = tabulate("s", "s.yaml", plan, [_run("fifo", 1, 4.0)], True)
    assert c.stats[0].speedups == {} and c.not_done == ("sebf/r1", "fifo/r2", "sebf/r2")
    assert c.stats[1].metrics["iteration_time_s"].n == 0 and c.partial


def test_a_multi_job_run_gives_each_job_its_iteration_time_and_ratio():
    """summary.jobs and fidelity.job_iteration_ratio become job_<j>_* metrics, which the
    per-job comparison plot finds by name."""
    from coflowbed.analysis.comparison import job_metrics, metric_names
    from coflowbed.analysis.plots.comparison import compared_jobs
    from coflowbed.results.records import summarize

    blank = summarize([], [], False)
    jobs = {"a": {"iteration_time_s": 12.0}, "b": {"iteration_time_s": 17.5}}
    fid = {"job_iteration_ratio": {"a": 1.02, "b": 0.97}}
    got = job_metrics(summarize([], [], False, {"jobs": jobs, "fidelity": fid}))
    assert got == {
        "job_a_iteration_time_s": 12.0,
        "job_a_fidelity_iter": 1.02,
        "job_b_iteration_time_s": 17.5,
        "job_b_fidelity_iter": 0.97,
    }
    assert job_metrics(blank) == {}
    run = ComparedRun("hermod+crux", 1, 1, "/x", False, 3, None, got)
    c = tabulate("s", "s.yaml", _plan(["hermod+crux"], 1), [run], False)
    assert metric_names([run])[3:7] == tuple(sorted(got)) and compared_jobs(c) == ["a", "b"]


def test_a_run_reports_the_share_tcp_sent_again_and_a_simulated_run_none():
    """summary.retransmitted.share becomes the retrans_share metric (mean and interval
    per policy like any other); a run that measured none (simulated) gives None."""
    from coflowbed.analysis.comparison import run_metrics
    from coflowbed.results.records import summarize

    block = {"bytes": 30, "share": 0.003, "flows": 1, "flows_measured": 4}
    assert run_metrics(summarize([], [], False, {"retransmitted": block}))["retrans_share"] == 0.003
    assert run_metrics(summarize([], [], False))["retrans_share"] is None


def test_the_summed_ratio_per_type_is_a_metric_of_its_own_per_type():
    """fidelity.cct_sum_ratio_by_type becomes fidelity_sum_<type> (EP and PP here), so
    compare.csv shows each kind's emulated / simulated CCT with its interval; a run
    without the block has none."""
    from coflowbed.analysis.comparison import run_metrics
    from coflowbed.results.records import summarize

    block = {"iteration_ratio": 1.0, "cct_sum_ratio_by_type": {"PP": 1.27, "EP": 0.95}}
    got = run_metrics(summarize([], [], False, {"fidelity": block}))
    assert (got["fidelity_sum_EP"], got["fidelity_sum_PP"]) == (0.95, 1.27)
    assert not any(k.startswith("fidelity_sum_") for k in run_metrics(summarize([], [], False)))


def test_the_spine_link_range_is_two_metrics_and_absent_when_not_checked():
    from coflowbed.analysis.comparison import run_metrics
    from coflowbed.results.records import summarize

    block = {"iteration_ratio": 1.0, "spine_link_ratio": [1.006, 1.09]}
    got = run_metrics(summarize([], [], False, {"fidelity": block}))
    assert (got["fidelity_links_min"], got["fidelity_links_max"]) == (1.006, 1.09)
    unchecked = {"fidelity": {"iteration_ratio": 1.0, "spine_link_ratio": None}}
    assert "fidelity_links_min" not in run_metrics(summarize([], [], False, unchecked))
