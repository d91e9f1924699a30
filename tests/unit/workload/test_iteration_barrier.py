"""Iterations with and without a barrier: may DP sync of iteration i overlap the
forward of iteration i+1 (the thesis's case III)?"""

from __future__ import annotations

import pytest

from workload import dagindex, generate
from workload.dag import CoflowType, Dag, node_id
from workload.placement import generic_hosts
from workload.presets import load_preset
from workload.schema import SpecError


def _dag(barrier: bool) -> Dag:
    """tiny-moe over two iterations, with or without the barrier."""
    job = load_preset("tiny-moe", {"iterations": 2, "iteration_barrier": barrier})
    return generate(job, generic_hosts(job.hosts_needed))


def _ancestors(dag: Dag, node: str) -> set[str]:
    """Every node ``node`` depends on, directly or not."""
    deps = {node_id(n): n.deps for n in dag.nodes()}
    seen: set[str] = set()
    todo = list(deps[node])
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(deps[n])
    return seen


def _ag_and_first_forward(dag: Dag) -> tuple[list[str], str]:
    """Iteration 0's all-gathers of stage 0 and iteration 1's first forward coflow (the
    EP dispatch of microbatch 0 at layer 0)."""
    ags = [
        c.coflow_id
        for c in dag.coflows
        if c.identity.iteration == 0
        and c.identity.collective == "all_gather"
        and c.identity.stage == 0
    ]
    (first,) = [
        c.coflow_id
        for c in dag.coflows
        if c.identity.iteration == 1
        and c.ctype is CoflowType.EP
        and c.identity.phase == "fwd"
        and c.identity.mid == 0
        and c.identity.lid == 0
        and c.coflow_id.endswith(".d")
    ]
    return ags, first


def test_without_barrier_an_all_gather_may_run_beside_the_next_first_forward():
    dag = _dag(barrier=False)
    ags, first = _ag_and_first_forward(dag)
    before = _ancestors(dag, first)
    # layer 1's all-gather is no ancestor of the forward of layer 0, nor the reverse
    free = [ag for ag in ags if ag not in before and first not in _ancestors(dag, ag)]
    assert free and all(".L1." in ag for ag in free)
    assert any(".L0." in ag for ag in ags if ag in before)  # layer 0's it waits for


def test_with_barrier_every_all_gather_precedes_the_next_first_forward():
    dag = _dag(barrier=True)
    ags, first = _ag_and_first_forward(dag)
    before = _ancestors(dag, first)
    assert ags and all(ag in before for ag in ags)
    dagindex.validate(dag)


def test_barrier_must_be_true_or_false():
    with pytest.raises(SpecError, match="iteration_barrier"):
        load_preset("tiny-moe", {"iteration_barrier": "yes"})
