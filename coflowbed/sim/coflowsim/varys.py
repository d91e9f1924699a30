"""CoflowSim's rate allocation for coflow-ordered policies (FIFO, SEBF):
``CoflowSimulator.updateRatesDynamicAlpha``, compiled with numba, with its data and its
floating-point operations in its order.

A job's reducers own contiguous blocks of flows (``reducers.py``); ``alive`` marks the
flows still in their reducer's list (bytes left > ``ZERO``), which are the only ones
that get rates -- also those of a reducer already finished, as in CoflowSim.  In
``order`` (FIFO: arrival; SEBF: static alpha), each coflow's bottleneck time over the
capacity still free is its dynamic alpha (a reducer's received bytes are its own
running ``left``, a sender's the sum of its flows' bytes left), and each flow gets
``remaining·8 / alpha`` (MADD), cut to the smaller free capacity of its two ports when
it exceeds either; a coflow with bytes on a port that has no capacity left is skipped.
The skipped coflows then share what is left as one (equal split per port, the smaller
of the two; their use is subtracted once, summed over all of them), and a greedy pass
in ``edf`` order gives each flow ``min(free sender, free receiver)`` on top.  Rates are
bit/s; free capacities at or below ``ZERO`` count as none."""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim.coflowsim.consts import RACK_BPS, ZERO

JAVA_MIN_DOUBLE = 4.9e-324  # Double.MIN_VALUE, where Utils.max starts


@njit(cache=True)
def _blocked(j, jr, rf, rrack, src, s_free, r_free, s_bytes, r_bytes):
    """Whether job ``j`` has bytes on a port with no capacity left."""
    for r in range(jr[j], jr[j + 1]):
        if r_bytes[rrack[r]] > 0 and r_free[rrack[r]] <= ZERO:
            return True
        for f in range(rf[r], rf[r + 1]):
            if s_bytes[src[f]] > 0 and s_free[src[f]] <= ZERO:
                return True
    return False


@njit(cache=True, error_model="numpy")
def _slowest(j, jr, rf, rrack, src, s_free, r_free, s_bytes, r_bytes):
    """``max(bytes · 8 / free)`` over job ``j``'s ports, as ``Utils.max`` takes it: from
    ``Double.MIN_VALUE``, only values above it count (NaN, zero, negative do not; a
    finished reducer's negative ``left`` over a negative free capacity does)."""
    best = JAVA_MIN_DOUBLE
    for r in range(jr[j], jr[j + 1]):
        v = r_bytes[rrack[r]] * 8 / r_free[rrack[r]]
        if v > best:
            best = v
        for f in range(rf[r], rf[r + 1]):
            v = s_bytes[src[f]] * 8 / s_free[src[f]]
            if v > best:
                best = v
    return best


@njit(cache=True)
def _alpha(j, jr, rf, rrack, src, rem, alive, left, s_free, r_free, s_bytes, r_bytes):
    """``calcAlphaOnline``: seconds job ``j`` needs at the free capacities (-1: a port
    it has bytes on has none).  Uses and clears the scratch arrays."""
    for r in range(jr[j], jr[j + 1]):
        r_bytes[rrack[r]] = left[r]
        for f in range(rf[r], rf[r + 1]):
            if alive[f]:
                s_bytes[src[f]] += rem[f]
    if _blocked(j, jr, rf, rrack, src, s_free, r_free, s_bytes, r_bytes):
        best = -1.0
    else:
        best = _slowest(j, jr, rf, rrack, src, s_free, r_free, s_bytes, r_bytes)
    for r in range(jr[j], jr[j + 1]):
        r_bytes[rrack[r]] = 0.0
        for f in range(rf[r], rf[r + 1]):
            s_bytes[src[f]] = 0.0
    return best


@njit(cache=True)
def _give(f, bps, s, d, rate, s_used, r_used):
    """Flow ``f`` (``s`` -> ``d``) gets ``bps``; its ports' use is remembered."""
    rate[f] = bps
    s_used[s] += bps
    r_used[d] += bps


@njit(cache=True)
def _take(jobs, jr, rf, rrack, src, s_free, r_free, s_used, r_used):
    """Subtract the remembered use from the free capacities, once per port, and clear it
    (CoflowSim subtracts every port's sum once: ``x - 0`` leaves the others alone)."""
    for j in jobs:
        for r in range(jr[j], jr[j + 1]):
            d = rrack[r]
            r_free[d] -= r_used[d]
            r_used[d] = 0.0
            for f in range(rf[r], rf[r + 1]):
                s_free[src[f]] -= s_used[src[f]]
                s_used[src[f]] = 0.0


@njit(cache=True)
def _madd(j, alpha, jr, rf, rrack, src, rem, alive, rate, s_free, r_free, s_used, r_used):
    """``updateRatesDynamicAlphaOneJob``: MADD rates of job ``j`` at ``alpha`` seconds."""
    for r in range(jr[j], jr[j + 1]):
        d = rrack[r]
        if r_free[d] <= ZERO:
            continue
        for f in range(rf[r], rf[r + 1]):
            if alive[f]:
                bps = rem[f] * 8 / alpha
                if bps > s_free[src[f]] or bps > r_free[d]:
                    bps = min(s_free[src[f]], r_free[d])
                _give(f, bps, src[f], d, rate, s_used, r_used)


@njit(cache=True)
def _share(jobs, jr, rf, rrack, src, alive, rate, s_free, r_free, s_used, r_used):
    """``updateRatesFairShare``: the coflows ``jobs`` split the free capacity as one."""
    s_n, r_n = np.zeros(len(s_free), np.int64), np.zeros(len(r_free), np.int64)
    for j in jobs:
        for r in range(jr[j], jr[j + 1]):
            d = rrack[r]
            for f in range(rf[r], rf[r + 1]):
                if alive[f] and r_free[d] > ZERO and s_free[src[f]] > ZERO:
                    s_n[src[f]] += 1
                    r_n[d] += 1
    for j in jobs:
        for r in range(jr[j], jr[j + 1]):
            d = rrack[r]
            if r_free[d] <= ZERO or r_n[d] == 0:
                continue
            for f in range(rf[r], rf[r + 1]):
                s = src[f]
                if alive[f] and s_free[s] > ZERO and s_n[s] != 0:
                    bps = min(s_free[s] / s_n[s], r_free[d] / r_n[d])
                    _give(f, bps if bps > ZERO else 0.0, s, d, rate, s_used, r_used)


@njit(cache=True)
def _top_up(edf, jr, rf, rrack, src, alive, rate, s_free, r_free):
    """Greedy work conservation: each flow in ``edf`` order adds min(free src, free dst)."""
    for j in edf:
        for r in range(jr[j], jr[j + 1]):
            d = rrack[r]
            if r_free[d] <= ZERO:
                continue
            for f in range(rf[r], rf[r + 1]):
                if alive[f]:
                    extra = min(s_free[src[f]], r_free[d])
                    if extra <= ZERO:
                        extra = 0.0
                    rate[f] += extra
                    s_free[src[f]] -= extra
                    r_free[d] -= extra


@njit(cache=True)
def _reset(j, jr, rf, alive, rate):
    """Zero the rates of job ``j``'s flows still in their reducers' lists."""
    for f in range(rf[jr[j]], rf[jr[j + 1]]):
        if alive[f]:
            rate[f] = 0.0


@njit(cache=True)
def varys_rates(order, edf, jr, rf, rrack, src, rem, alive, left, rate, racks):
    """All rates (bit/s, into ``rate``) of the active jobs ``order`` (priority order)
    and ``edf`` (the same jobs in work-conservation order); ``jr``/``rf``/``rrack`` are
    ``Reducers.job_first``/``first``/``rack``, ``left`` each reducer's running bytes
    left.  Returns how many jobs were skipped."""
    s_free, r_free = np.full(racks, RACK_BPS), np.full(racks, RACK_BPS)
    s_tmp, r_tmp = np.zeros(racks), np.zeros(racks)
    skipped = np.empty(len(order), dtype=np.int64)
    n_skipped = 0
    for i in range(len(order)):
        j = order[i]
        _reset(j, jr, rf, alive, rate)
        alpha = _alpha(j, jr, rf, rrack, src, rem, alive, left, s_free, r_free, s_tmp, r_tmp)
        if alpha == -1.0:
            skipped[n_skipped] = j
            n_skipped += 1
            continue
        _madd(j, alpha, jr, rf, rrack, src, rem, alive, rate, s_free, r_free, s_tmp, r_tmp)
        _take(order[i : i + 1], jr, rf, rrack, src, s_free, r_free, s_tmp, r_tmp)
    _share(skipped[:n_skipped], jr, rf, rrack, src, alive, rate, s_free, r_free, s_tmp, r_tmp)
    _take(skipped[:n_skipped], jr, rf, rrack, src, s_free, r_free, s_tmp, r_tmp)
    _top_up(edf, jr, rf, rrack, src, alive, rate, s_free, r_free)
    return n_skipped
