"""CoflowSim's per-step arithmetic, bit for bit (numba): each 8 ms step a flow's
``bytesRemaining -= min(bytes per step, bytesRemaining)`` and it is done once at most
``ZERO`` bytes are left.  Rounding accumulates over thousands of steps, so the closed
form ``ceil((remaining - ZERO) / bytes per step)`` can be one step off when it lands
near a step boundary; there the steps are replayed."""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim.coflowsim.consts import ZERO

ROUNDING = 4.5e-16  # > 2x the relative rounding of one float64 subtraction


@njit(cache=True)
def _replay(rem, per_step):
    """Steps until ``rem`` is done, subtracting as CoflowSim does."""
    steps = 0
    while True:
        steps += 1
        rem -= min(per_step, rem)
        if rem <= ZERO:
            return float(steps)


@njit(cache=True)
def finish_steps(rem, per_step, estimate):
    """Exact steps to finish of each flow: ``estimate`` (the closed form, inf at rate 0)
    where no rounding can move it, else replayed."""
    out = estimate.copy()
    for i in range(len(rem)):
        b, k = per_step[i], estimate[i]
        if not (b > 0 and k < np.inf):
            continue
        slack = k * rem[i] * ROUNDING
        margin = k * b - (rem[i] - ZERO)
        if margin <= slack or b - margin <= slack:
            out[i] = _replay(rem[i], b)
    return out


@njit(cache=True)
def advance(rem, per_step, n):
    """``n`` steps of every flow, in place (a flow stops once done)."""
    for i in range(len(rem)):
        b, x = per_step[i], rem[i]
        if b <= 0:
            continue
        for _ in range(n):
            x -= min(b, x)
            if x <= ZERO:
                break
        rem[i] = x
