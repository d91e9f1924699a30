"""coflowbed.analysis.report.headline: the answer names what is better and what is worse
from the speed-ups' values and intervals, and the interval sentence says what the
intervals cover from the runs' seeds, ECMP seeds and mode."""

from __future__ import annotations

from coflowbed.analysis.comparison import ComparedRun, PlannedRun, PolicyStats, tabulate
from coflowbed.analysis.report.headline import (
    answer_sentences,
    interval_note,
    policy_sentence,
    reading_note,
)
from coflowbed.analysis.stats import Speedup


def _stats(iteration: Speedup, cct: Speedup) -> PolicyStats:
    speedups = {"speedup_iteration_time": iteration, "speedup_avg_cct": cct}
    return PolicyStats("hermod", 3, (), 336, {}, speedups)


def test_better_iteration_and_worse_cct_are_both_named():
    ps = _stats(
        Speedup(1.2132729, 0.01, 3, 1.16037515, 1.2661708),
        Speedup(0.9296980, 0.01, 3, 0.88927, 0.97012),
    )
    assert policy_sentence(ps, "fair") == (
        "hermod is better than fair on iteration time (1.21× faster [1.16, 1.27]) and "
        "worse than fair on average CCT (0.930× as fast [0.889, 0.970])."
    )


def test_an_interval_across_1_is_not_clearly_better_and_one_run_has_no_brackets():
    ps = _stats(Speedup(1.05, 0.05, 3, 0.98, 1.12), Speedup(0.8, None, 1, None, None))
    assert policy_sentence(ps, "fair") == (
        "hermod is not clearly better than fair on iteration time (1.05× faster [0.980, 1.12]) "
        "and worse than fair on average CCT (0.800× as fast)."
    )


def test_equal_to_three_digits_is_no_different_and_a_missing_figure_is_said():
    ps = _stats(Speedup(1.0004, None, 1, None, None), Speedup(None, None, 0, None, None))
    sentence = policy_sentence(ps, "fair")
    assert sentence.startswith("hermod is no different from fair on iteration time (1.00×")
    assert "without a figure on average CCT" in sentence


def _comparison(seeds: list[int], partial: frozenset[tuple[str, int]] = frozenset()):
    plan = [PlannedRun(p, k, s) for k, s in enumerate(seeds, 1) for p in ("fair", "hermod")]
    runs = [
        ComparedRun(
            p.policy,
            p.repetition,
            p.seed,
            "/x",
            (p.policy, p.repetition) in partial,
            3,
            None,
            {"iteration_time_s": 10.0 + p.repetition, "avg_cct_s": 1.0},
        )
        for p in plan
    ]
    return tabulate("s", "s.yaml", plan, runs, False)


def test_one_shared_seed_means_emulation_noise_only():
    note = interval_note(_comparison([1, 1, 1]), simulated=False, ecmp_seeds={0})
    assert note.startswith("The intervals cover emulation noise only: every repetition used seed 1")
    assert "ECMP seed 0" in note and "--seeds 1,2,3" in note


def test_varied_seeds_are_named_as_what_the_intervals_also_cover():
    note = interval_note(_comparison([1, 2, 3]), simulated=False, ecmp_seeds={0})
    assert note.startswith(
        "The intervals cover emulation noise and the differences between seeds 1, 2, 3"
    )
    assert "--seeds" not in note


def test_a_simulated_comparison_with_one_seed_has_no_interval_width():
    note = interval_note(_comparison([4, 4]), simulated=True, ecmp_seeds={0})
    assert note.startswith(
        "No interval width: the simulator is deterministic and every repetition used seed 4"
    )


def test_the_seeds_of_partial_runs_do_not_count():
    partial = frozenset({("fair", 3), ("hermod", 3)})
    note = interval_note(_comparison([1, 1, 2], partial), False, {0})
    assert "every repetition used seed 1" in note


def test_one_run_each_has_no_interval():
    c = _comparison([1])
    assert interval_note(c, simulated=False, ecmp_seeds={0}).startswith("Each policy ran once")
    assert reading_note(c).endswith("one run each.")


def test_without_the_baseline_or_anything_beside_it_the_answer_says_why_there_is_none():
    plan = [PlannedRun(p, 1, 1) for p in ("hermod", "sebf")]
    runs = [
        ComparedRun(p.policy, 1, 1, "/x", False, 3, None, {"iteration_time_s": 1.0}) for p in plan
    ]
    assert answer_sentences(tabulate("s", "s.yaml", plan, runs, False)) == [
        "fair was not run, so there is no speed-up: see each policy's figures."
    ]
    alone = tabulate("s", "s.yaml", [PlannedRun("fair", 1, 1)], [], False)
    assert answer_sentences(alone) == ["Only fair was run: nothing to compare it with."]
