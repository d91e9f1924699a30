"""``benchmarks/bench_release.py``: the release-path table is read from each emulated run
folder's ``summary.json`` (its numbers, not placeholders), and a folder without emulated
runs is said so with exit 2."""

from __future__ import annotations

import json

from tests.scripts import load_script

RELEASE = {
    "start_ms": {"count": 4, "median": 4.1, "p95": 17.9, "max": 20.0},
    "first_byte_ms": {"count": 4, "median": 9.1, "p95": 30.6, "max": 31.0},
    "write_ms": {"count": 2, "median": 2.5, "p95": 16.3, "max": 17.0},
    "releases": 2,
}


def _run(folder, policy, release, ratio, delayed):
    """A run folder with the parts of summary.json the table reads."""
    folder.mkdir(parents=True)
    summary = {
        "policy": policy,
        "release": release,
        "level_change_s": {"count": 560, "median": 0.0052, "p95": 0.0139},
        "level_moves": {"up": 265, "down": 251},
        "retransmitted": {"share": 0.0263},
        "fidelity": {"iteration_ratio": ratio, "iteration_ratio_with_delay": delayed},
    }
    (folder / "summary.json").write_text(json.dumps(summary))


def test_each_emulated_run_is_a_row_of_its_own_figures(tmp_path, capsys):
    _run(tmp_path / "cmp" / "sebf-1", "sebf", RELEASE, 1.314, 1.270)
    _run(tmp_path / "cmp" / "sim-fair-1", "fair", None, None, None)  # not emulated
    assert load_script("bench_release").main([str(tmp_path / "cmp")]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "sebf-1" in line]
    assert len(rows) == 1
    cells = rows[0].split()
    assert cells[1:5] == ["sebf", "4.1/17.9", "9.1/30.6", "2.5/16.3"]
    assert cells[5:7] == ["5.2/13.9", "(560)"]
    assert cells[7:] == ["516", "2.63", "1.314", "1.270"]


def test_no_emulated_run_is_said_with_exit_2(tmp_path, capsys):
    assert load_script("bench_release").main([str(tmp_path)]) == 2
    assert "no emulated run folder" in capsys.readouterr().out
