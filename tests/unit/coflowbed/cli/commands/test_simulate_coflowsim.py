"""``coflowbed simulate --trace T --model coflowsim`` end to end, and its bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coflowbed.cli.main import main
from coflowbed.results.files import read_coflows_csv

# 8 racks.  A: 0->1 1 MB; B: mappers 0, 3 -> reducer 2, 4 MB (test_sim_coflowsim's FIFO
# case): A ends after 1 step (8 ms), B after 4 (32 ms); 1024 CoflowSim ms per second.
TRACE = "8 2\n1 0 1 0 1 1:1.0\n2 0 2 0 3 1 2:4.0\n"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "t.txt"
    p.write_text(TRACE)
    return p


def test_writes_the_run_files_with_model_coflowsim(trace, tmp_path, capsys):
    """CCTs 8/1024 and 32/1024 s, average 20/1024 s; summary says ``model: coflowsim``."""
    out = tmp_path / "out"
    argv = ["simulate", "--trace", str(trace), "--model", "coflowsim", "--policy", "fifo"]
    assert main([*argv, "--out", str(out)]) == 0
    rows = {r["coflow_id"]: r["cct_s"] for r in read_coflows_csv(out / "coflows.csv")}
    assert rows == {"fb1": 8 / 1024, "fb2": 32 / 1024}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "coflowsim" and summary["mode"] == "simulated"
    assert summary["avg_cct_s"] == pytest.approx(20 / 1024)
    assert summary["flows"] == 3 and (out / "flows.csv").exists()
    assert "complete (coflowsim model): 2/2 coflows" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "exact"], "--model: unknown model 'exact' (choose default or coflowsim)"),
        (["--model", "coflowsim", "--policy", "hermod"], "--policy: the coflowsim model has"),
        (["--model", "coflowsim", "--levels", "4"], "--levels: not with --model coflowsim"),
        (["--model", "coflowsim", "--fabric", "bigswitch"], "--fabric: not with --model"),
        (["--model", "coflowsim", "--limit", "0"], "--limit: must be >= 1, got 0"),
        (["--model", "coflowsim", "--skip", "9999"], "--skip: must be 0.."),
    ],
)
def test_bad_flags_one_line_exit_2_nothing_written(trace, tmp_path, capsys, extra, message):
    """Each bad flag: exit 2, one error line naming it, no results folder."""
    out = tmp_path / "out"
    assert main(["simulate", "--trace", str(trace), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_scenario_with_coflowsim_model_is_refused(tmp_path, capsys):
    """The model runs traces only."""
    assert main(["simulate", str(tmp_path / "s.yaml"), "--model", "coflowsim"]) == 2
    assert "--model coflowsim: runs a --trace only" in capsys.readouterr().err


def test_bad_trace_names_file_and_line(tmp_path, capsys):
    """A malformed trace line: the reader's ``file:line: reason``, exit 2."""
    bad = tmp_path / "bad.txt"
    bad.write_text("8 1\n1 0 1 x 1 1:1.0\n")
    assert main(["simulate", "--trace", str(bad), "--model", "coflowsim"]) == 2
    assert f"{bad}:2:" in capsys.readouterr().err
