"""Compiled core of CoflowSim's FAIR (``fair``): per rack pair, bytes moved per flow
and bytes per step; flows grouped by pair (CSR), each with its finishing mark
(pair's bytes moved at admission + size - ZERO).  ``run_until`` jumps from one step in
which flows finish to the next, up to a given step."""

from __future__ import annotations

import math

from numba import njit

from coflowbed.sim.coflowsim.consts import QUANTUM, QUANTUM_BYTES, ZERO

PENDING, ACTIVE, DONE = 0, 1, 2  # flow status


@njit(cache=True)
def admit_flows(lo, hi, flow_pair, size, status, mark, moved, first_mark, n_src, n_dst, src, dst):
    """Flows ``lo:hi`` (one job) join their pairs."""
    for f in range(lo, hi):
        p = flow_pair[f]
        status[f] = ACTIVE
        mark[f] = moved[p] + size[f] - ZERO
        first_mark[p] = min(first_mark[p], mark[f])
        n_src[src[p]] += 1
        n_dst[dst[p]] += 1


@njit(cache=True)
def reshare(first_mark, per_step, n_src, n_dst, src, dst):
    """Bytes per step of every busy pair: min(1 MB / flows at dst, 1 MB / flows at src)."""
    for p in range(len(per_step)):
        if first_mark[p] < math.inf:
            per_step[p] = min(QUANTUM_BYTES / n_dst[dst[p]], QUANTUM_BYTES / n_src[src[p]])


@njit(cache=True)
def _steps(mark, moved, step):
    """Steps until a flow with ``mark`` is done, from ``moved`` at ``step`` bytes/step."""
    return max(1.0, math.ceil((mark - moved) / step))


@njit(cache=True)
def _next_jump(first_mark, moved, per_step, limit):
    """Steps to the next finishing step (at most ``limit``)."""
    n = limit
    for p in range(len(moved)):
        if first_mark[p] < math.inf:
            n = min(n, _steps(first_mark[p], moved[p], per_step[p]))
    return n


@njit(cache=True)
def _pop(p, n, before, pair_first, pair_flows, status, mark, per_step, first_mark, done):
    """Mark the flows of pair ``p`` that finish within ``n`` steps; return how many."""
    count, best = 0, math.inf
    for i in range(pair_first[p], pair_first[p + 1]):
        f = pair_flows[i]
        if status[f] != ACTIVE:
            continue
        if _steps(mark[f], before, per_step[p]) <= n:
            status[f] = DONE
            done[count] = f
            count += 1
        else:
            best = min(best, mark[f])
    first_mark[p] = best
    return count


@njit(cache=True)
def _finish(count, end, state, flows, jobs):
    """Record the ``count`` flows in the scratch list as done at ``end`` (and the jobs
    they complete)."""
    _, _, flow_job, flow_finish, done = flows
    left, finish = jobs
    for i in range(count):
        f = done[i]
        flow_finish[f] = end
        j = flow_job[f]
        left[j] -= 1
        if left[j] == 0:
            finish[j] = end
            state[1] -= 1


@njit(cache=True)
def _jump(n, state, pairs, flows, jobs):
    """``n`` steps at the current shares; retire the flows that finish in the last."""
    moved, per_step, first_mark, n_src, n_dst, src, dst, pair_first, pair_flows = pairs
    status, mark, _, _, done = flows
    end = (state[0] + n) * QUANTUM
    for p in range(len(moved)):
        if first_mark[p] == math.inf:
            continue
        before = moved[p]
        moved[p] += per_step[p] * n
        if _steps(first_mark[p], before, per_step[p]) > n:
            continue
        count = _pop(p, n, before, pair_first, pair_flows, status, mark, per_step, first_mark, done)
        n_src[src[p]] -= count
        n_dst[dst[p]] -= count
        _finish(count, end, state, flows, jobs)
    state[0] += n


@njit(cache=True)
def run_until(limit_step, state, pairs, flows, jobs):
    """Advance from ``state[0]`` (step) to the first step >= ``limit_step`` or until no flow
    is active; returns the number of share changes.  ``state`` = [step, active jobs]."""
    moved, per_step, first_mark, n_src, n_dst, src, dst, _, _ = pairs
    events = 0
    while state[0] < limit_step and state[1] > 0:
        n = _next_jump(first_mark, moved, per_step, limit_step - state[0])
        _jump(n, state, pairs, flows, jobs)
        reshare(first_mark, per_step, n_src, n_dst, src, dst)
        events += 1
    return events
