"""Merging several jobs' DAGs (workload.multijob): ids prefixed and tagged with the job,
a late job's start delay, Crux's GPU intensity."""

from __future__ import annotations

import math

import pytest

from workload import dagindex
from workload.dag import SETUP_ITERATION, Coflow, CoflowIdentity, CoflowType, Compute, Dag, Flow
from workload.multijob import JobDag, gpu_intensity, merge_jobs


def small_dag(scale: float = 1.0) -> Dag:
    """c0 (1 s on h0) -> cf (h0 -> h1, 1000 B) -> c1 (2 s on h1)."""
    cf = Coflow("cf", (Flow("cf.f", "h0", "h1", 1000),), CoflowIdentity(CoflowType.PP), ("c0",))
    computes = [Compute("c0", "h0", 1.0), Compute("c1", "h1", 2.0, ("cf",))]
    return Dag([cf], computes, {"byte_scale": scale})


def test_ids_are_prefixed_and_every_node_carries_its_job():
    dag = merge_jobs([JobDag("a", small_dag()), JobDag("b", small_dag())])
    dagindex.validate(dag)
    assert sorted(c.coflow_id for c in dag.coflows) == ["a/cf", "b/cf"]
    assert {cf.identity.job for cf in dag.coflows} == {"a", "b"}
    assert {(c.node_id, c.job, c.deps) for c in dag.computes if c.job == "b"} == {
        ("b/c0", "b", ()),
        ("b/c1", "b", ("b/cf",)),
    }
    assert dag.coflows[0].flows[0].flow_id == "a/cf.f" and dag.coflows[0].deps == ("a/c0",)


def test_a_late_job_waits_for_its_start_node():
    """start_s = 2.5: one setup compute of 2.5 s outside every iteration; the job's only
    root (c0) depends on it, nothing else changes."""
    dag = merge_jobs([JobDag("a", small_dag(), 2.5)])
    start = dag.computes[0]
    assert (start.node_id, start.duration_s, start.iteration) == ("a/start", 2.5, SETUP_ITERATION)
    assert [c.deps for c in dag.computes[1:]] == [("a/start",), ("a/cf",)]


def test_duplicate_names_and_mixed_byte_scales_are_refused():
    with pytest.raises(ValueError, match="duplicate job name 'a'"):
        merge_jobs([JobDag("a", small_dag()), JobDag("a", small_dag())])
    with pytest.raises(ValueError, match="different byte_scale"):
        merge_jobs([JobDag("a", small_dag(1.0)), JobDag("b", small_dag(0.5))])


def test_gpu_intensity_is_work_over_the_busiest_port_time():
    """W = 1 + 2 = 3 GPU-s; the busiest port carries 1000 B = 8000 bit, at 8000 bit/s
    t = 1 s: I = 3.  With gpus_per_host 4: W = 12, I = 12.  No traffic: inf."""
    dag = small_dag()
    assert gpu_intensity(dag, 8000.0) == pytest.approx(3.0)
    dag.meta["gpus_per_host"] = 4
    assert gpu_intensity(dag, 8000.0) == pytest.approx(12.0)
    assert math.isinf(gpu_intensity(Dag([], dag.computes), 8000.0))
