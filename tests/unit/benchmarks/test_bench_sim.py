"""``benchmarks/bench_sim.py``'s trace table: ``--reps`` rounds over the policies, a
row per run, and per policy the spread of its simulation times; ``--tol-sweep``:
finishing tolerances against the default."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest

from tests.scripts import load_script
from workload import fbtrace


def _bench():
    """``benchmarks/bench_sim.py`` as a module."""
    return load_script("bench_sim")


def run(sim_s: float, events: int = 10, avg: float = 1.5) -> dict:
    """The figures of one run that the spread reads."""
    return {"sim_s": sim_s, "events": events, "avg_cct_s": avg}


def test_spread_is_min_median_max_and_flags_differing_results():
    """Times 9.9, 12.7 and 10.6 s: min 9.90, median 10.60, max 12.70; a run with other
    events is flagged (the simulator is deterministic: that would be a bug)."""
    bench = _bench()
    line = bench.spread_line("dclas", [run(9.9), run(12.7), run(10.6)])
    assert "min 9.90, median 10.60, max 12.70; same results" in line
    assert "RESULTS DIFFER" in bench.spread_line("dclas", [run(1.0), run(1.0, events=11)])


def test_reps_rounds_over_the_policies(capsys):
    """Two rounds over fair and D-CLAS on 3 coflows: the rows come fair, dclas, fair,
    dclas, then one spread line per policy over its 2 runs."""
    bench = _bench()
    trace = fbtrace.read_trace(bench.FB)
    args = argparse.Namespace(
        policies="fair,dclas", limit=3, wall_limit=60.0, reps=2, finish_tol=bench.FINISH_TOL
    )
    bench.print_trace(args, trace)
    lines = capsys.readouterr().out.splitlines()
    rows = [ln.split()[0] for ln in lines[1:5]]
    assert rows == ["fair", "dclas", "fair", "dclas"]
    spread = [ln for ln in lines if "sim_s over" in ln]
    assert [ln.split()[0] for ln in spread] == ["fair", "dclas"]
    assert all(re.search(r"over 2 runs: .*same results", ln) for ln in spread)


def test_tol_line_ratio_to_the_default_and_differences():
    """Medians 4.0 s (default) and 3.0 s: x0.750; differences 0..1e-4 over 101 coflows:
    max 1.0e-04, 99th percentile 9.9e-05."""
    bench = _bench()
    base = {"tol": 1e-9, "walls": [4.2, 4.0, 3.9], "events": 9, "avg_cct_s": 2.0}
    base["diffs"] = np.zeros(3)
    diffs = np.linspace(0.0, 1e-4, 101)
    r = {"tol": 1e-4, "walls": [3.0, 3.1, 2.9], "events": 5, "avg_cct_s": 1.9, "diffs": diffs}
    line = bench.tol_line("dclas", r, base)
    assert "finish_tol 0.0001" in line and "(median 3.00, x0.750)" in line
    assert "events 5" in line and "max 1.0e-04 p99 9.9e-05" in line


def test_sweep_runs_the_default_first_and_differences_against_it(capsys):
    """On 40 coflows under D-CLAS: the default's line shows no difference to itself, and
    1e-2 merges completions (fewer events than the default) and moves some CCT."""
    bench = _bench()
    args = argparse.Namespace(policies="dclas", limit=40, reps=1, tol_sweep=[1e-2])
    bench.print_tolerances(args, fbtrace.read_trace(bench.FB))
    first, loose = capsys.readouterr().out.splitlines()
    assert "finish_tol 1e-09" in first and "x1.000" in first and "max 0.0e+00" in first
    events = [int(re.search(r"events (\d+)", ln).group(1)) for ln in (first, loose)]
    assert events[1] < events[0]
    assert "max 0.0e+00" not in loose


@pytest.mark.parametrize("text", ["1e-4,x", "0", "0.5"])
def test_bad_tol_sweep_exits_naming_the_item(text):
    bad = text.split(",")[-1]
    with pytest.raises(argparse.ArgumentTypeError, match=f"'{bad}': "):
        _bench().parse_tols(text)
