"""CoflowSim's time steps replayed exactly (``CoflowSimulator.proceedFlowsInAllRacks``),
compiled with numba: every 8 ms step each moving flow's bytes left drop by
``min((bps / 8) · (8 / 1024), bytes left)``, its reducer's running ``shuffleBytesLeft``
by the same amount, a flow at or below ``ZERO`` leaves its reducer's list, and a
reducer ends when its ``shuffleBytesLeft`` is at or below ``ZERO`` or its list is empty;
a job ends with its last reducer.  Same operations in the same order as CoflowSim, so
the same doubles: no closed form.

The moving flows are gathered per rate change (``moving``): the flows still in the
lists of the reducers CoflowSim laid out at the last admission (``flowsInRacks``) with
a rate other than 0, reducer by reducer.  A flow at rate 0 changes nothing, and reducers do
not interact within a step, so reducer-major order gives CoflowSim's numbers."""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim.coflowsim.consts import QUANTUM, SECOND, ZERO

STEP_FRACTION = 1.0 * QUANTUM / SECOND  # CoflowSim's (1.0 * quantaSize / SECOND_MILLIS)


@njit(cache=True)
def _count(laid, rf, alive, rate, left, done):
    """(moving reducers, moving flows) of the layout ``laid``."""
    n_red, n_flow = 0, 0
    for r in laid:
        k = 0
        for f in range(rf[r], rf[r + 1]):
            if alive[f] and rate[f] != 0.0:
                k += 1
        if k > 0 or (not done[r] and left[r] <= ZERO):
            n_red += 1
            n_flow += k
    return n_red, n_flow


@njit(cache=True)
def moving(laid, rf, alive, rate, left, done):
    """The reducers of ``laid`` that can change in a step and their flows at a rate
    other than 0: (reducers, offsets into the flows per reducer, flows)."""
    n_red, n_flow = _count(laid, rf, alive, rate, left, done)
    reds, first, flows = (
        np.empty(n_red, np.int64),
        np.zeros(n_red + 1, np.int64),
        np.empty(n_flow, np.int64),
    )
    k, i = 0, 0
    for r in laid:
        i0 = i
        for f in range(rf[r], rf[r + 1]):
            if alive[f] and rate[f] != 0.0:
                flows[i] = f
                i += 1
        if i > i0 or (not done[r] and left[r] <= ZERO):
            reds[k] = r
            k += 1
            first[k] = i
    return reds, first, flows


@njit(cache=True)
def _end_job(r, t_end, red_job, job_open, job_finish):
    """Reducer ``r`` ended at ``t_end``: 1 if that ends its job (finish stamped), else 0."""
    j = red_job[r]
    job_open[j] -= 1
    if job_open[j] > 0:
        return 0
    job_finish[j] = t_end
    return 1


@njit(cache=True)
def _move(lo, hi, r, t_end, mv, left, done, n_alive, flow_finish):
    """One step of the moving flows ``lo:hi`` of reducer ``r``, flow by flow as
    CoflowSim does it: bytes left, the flow leaving the list at or below ZERO, the
    reducer's count, and the end check (count at or below ZERO or list empty; the end
    sets the count to 0 and the later flows still count down).  A reducer without bytes
    ends in its first step, moving or not.  Returns whether the reducer ended."""
    flows, rem, per_step, alive = mv[2], mv[3], mv[4], mv[5]
    lf, na, was_done, dn = left[r], n_alive[r], done[r], done[r]
    for i in range(lo, hi):
        if alive[i]:
            b = per_step[i]
            if b > rem[i]:
                b = rem[i]
            rem[i] -= b
            if rem[i] <= ZERO:
                alive[i] = False
                flow_finish[flows[i]] = t_end
                na -= 1
            lf -= b
            if not dn and (lf <= ZERO or na == 0):
                dn, lf = True, 0.0
    if not dn and (lf <= ZERO or na == 0):
        dn, lf = True, 0.0
    left[r], n_alive[r], done[r] = lf, na, dn
    return dn and not was_done


@njit(cache=True)
def advance(n_max, step0, mv, st, flow_finish):
    """Up to ``n_max`` steps from step ``step0`` at fixed rates; stops after the first
    step in which a job ends.  ``mv`` = (reducers, offsets, flows, bytes left, bytes per
    step, still moving) of ``moving``; ``st`` = per reducer (``left``, done, flows in
    its list, job), per job (reducers open), reducer finish ms, job finish ms.  Returns
    the steps taken."""
    reds, first = mv[0], mv[1]
    left, done, n_alive, red_job, job_open, red_finish, job_finish = st
    for s in range(1, n_max + 1):
        t_end = (step0 + s) * QUANTUM
        departed = 0
        for k in range(len(reds)):
            r = reds[k]
            if _move(first[k], first[k + 1], r, t_end, mv, left, done, n_alive, flow_finish):
                red_finish[r] = t_end
                departed += _end_job(r, t_end, red_job, job_open, job_finish)
        if departed:
            return s
    return n_max
