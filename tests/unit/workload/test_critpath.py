"""Critical-path lower bound on iteration time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workload import critical_path, generate
from workload.critpath import iteration_bounds
from workload.dag import Coflow, CoflowIdentity, Compute, Dag, Flow
from workload.placement import generic_hosts
from workload.presets import load_preset

MB = 1_000_000


def test_hand_computed_bound():
    # c0 (1 s) -> x: a->b 1 MB and c->b 1 MB (b receives 2 MB: 2 s at 8 Mbit/s)
    #          -> c1 (0.5 s); y (released at 4 s, 1 MB a->c: 1 s) runs beside them.
    dag = Dag(
        coflows=[
            Coflow("x", (Flow("x:0", "a", "b", MB), Flow("x:1", "c", "b", MB)), deps=("c0",)),
            Coflow("y", (Flow("y:0", "a", "c", MB),), CoflowIdentity(), (), 4.0),
        ],
        computes=[Compute("c0", "a", 1.0), Compute("c1", "b", 0.5, ("x",), iteration=1)],
    )
    assert critical_path(dag, 8e6) == pytest.approx(5.0)  # y: 4 s + 1 s
    assert iteration_bounds(dag, 8e6) == pytest.approx({0: 5.0, 1: 3.5})


def test_bound_grows_as_links_slow_and_covers_compute():
    job = load_preset("tiny-moe")
    dag = generate(job, generic_hosts(job.hosts_needed))
    fast, slow = critical_path(dag, 1e9), critical_path(dag, 50e6)
    busiest_host = max(sum(c.duration_s for c in dag.computes if c.host == h) for h in dag.hosts())
    assert busiest_host <= fast < slow
    ids = {c.node_id for c in dag.computes}
    compute_only = Dag(
        [], [replace(c, deps=tuple(d for d in c.deps if d in ids)) for c in dag.computes], {}
    )
    assert critical_path(compute_only, 1e9) < fast


def test_rejects_bad_rate():
    with pytest.raises(ValueError):
        critical_path(Dag(), 0)
