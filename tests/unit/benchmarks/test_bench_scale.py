"""``benchmarks/bench_scale.py``'s child run: the figures it reports for one case come
from the run (its iteration's span, not a placeholder)."""

from __future__ import annotations

import pytest

from tests.scripts import load_script


def _bench():
    """``benchmarks/bench_scale.py`` as a module."""
    return load_script("bench_scale")


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
