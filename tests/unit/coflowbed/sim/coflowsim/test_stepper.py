"""CoflowSim's per-step replay (``coflowbed.sim.coflowsim.stepper``) on hand-built
states: one job with one reducer, flows given (bytes left, bytes per step)."""

from __future__ import annotations

import numpy as np

from coflowbed.sim.coflowsim.stepper import advance, moving

MB = 2.0**20


def one_reducer(rem: list[float], per_step: list[float], left: float):
    """(moving flows, reducer/job state, flow finish ms) of one job with one reducer."""
    n = len(rem)
    flows = np.arange(n, dtype=np.int64)
    mv = (
        np.zeros(1, dtype=np.int64),
        np.array([0, n], dtype=np.int64),
        flows,
        np.array(rem),
        np.array(per_step),
        np.ones(n, dtype=np.bool_),
    )
    st = (
        np.array([left]),
        np.zeros(1, dtype=np.bool_),
        np.array([n], dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.ones(1, dtype=np.int64),
        np.full(1, np.nan),
        np.full(1, np.nan),
    )
    return mv, st, np.full(n, np.nan)


def test_bytes_left_drop_one_step_at_a_time():
    """A flow of 2 MB + 0.001 bytes at 1 MB per step.  Stored, 2097152.001 is 2^21 +
    0.00100000016...; taking 2^20 off twice is exact and leaves 0.00100000016 > ZERO
    (10^-3): the flow (and its reducer, whose count is the same) ends in step 3, at
    24 ms.  The closed form ceil((2097152.001 - 0.001) / 2^20) gives 2: the
    subtraction rounds to 2^21 exactly."""
    size = 2 * MB + 1e-3
    mv, st, ends = one_reducer([size], [MB], size)
    assert advance(100, 0, mv, st, ends) == 3
    assert st[6][0] == 24.0 and ends[0] == 24.0


def test_a_reducer_ends_when_its_own_count_runs_out():
    """Flows of 1 and 2 MB at 1 MB per step; the reducer's running count says 0.5 MB.
    In step 1 the first flow takes it to -0.5 MB: at or below ZERO, so the reducer and
    its job end (8 ms) although the 2 MB flow still has 1 MB (it stays in the reducer's
    list).  The end sets the count to 0 and the second flow's 1 MB still comes off it
    in the same step, as in CoflowSim's loop: -1 MB (not -1.5 MB, nor 0)."""
    mv, st, ends = one_reducer([MB, 2 * MB], [MB, MB], MB / 2)
    assert advance(100, 0, mv, st, ends) == 1
    assert st[6][0] == 8.0
    assert mv[5].tolist() == [False, True] and mv[3][1] == MB
    assert st[0][0] == -MB


def test_a_reducer_ends_with_its_last_flow():
    """Flows of 1 and 3 MB at 1 MB per step, the count 4 MB: the count and the flows
    run out together in step 3; the job ends at 24 ms; the 1 MB flow at 8 ms."""
    mv, st, ends = one_reducer([MB, 3 * MB], [MB, MB], 4 * MB)
    assert advance(100, 0, mv, st, ends) == 3
    assert st[6][0] == 24.0 and ends.tolist() == [8.0, 24.0]


def test_only_flows_at_a_rate_move():
    """Reducers 0 (flows 0, 1) and 1 (flow 2) laid out; flow 1 has rate 0, reducer 1's
    flow too: only reducer 0 with flow 0 moves."""
    rf = np.array([0, 2, 3], dtype=np.int64)
    alive = np.ones(3, dtype=np.bool_)
    rate = np.array([1.0, 0.0, 0.0])
    left, done = np.array([2 * MB, MB]), np.zeros(2, dtype=np.bool_)
    reds, first, flows = moving(np.array([0, 1], dtype=np.int64), rf, alive, rate, left, done)
    assert reds.tolist() == [0] and first.tolist() == [0, 1] and flows.tolist() == [0]
