"""DagExecutor on a fake backend with a simulated clock: dependency order, compute
delays, release times, iteration spans, failures and deadlines."""

from __future__ import annotations

import pytest

from coflowbed.emulation.executor import DagExecutor, RunFailed
from tests.fakes import FakeBackend, cf
from workload.dag import Coflow, CoflowIdentity, Compute, Dag


def test_chain_of_compute_and_coflows_respects_dependencies():
    # c1 (1 MB = 1 s at 8 Mbit/s) -> compute 0.5 s -> c2 (2 MB = 2 s)
    dag = Dag(
        coflows=[
            cf("c1", [("a", "b", 1_000_000)]),
            cf("c2", [("b", "a", 2_000_000)], deps=("k1",)),
        ],
        computes=[Compute("k1", "b", 0.5, deps=("c1",))],
    )
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    ex.run(deadline_s=100)
    r1, r2 = ex.coflow_records["c1"], ex.coflow_records["c2"]
    assert r1.arrival_s == 0 and r1.finish_s == pytest.approx(1.0)
    assert r2.arrival_s == pytest.approx(1.5) and r2.finish_s == pytest.approx(3.5)
    assert r2.cct_s == pytest.approx(2.0)
    assert be.finished_ids == ["c1", "c2"]
    (k1,) = ex.compute_records()  # compute.csv: it ran from c1's end for its 0.5 s
    assert (k1.host, k1.start_s, k1.finish_s) == ("b", pytest.approx(1.0), pytest.approx(1.5))


def test_release_time_delays_a_ready_coflow():
    dag = Dag(coflows=[cf("late", [("a", "b", 1_000_000)], release=2.0)])
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    ex.run(deadline_s=100)
    assert be.released == [("late", pytest.approx(2.0))]
    assert ex.coflow_records["late"].cct_s == pytest.approx(1.0)


def test_coflow_finishes_with_its_last_flow():
    dag = Dag(coflows=[cf("c", [("a", "b", 1_000_000), ("c", "d", 3_000_000)])])
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    ex.run(deadline_s=100)
    assert ex.coflow_records["c"].finish_s == pytest.approx(3.0)
    assert sorted(r.finish_s for r in ex.flow_records.values()) == pytest.approx([1.0, 3.0])


def test_iteration_spans_cover_their_nodes():
    dag = Dag(
        coflows=[
            cf("c0", [("a", "b", 1_000_000)], it=0),
            cf("c1", [("a", "b", 1_000_000)], deps=("c0",), it=1),
        ]
    )
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    ex.run(deadline_s=100)
    its = ex.iteration_records()
    assert [(i.iteration, i.start_s, i.finish_s) for i in its] == [
        (0, 0.0, pytest.approx(1.0)),
        (1, pytest.approx(1.0), pytest.approx(2.0)),
    ]


def test_failed_flow_stops_the_run_and_leaves_coflow_unfinished():
    dag = Dag(coflows=[cf("c", [("a", "b", 1_000_000)])])
    be = FakeBackend(fail="c.0")
    ex = DagExecutor(dag, be, clock=be.clock)
    with pytest.raises(RunFailed, match="c.0 failed"):
        ex.run(deadline_s=100)
    assert ex.coflow_records["c"].finish_s is None
    assert ex.iteration_records()[0].finish_s is None


def test_deadline_stops_a_run_that_cannot_finish():
    dag = Dag(coflows=[cf("c", [("a", "b", 100_000_000)])])  # 100 s at 8 Mbit/s
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    with pytest.raises(RunFailed, match="deadline"):
        ex.run(deadline_s=5)


def test_coflow_without_flows_completes_at_release():
    dag = Dag(
        coflows=[
            Coflow("empty", (), CoflowIdentity()),
            cf("next", [("a", "b", 1_000_000)], deps=("empty",)),
        ]
    )
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    ex.run(deadline_s=100)
    assert ex.coflow_records["empty"].cct_s == 0
    assert ex.coflow_records["next"].finish_s == pytest.approx(1.0)


def test_unfinished_flows_of_lost_hosts_split_released_and_waiting():
    dag = Dag(
        coflows=[
            cf("done", [("a", "b", 1_000)]),
            cf("cut", [("b", "c", 8_000_000), ("a", "d", 1_000)]),
            cf("later", [("c", "b", 1_000)], release=50.0),
            cf("elsewhere", [("a", "d", 1_000)], release=50.0),
        ]
    )
    be = FakeBackend(fail="cut.0")
    ex = DagExecutor(dag, be, clock=be.clock)
    with pytest.raises(RunFailed):
        ex.run(deadline_s=100)
    assert ex.unfinished_flows({"b"}) == (["cut.0"], ["later.0"])
    assert ex.unfinished_flows({"a"}) == ([], ["elsewhere.0"])


def test_iterations_are_per_job_and_a_start_delay_is_in_none():
    """Job a (1 MB, 1 s) from 0; job b waits 2 s (its start node), then 1 MB: b's
    iteration runs 2..3 s, its start node belongs to no iteration."""
    from workload.multijob import JobDag, merge_jobs

    one = Dag(coflows=[cf("c", [("a", "b", 1_000_000)])])
    two = Dag(coflows=[cf("c", [("c", "d", 1_000_000)])])
    dag = merge_jobs([JobDag("a", one), JobDag("b", two, 2.0)])
    be = FakeBackend()
    ex = DagExecutor(dag, be, clock=be.clock)
    ex.run(deadline_s=100)
    got = [(i.job, i.iteration, i.start_s, i.finish_s) for i in ex.iteration_records()]
    assert got == [
        ("a", 0, 0.0, pytest.approx(1.0)),
        ("b", 0, pytest.approx(2.0), pytest.approx(3.0)),
    ]
