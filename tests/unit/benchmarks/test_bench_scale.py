"""``benchmarks/bench_scale.py``'s child run: the figures it reports for one case come
from the run (its iteration's span, not a placeholder)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_scale.py"


def _bench():
    """The benchmark script as a module (``benchmarks/`` is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_scale", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_a_child_run_reports_the_iteration_time_of_its_run():
    """The smallest llama405b case: finished, its iteration time is the span of the
    simulator's only training iteration (the column read ``-`` when the spans' keys
    became (job, iteration) pairs and the script still looked up key 0)."""
    run = _bench().run_child("llama405b", 1024, "hermod", "bigswitch", 120.0)
    assert run.finished
    assert run.iteration_s is not None
    assert run.events > 0 and run.flows > 0
    # one iteration of 8 microbatches through 16 stages takes seconds, not nothing
    assert 1.0 < run.iteration_s < 100.0
