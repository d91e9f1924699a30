"""``coflowbed compare`` on the command line: --repeat/--seeds in the simulator, bad flags
refused in one line before anything runs, an interrupted emulated run stopping the
comparison (run_scenario faked: no fabric)."""

from __future__ import annotations

import json

import pytest

from coflowbed.cli.main import main
from coflowbed.emulation.runner import RunOutcome
from coflowbed.results.files import read_csv_rows
from tests.compare_fakes import write_run
from tests.data import SCENARIOS

TINY = str(SCENARIOS / "tiny-moe.yaml")


def test_sim_repeat_two_with_seeds(tmp_path, capsys):
    out = tmp_path / "c"
    argv = ["compare", TINY, "--policies", "fair,dp-first", "--sim", "--repeat", "2"]
    assert main([*argv, "--seeds", "1,2", "--out", str(out)]) == 0
    runs = read_csv_rows(out / "runs.csv")
    assert [(r["policy"], r["repetition"], r["seed"]) for r in runs] == [
        ("fair", 1, 1),
        ("dp-first", 1, 1),
        ("fair", 2, 2),
        ("dp-first", 2, 2),
    ]
    assert all((out / r["policy"] / f"r{r['repetition']}" / "summary.json").is_file() for r in runs)
    rows = {r["policy"]: r for r in read_csv_rows(out / "compare.csv")}
    dp = rows["dp-first"]
    assert dp["n"] == 2 and dp["iteration_time_s_ci_low"] < dp["iteration_time_s_ci_high"]
    # the fluid model: DP-first delays the pipeline, slower than fair beyond doubt
    assert dp["speedup_iteration_time_ci_high"] < 1
    printed = capsys.readouterr().out.splitlines()
    row = next(ln for ln in printed if ln.startswith("dp-first "))
    assert "±" in row and f"x{dp['speedup_iteration_time']:.3g} [" in row  # the short table
    assert "| dp-first | 2 | False |" in (out / "compare.md").read_text()  # the full one
    assert all(len(ln) <= 100 for ln in printed[: printed.index(row) + 1])
    # the answer once, in a sentence naming both measures: DP-first is worse on iteration
    (said,) = [ln for ln in printed if ln.startswith("dp-first is ")]
    assert said.startswith("dp-first is worse than fair on iteration time (")
    assert "on average CCT" in said
    for png in ("compare.png", "compare_iteration.png", "compare_cct_cdf.png"):
        assert (out / png).stat().st_size > 1000


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--repeat", "0"], "--repeat: must be an integer >= 1, got '0'"),
        (["--repeat", "two"], "--repeat: must be an integer >= 1, got 'two'"),
        (["--repeat", "3", "--seeds", "1,2"], "--seeds: 2 seeds for --repeat 3 (one each)"),
        (["--seeds", "x"], "--seeds: not a list of integers >= 0: 'x'"),
        (["--repeat", "2", "--seeds", "1,-2"], "--seeds: not a list of integers >= 0"),
    ],
)
def test_bad_flags_are_one_line_errors(tmp_path, capsys, flags, says):
    out = tmp_path / "c"
    assert main(["compare", TINY, "--policies", "fair", "--sim", *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("coflowbed: error: command line: ") and says in err
    assert "\n" not in err and not out.exists()


def test_an_interrupted_emulated_run_stops_the_comparison(tmp_path, monkeypatch, capsys):
    calls = []

    def fake(scen, out):  # the second run is Ctrl-C'd midway
        calls.append(scen.policy)
        interrupted = len(calls) == 2
        summary = write_run(out, 2.0, {"EP": 0.5}, partial=interrupted)
        return RunOutcome(out, summary, "KeyboardInterrupt" if interrupted else None, interrupted)

    monkeypatch.setattr("coflowbed.studies.single.run_scenario", fake)
    monkeypatch.setattr("coflowbed.studies.single.check_can_run", lambda scen: None)
    monkeypatch.setattr("coflowbed.studies.compare.check_can_run", lambda scen: None)
    out = tmp_path / "c"
    assert (
        main(["compare", TINY, "--policies", "fair,hermod", "--repeat", "2", "--out", str(out)])
        == 1
    )
    assert calls == ["fair", "hermod"]
    saved = json.loads((out / "compare.json").read_text())
    assert saved["partial"] and saved["interrupted"] and saved["excluded"] == ["hermod/r1"]
    assert saved["not_done"] == ["fair/r2", "hermod/r2"]
    assert [r["partial"] for r in read_csv_rows(out / "runs.csv")] == ["False", "True"]
