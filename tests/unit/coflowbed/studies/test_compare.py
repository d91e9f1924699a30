"""coflowbed.studies.compare: interleaved repetitions, seeds, folders, Ctrl-C/SIGTERM, with a
fake run_one (no fabric)."""

from __future__ import annotations

import json
import os
import signal

import pytest

from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.files import read_csv_rows
from coflowbed.studies.compare import Stopped, compare, plan_runs, with_seed
from tests.compare_fakes import FakeRuns
from tests.data import MECHANISM_SCENARIO, SCENARIOS

TIMES = {"fair": [10.0, 12.0, 11.0], "hermod": [8.0, 9.0, 10.0], "fifo": [12.0, 12.0, 12.0]}


def test_plan_interleaves_policies_within_each_repetition():
    plan = plan_runs(["a", "b", "c"], [5, 6])
    assert [(p.policy, p.repetition, p.seed) for p in plan] == [
        ("a", 1, 5),
        ("b", 1, 5),
        ("c", 1, 5),
        ("a", 2, 6),
        ("b", 2, 6),
        ("c", 2, 6),
    ]


def test_repetitions_run_interleaved_into_policy_r_k_folders(tmp_path):
    fake = FakeRuns(TIMES)
    result = compare(load_scenario(MECHANISM_SCENARIO), ["fair", "hermod"], tmp_path, fake, 3)
    assert [(p, out.relative_to(tmp_path).as_posix()) for p, _, out in fake.seen] == [
        ("fair", "fair/r1"),
        ("hermod", "hermod/r1"),
        ("fair", "fair/r2"),
        ("hermod", "hermod/r2"),
        ("fair", "fair/r3"),
        ("hermod", "hermod/r3"),
    ]
    rows = read_csv_rows(tmp_path / "runs.csv")
    assert [(r["policy"], r["repetition"], r["seed"]) for r in rows] == [
        (p, k, 1) for k in (1, 2, 3) for p in ("fair", "hermod")
    ]
    assert [r["iteration_time_s"] for r in rows[::2]] == TIMES["fair"]
    hermod = {s.policy: s for s in result.stats}["hermod"]
    assert hermod.speedups["speedup_iteration_time"].ci_low == pytest.approx(0.910976, abs=1e-5)
    assert not result.partial


def test_seeds_give_each_repetition_its_scenario(tmp_path):
    fake = FakeRuns(TIMES)
    scen = load_scenario(SCENARIOS / "tiny-moe.yaml")
    result = compare(scen, ["fair"], tmp_path, fake, 2, [7, 9])
    assert [s for _, s, _ in fake.seen] == [7, 9] and result.seeds == (7, 9)
    saved = json.loads((tmp_path / "compare.json").read_text())
    assert saved["seeds"] == [7, 9] and saved["repeat"] == 2


def test_with_seed_changes_the_jobs_expert_routing():
    scen = load_scenario(SCENARIOS / "small-moe.yaml")  # ep_skew 0.8: a seeded gate
    same, other = with_seed(scen, scen.seed), with_seed(scen, scen.seed + 1)

    def flows(s):
        eps = (cf for cf in s.dag.coflows if cf.ctype.value == "EP")
        return [(cf.coflow_id, sorted((f.src, f.dst, f.bytes) for f in cf.flows)) for cf in eps]

    assert other.seed == scen.seed + 1 and flows(same) == flows(scen)
    assert flows(other) != flows(scen)


def test_bad_repeat_or_seed_count_is_refused_before_any_run(tmp_path):
    fake = FakeRuns(TIMES)
    with pytest.raises(ValueError):
        compare(load_scenario(MECHANISM_SCENARIO), ["fair"], tmp_path, fake, 0)
    with pytest.raises(ValueError):
        compare(load_scenario(MECHANISM_SCENARIO), ["fair"], tmp_path, fake, 2, [1])
    assert fake.seen == []


def _stop_at(fake: FakeRuns, n: int, exc: BaseException, keep: bool):
    """A run_one that raises ``exc`` on call n (with the run's summary when ``keep``,
    as the emulated run_one does after a Ctrl-C or SIGTERM mid-run)."""

    def run_one(scen, out):
        if len(fake.seen) + 1 < n:
            return fake(scen, out)
        if keep:
            raise Stopped("SIGTERM", fake(scen, out))
        raise exc

    return run_one


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), Stopped("x")], ids=["ctrl-c", "emulated"])
def test_an_interrupt_keeps_the_runs_done_and_names_the_rest(tmp_path, exc):
    fake = FakeRuns(TIMES)
    keep = isinstance(exc, Stopped)  # an emulated run hands back its partial summary
    run_one = _stop_at(fake, 4, exc, keep)
    try:
        result = compare(
            load_scenario(MECHANISM_SCENARIO), ["fair", "hermod"], tmp_path, run_one, 3
        )
    except KeyboardInterrupt:  # would end the test session, not just fail the test
        pytest.fail("the comparison let KeyboardInterrupt through")
    done = ["fair/r1", "hermod/r1", "fair/r2"] + (["hermod/r2"] if keep else [])
    assert [r.name for r in result.runs] == done
    assert result.interrupted and result.partial
    saved = json.loads((tmp_path / "compare.json").read_text())
    assert saved["partial"] is True
    assert saved["not_done"] == [n for n in ["hermod/r2", "fair/r3", "hermod/r3"] if n not in done]
    assert "PARTIAL comparison (interrupted)" in (tmp_path / "compare.md").read_text()
    assert (tmp_path / "compare_iteration.png").is_file()


def test_sigterm_between_runs_stops_the_comparison(tmp_path):
    fake = FakeRuns(TIMES)

    def run_one(scen, out):
        summary = fake(scen, out)
        if len(fake.seen) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # delivered before the next run starts
        return summary

    before = signal.getsignal(signal.SIGTERM)
    result = compare(load_scenario(MECHANISM_SCENARIO), ["fair", "hermod"], tmp_path, run_one, 2)
    assert result.interrupted and [r.name for r in result.runs] == ["fair/r1"]
    assert result.not_done == ("hermod/r1", "fair/r2", "hermod/r2")
    assert signal.getsignal(signal.SIGTERM) is before


def test_policy_plus_mode_sets_the_inter_job_rule_of_a_multi_job_scenario():
    from coflowbed.core.errors import UserError
    from coflowbed.experiment.scenario import load_scenario
    from coflowbed.studies.compare import with_policy
    from tests.data import MECHANISM_SCENARIO, SCENARIOS

    scen = with_policy(load_scenario(SCENARIOS / "two-moe-shared.yaml"), "lina+crux")
    assert scen.policy == "lina" and scen.inter_job is not None
    assert scen.inter_job.mode == "crux" and len(scen.inter_job.jobs) == 2
    with pytest.raises(UserError, match="workload.jobs: needed by --policies fair"):
        with_policy(load_scenario(MECHANISM_SCENARIO), "fair+crux")


def test_the_run_folder_records_the_inter_job_rule_the_run_used():
    from coflowbed.experiment.folders import resolved_scenario
    from coflowbed.studies.compare import with_policy

    scen = with_policy(load_scenario(SCENARIOS / "two-moe-shared.yaml"), "hermod+priority")
    assert resolved_scenario(scen)["workload"]["inter_job"] == "priority"
