"""``benchmarks/bench_sim.py``'s trace table: ``--reps`` rounds over the policies, a
row per run, and per policy the spread of its simulation times."""

from __future__ import annotations

import argparse
import re

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
    args = argparse.Namespace(policies="fair,dclas", limit=3, wall_limit=60.0, reps=2)
    bench.print_trace(args, trace)
    lines = capsys.readouterr().out.splitlines()
    rows = [ln.split()[0] for ln in lines[1:5]]
    assert rows == ["fair", "dclas", "fair", "dclas"]
    spread = [ln for ln in lines if "sim_s over" in ln]
    assert [ln.split()[0] for ln in spread] == ["fair", "dclas"]
    assert all(re.search(r"over 2 runs: .*same results", ln) for ln in spread)
