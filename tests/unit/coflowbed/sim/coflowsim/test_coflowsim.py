"""The CoflowSim model (``coflowbed.sim.coflowsim``) on hand-computed traces.

Units are CoflowSim's: a time step is 8 ms and moves 1 MB over a free 1 Gibit/s rack
port (C = 2^30 bit/s); jobs are admitted at the start of the 10 s epoch (10240 ms)
before the one their arrival falls in, and a CCT counts from that admission."""

from __future__ import annotations

import numpy as np
import pytest

from coflowbed.sim.coflowsim import run_trace
from coflowbed.sim.coflowsim.consts import RACK_BPS as C
from coflowbed.sim.coflowsim.dark import queue_of
from coflowbed.sim.coflowsim.javarandom import JavaRandom
from coflowbed.sim.coflowsim.jobs import build_workload
from coflowbed.sim.coflowsim.policies import Ordered
from coflowbed.sim.coflowsim.varys import _alpha, varys_rates
from workload.fbtrace import TraceCoflow

MB = 2**20


def cf(cid: str, mappers: tuple[int, ...], reducers: tuple[tuple[int, float], ...], at: int = 0):
    """A trace coflow arriving at ``at`` ms."""
    return TraceCoflow(cid, at, mappers, reducers)


def ccts(trace: list[TraceCoflow], policy: str) -> dict[str, float]:
    """CCT (CoflowSim ms) of every coflow of ``trace`` on 8 racks."""
    run = run_trace(trace, 8, policy)
    return {j.coflow_id: float(c) for j, c in zip(run.workload.jobs, run.outcome.cct_ms)}


def test_java_random_matches_java():
    """``new Random(17).nextDouble()`` x3 in Java 17 (jshell): 0.7323115139597316,
    0.6973704783607497, 0.08295611145017068."""
    rng = JavaRandom(17)
    got = [rng.next_double() for _ in range(3)]
    assert got == [0.7323115139597316, 0.6973704783607497, 0.08295611145017068]


def test_layout_merges_racks_and_rounds_to_mappers_mb():
    """Mappers on racks 1, 1, 2 merge into 2 rack mappers.  Reducers (3, 0.5 MB) and
    (3, 1.2 MB) round up to 1 + 2 = 3 MB, merge, and round up to a multiple of 2 MB:
    4 MB, 2 MB per flow.  Reducer (5, 1 MB) rounds to 2 MB: 1 MB per flow.  Alpha =
    max(6 MB / 2 mappers, 4 MB) = 4 MB; deadline = 4 MB / 128 MB/s x (1 + 0.7323...)
    x 1000 ms = 54.13 ms."""
    wl = build_workload([cf("1", (1, 1, 2), ((3, 0.5), (3, 1.2), (5, 1.0)))], 8)
    assert wl.flow_src.tolist() == [1, 2, 1, 2] and wl.flow_dst.tolist() == [3, 3, 5, 5]
    assert wl.flow_bytes.tolist() == [2 * MB, 2 * MB, MB, MB]
    assert wl.alpha[0] == 4 * MB
    assert wl.deadline_ms[0] == pytest.approx(4 / 128 * 1.7323115139597316 * 1000)


def test_admission_at_the_epoch_before_the_arrival():
    """Arrivals 10240 and 10241 ms: the first is admitted at 0 (10240 <= 0 + 10240), the
    second at 10240.  Each has one 1 MB flow on its own racks: one step, CCT 8 ms."""
    run = run_trace(
        [cf("a", (0,), ((1, 1.0),), 10240), cf("b", (2,), ((3, 1.0),), 10241)], 8, "sebf"
    )
    assert run.outcome.start_ms.tolist() == [0.0, 10240.0]
    assert run.outcome.cct_ms.tolist() == [8.0, 8.0]


def test_fair_takes_the_smaller_equal_share_and_leaves_the_rest():
    """A: 0->1 3 MB.  B: mappers 0, 3, 4 -> reducer 2, 3 MB: three 1 MB flows.  Each flow
    moves min(1 MB / flows at its receiver, 1 MB / flows at its sender) per step:
    A min(1/1, 1/2) = 1/2 MB, B's three min(1/3, .) = 1/3 MB.  B ends after 3 steps
    (24 ms); A moved 1.5 MB, has 1.5 MB left at 1 MB/step: 2 steps, ends at step 5
    (40 ms).  (Max-min would give A the 2/3 MB rack 0 has left: 32 ms.)"""
    got = ccts([cf("A", (0,), ((1, 3.0),)), cf("B", (0, 3, 4), ((2, 3.0),))], "fair")
    assert got == {"fbA": 40.0, "fbB": 24.0}


def test_fifo_madd_and_the_skipped_coflow_share():
    """A: 0->1 1 MB, first.  B: mappers 0, 3 -> reducer 2, 4 MB: 0->2 and 3->2, 2 MB each.
    FIFO: A's MADD rate is C (alpha = 1 MB at C), rack 0 is full, so B (bytes on rack
    0) is skipped and shares what is left as skipped coflows do: 3->2 gets
    min(C/1, C/1) = C, 0->2 nothing.  Step 1: A ends (8 ms), B's 3->2 has 1 MB left.
    B then: alpha = 3 MB (rack 2) at C; 0->2 gets 2 MB/alpha = 2C/3, 3->2 C/3, both end
    3 steps later: B ends at step 4 (32 ms)."""
    run = run_trace([cf("A", (0,), ((1, 1.0),)), cf("B", (0, 3), ((2, 4.0),))], 8, "fifo")
    assert run.outcome.cct_ms.tolist() == [8.0, 32.0]
    assert run.outcome.events == 3  # rates set at the admission and the 2 departures only


def test_sebf_orders_by_static_alpha_not_arrival():
    """A (first): 0->1 4 MB, alpha 4 MB.  B: 0->2 1 MB, alpha 1 MB: B goes first at C,
    A (bytes on the full rack 0) is skipped and gets nothing.  B ends after 1 step
    (8 ms), then A at C: 4 steps, ends at step 5 (40 ms).  FIFO gives A 32, B 40."""
    trace = [cf("A", (0,), ((1, 4.0),)), cf("B", (0,), ((2, 1.0),))]
    assert ccts(trace, "sebf") == {"fbA": 40.0, "fbB": 8.0}
    assert ccts(trace, "fifo") == {"fbA": 32.0, "fbB": 40.0}


def reducers(first, dst) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reducers per job, flows per reducer, reducer racks) of flows grouped by job
    (``first``), each job's flows to one receiver consecutive."""
    jr, rf, rack = [0], [], []
    for lo, hi in zip(first[:-1], first[1:]):
        for f in range(lo, hi):
            if f == lo or dst[f] != dst[f - 1]:
                rf.append(f)
                rack.append(dst[f])
        jr.append(len(rack))
    rf.append(first[-1])
    return tuple(np.array(x, dtype=np.int64) for x in (jr, rf, rack))


def varys(first, src, dst, rem_mb, order, edf, left_mb=None) -> list[float]:
    """``varys_rates`` of flows (src, dst, MB left) grouped by ``first``, in units of C;
    each reducer's running bytes left is the sum of its flows' unless ``left_mb``."""
    rate = np.zeros(len(src))
    arr = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    rem = np.array(rem_mb, dtype=np.float64) * MB
    jr, rf, rack = reducers(first, dst)
    sums = [rem[a:b].sum() for a, b in zip(rf[:-1], rf[1:])]
    left = np.array(sums if left_mb is None else np.array(left_mb) * MB, dtype=np.float64)
    alive = np.ones(len(src), dtype=np.bool_)
    varys_rates(arr(order), arr(edf), jr, rf, rack, arr(src), rem, alive, left, rate, 8)
    return (rate / C).tolist()


def test_skipped_coflows_split_the_ports_left_equally():
    """Coflow 0: 0->1 (1 MB) gets C by MADD; coflows 1 (0->2, 3->2) and 2 (0->3, 4->2)
    both have bytes on the full rack 0: skipped.  They share as one: the flows whose
    ports have capacity are 3->2 and 4->2, two at rack 2: each min(C/1, C/2) = C/2.
    Nothing is left for the top-up.  (Top-up alone would give 3->2 all of rack 2.)"""
    got = varys(
        [0, 1, 3, 5], [0, 0, 3, 0, 4], [1, 2, 2, 3, 2], [1, 1, 1, 1, 1], [0, 1, 2], [0, 1, 2]
    )
    assert got == [1.0, 0.0, 0.5, 0.0, 0.5]


def test_top_up_gives_each_flow_min_free_sender_free_receiver():
    """One coflow: 0->1 1 MB, 0->2 1 MB, 3->2 3 MB.  Alpha = 4 MB (rack 2) at C: MADD
    rates C/4, C/4, 3C/4.  Left: rack 0 sends C/2, rack 1 receives 3C/4, rack 2 0: the
    top-up adds min(C/2, 3C/4) = C/2 to 0->1 (3C/4) and nothing to the flows into 2."""
    got = varys([0, 3], [0, 0, 3], [1, 2, 2], [1, 1, 3], [0], [0])
    assert got == [0.75, 0.25, 0.75]


def test_madd_reads_the_reducers_running_bytes_left():
    """One coflow: 0->2 and 3->2, 1 MB left each, but reducer 2's own running count
    (``shuffleBytesLeft``) says 4 MB.  Alpha = 4 MB at C (not the flows' 2 MB): MADD
    gives each 1 MB / 4 MB x C = C/4, rack 2 has C/2 left; the top-up gives 0->2
    min(3C/4, C/2) = C/2 (3/4 in all) and 3->2 nothing.  From the flows' sum it would
    be C/2 each."""
    got = varys([0, 2], [0, 3], [2, 2], [1, 1], [0], [0], left_mb=[4])
    assert got == [0.75, 0.25]


def test_alpha_counts_a_negative_count_over_a_negative_free_port():
    """Job: reducer on rack 1 already ended (count -8 bytes, its flow 0->1 gone) and
    reducer on rack 2 (flow 3->2, 1 MB, count 1 MB).  Rack 1 receives -1 bit/s free
    (over-given by rounding), the rest C.  Not blocked (rack 1 has no bytes > 0).
    Rack 2 and rack 3 need 8 MB / C = 2^-7 s; rack 1's -8 x 8 / -1 = 64 s is the
    largest, and CoflowSim's ``Utils.max`` takes it: alpha 64 s, not 2^-7 s."""
    i64 = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    r_free = np.full(8, C)
    r_free[1] = -1.0
    alpha = _alpha(
        0,
        i64([0, 2]),
        i64([0, 1, 2]),
        i64([1, 2]),
        i64([0, 3]),
        np.array([0.0, MB]),
        np.array([False, True]),
        np.array([-8.0, MB]),
        np.full(8, C),
        r_free,
        np.zeros(8),
        np.zeros(8),
    )
    assert alpha == 64.0


def test_dclas_demotes_by_bytes_sent_at_the_next_arrival():
    """A (0 ms): 0->1 2000 MB alone at C.  B arrives at 10241 ms, admitted at 10240 ms
    (step 1280): A has sent 1280 MB > 1000 MB -> queue 3; B (0->2 100 MB) enters queue 0
    and goes first at C, A gets nothing on the full rack 0.  B ends 100 steps later
    (CCT 800 ms); A's 720 MB then take 720 steps: A ends at step 2100 (16800 ms).
    Without the demotion (FIFO) B would wait for A."""
    trace = [cf("A", (0,), ((1, 2000.0),)), cf("B", (0,), ((2, 100.0),), 10241)]
    assert ccts(trace, "dclas") == {"fbA": 16800.0, "fbB": 800.0}
    assert ccts(trace, "fifo")["fbB"] > 800.0


def test_dclas_queue_thresholds():
    """Queue 0 up to 10 MB sent, then one queue per factor 10: 10 MB -> 0, 10 MB + 1 ->
    1, 100 MB -> 1, 1000 MB + 1 -> 3."""
    assert [queue_of(x) for x in (10 * MB, 10 * MB + 1, 100 * MB, 1000 * MB + 1)] == [0, 1, 1, 3]


def test_unknown_policy_is_refused():
    """Only CoflowSim's four algorithms exist in this model."""
    with pytest.raises(ValueError, match="coflowsim model has fair, fifo, sebf, dclas"):
        run_trace([cf("A", (0,), ((1, 1.0),))], 8, "hermod")


def test_aliases_name_the_same_algorithm():
    """``varys`` is sebf and ``aalo`` dclas, as everywhere else."""
    trace = [cf("A", (0,), ((1, 4.0),)), cf("B", (0,), ((2, 1.0),))]
    assert run_trace(trace, 8, "varys").policy == "sebf"
    assert ccts(trace, "varys") == ccts(trace, "sebf")
    assert run_trace(trace, 8, "aalo").policy == "dclas"


def test_all_flows_finish_and_bytes_are_conserved():
    """Under every policy each flow of a random 12-coflow trace ends by its coflow's end."""
    rng = np.random.default_rng(3)
    trace = [
        cf(
            str(i),
            tuple(rng.integers(0, 8, 3).tolist()),
            ((int(rng.integers(0, 8)), 5.0),),
            300 * i,
        )
        for i in range(12)
    ]
    for policy in ("fair", "fifo", "sebf", "dclas"):
        run = run_trace(trace, 8, policy)
        out, wl = run.outcome, run.workload
        assert out.finished
        assert (out.flow_finish_ms <= out.finish_ms[wl.flow_job]).all()


def test_work_conservation_order_truncates_time_left_and_keeps_ties():
    """Jobs 0-3 (FIFO: priority order 0, 1, 2, 3) started at 0 with deadlines 0.5, 0,
    10.9 and 10.2 ms, at now = 1 ms: time left int(-0.5) = 0 (Java's cast truncates
    towards 0; flooring would give -1 and tie it with job 1), int(-1.0) = -1, int(9.9) =
    9, int(9.2) = 9.  Sorted stably: [1, 0, 2, 3] (2 and 3 tie: priority order)."""
    pol = Ordered(np.array([0.5, 0.0, 10.9, 10.2]))
    for j in range(4):
        pol.admit(j)
    assert pol.edf(np.zeros(4), 1.0).tolist() == [1, 0, 2, 3]
