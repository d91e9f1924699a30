"""RunResult: a run folder's summary.json and coflows.csv read back as typed values."""

from __future__ import annotations

import dataclasses

import pytest

from coflowbed.results.files import write_results
from coflowbed.results.read import FidelityRatios, NotInRun, RunResult, ratios
from coflowbed.results.records import CoflowRecord, IterationRecord, RunSummary


def record(cid: str, ctype: str, arrival: float, finish: float | None) -> CoflowRecord:
    """A finished (or unfinished) coflow record."""
    return CoflowRecord(cid, ctype, "job0", 0, 1, 2, "all_to_all", 0, 2, 1000, arrival, arrival,
                        finish, level=3, rank="(3,)")  # fmt: skip


FIDELITY = {
    "reference": "levels",
    "sim_policy": "static",
    "levels": 8,
    "rate_caps": "none",
    "model": "leafspine",
    "partial": False,
    "coflows_compared": 2,
    "coflows_total": 3,
    "iteration_ratio": 1.25,
    "cct_ratio_p50": 1.1,
    "cct_ratio_p90": 1.4,
    "sim_iteration_time_s": 2.0,
    "sim_avg_cct_s": 1.0,
    "sim_wall_s": 0.1,
    "cct_sum_ratio_by_type": {"EP": 0.9, "PP": 1.3},
}


@pytest.fixture
def run_dir(tmp_path):
    """A run folder with three coflows (one unfinished, id '7' that looks numeric)."""
    coflows = [
        record("a", "EP", 0.5, 1.75),
        record("7", "DP", 1.0, 4.0),
        record("u", "EP", 2, None),
    ]
    summary = write_results(tmp_path, [], coflows, [IterationRecord(0, 0.0, 4.0)], True)
    dataclasses.replace(summary, fidelity=FIDELITY).write(tmp_path)
    return tmp_path


def test_coflows_come_back_typed(run_dir):
    res = RunResult.read(run_dir)
    a, seven, unfinished = res.coflows
    assert a.cct_s == pytest.approx(1.25) and a.level == 3 and a.mid == 1 and a.rank == "(3,)"
    assert seven.coflow_id == "7" and res.coflow("7") is seven
    assert unfinished.finish_s is None and unfinished.cct_s is None


def test_summary_figures_are_the_summary_files(run_dir):
    res = RunResult.read(run_dir)
    summary = RunSummary.read(run_dir)
    assert res.summary == summary and res.path == run_dir
    assert res.partial is True and res.iteration_time_s == pytest.approx(4.0)
    assert res.by_type("EP") == summary.cct_by_type["EP"] and res.by_type("EP").count == 1


def test_fidelity_carries_the_ratios(run_dir):
    f = RunResult.read(run_dir).fidelity
    assert f == FidelityRatios("levels", 1.25, 1.1, 1.4, 2, False, {"EP": 0.9, "PP": 1.3})


def test_a_folder_written_before_the_summed_ratios_reads_without_them():
    block = {k: v for k, v in FIDELITY.items() if k != "cct_sum_ratio_by_type"}
    assert ratios(block) == FidelityRatios("levels", 1.25, 1.1, 1.4, 2, False)


@pytest.mark.parametrize("block", [None, {}, {"skipped": "--no-check"}, {"error": "boom"}])
def test_no_ratios_without_a_figure(block):
    assert ratios(block) is None


def test_an_absent_coflow_or_type_names_what_the_run_has(run_dir):
    res = RunResult.read(run_dir)
    with pytest.raises(NotInRun, match=r"no coflow 'zz' \(coflows: a, 7, u"):
        res.coflow("zz")
    with pytest.raises(NotInRun, match=r"no coflow of type 'PP' \(types: DP, EP\)"):
        res.by_type("PP")


def test_a_folder_that_is_no_run_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="summary.json: cannot read"):
        RunResult.read(tmp_path)


def test_the_ratio_with_the_control_delay_is_read_when_the_block_has_it():
    block = {**FIDELITY, "iteration_ratio_with_delay": 1.07}
    assert ratios(block).iteration_ratio_with_delay == 1.07
    assert ratios(FIDELITY).iteration_ratio_with_delay is None
