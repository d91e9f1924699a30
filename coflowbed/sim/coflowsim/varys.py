"""CoflowSim's rate allocation for coflow-ordered policies (FIFO, SEBF):
``CoflowSimulator.updateRatesDynamicAlpha``, compiled with numba.

In ``order`` (FIFO: arrival; SEBF: static alpha), each coflow's bottleneck time over the
capacity still free is its dynamic alpha, and each of its flows gets ``remaining·8 /
alpha`` (MADD), cut to the smaller free capacity of its two ports when it exceeds either;
a coflow with bytes on a port that has no capacity left is skipped.  The skipped coflows
then share what is left as one (equal split per port, the smaller of the two), and a
greedy pass in ``edf`` order gives each flow ``min(free sender, free receiver)`` on top.
Rates are bit/s; free capacities below ``ZERO`` count as none."""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim.coflowsim.consts import RACK_BPS, ZERO


@njit(cache=True)
def _alpha(lo, hi, src, dst, rem, done, s_free, r_free, s_bytes, r_bytes):
    """Seconds the coflow's flows ``lo:hi`` need at the free capacities (-1: a port it
    uses has none).  Uses and clears the scratch arrays ``s_bytes``/``r_bytes``."""
    for f in range(lo, hi):
        if not done[f]:
            s_bytes[src[f]] += rem[f]
            r_bytes[dst[f]] += rem[f]
    best, blocked = 4.9e-324, False
    for f in range(lo, hi):
        s, d = src[f], dst[f]
        if (s_bytes[s] > 0 and s_free[s] <= ZERO) or (r_bytes[d] > 0 and r_free[d] <= ZERO):
            blocked = True
        elif not done[f]:
            best = max(best, s_bytes[s] * 8 / s_free[s], r_bytes[d] * 8 / r_free[d])
    for f in range(lo, hi):
        s_bytes[src[f]] = 0.0
        r_bytes[dst[f]] = 0.0
    return -1.0 if blocked else best


@njit(cache=True)
def _take(lo, hi, src, dst, rate, done, s_free, r_free, s_used, r_used):
    """Subtract what flows ``lo:hi`` were given from the free capacities, port by port
    (summed first, as CoflowSim does)."""
    for f in range(lo, hi):
        if not done[f]:
            s_used[src[f]] += rate[f]
            r_used[dst[f]] += rate[f]
    for f in range(lo, hi):
        s, d = src[f], dst[f]
        s_free[s] -= s_used[s]
        r_free[d] -= r_used[d]
        s_used[s] = 0.0
        r_used[d] = 0.0


@njit(cache=True)
def _madd(lo, hi, alpha, src, dst, rem, done, rate, s_free, r_free):
    """MADD rates of one coflow's flows at its dynamic ``alpha`` (seconds)."""
    for f in range(lo, hi):
        if done[f] or r_free[dst[f]] <= ZERO:
            continue
        bps = rem[f] * 8 / alpha
        if bps > s_free[src[f]] or bps > r_free[dst[f]]:
            bps = min(s_free[src[f]], r_free[dst[f]])
        rate[f] = bps


@njit(cache=True)
def _share(jobs, first, src, dst, done, rate, s_free, r_free, s_n, r_n):
    """``updateRatesFairShare``: the coflows ``jobs`` split the free capacity as one."""
    for j in jobs:
        for f in range(first[j], first[j + 1]):
            if not done[f] and r_free[dst[f]] > ZERO and s_free[src[f]] > ZERO:
                s_n[src[f]] += 1
                r_n[dst[f]] += 1
    for j in jobs:
        for f in range(first[j], first[j + 1]):
            s, d = src[f], dst[f]
            if done[f] or r_free[d] <= ZERO or r_n[d] == 0 or s_free[s] <= ZERO or s_n[s] == 0:
                continue
            bps = min(s_free[s] / s_n[s], r_free[d] / r_n[d])
            rate[f] = bps if bps > ZERO else 0.0
    s_n[:] = 0
    r_n[:] = 0


@njit(cache=True)
def _top_up(edf, first, src, dst, done, rate, s_free, r_free):
    """Greedy work conservation: each flow in ``edf`` order adds min(free src, free dst)."""
    for j in edf:
        for f in range(first[j], first[j + 1]):
            if done[f] or r_free[dst[f]] <= ZERO:
                continue
            extra = min(s_free[src[f]], r_free[dst[f]])
            if extra <= ZERO:
                extra = 0.0
            rate[f] += extra
            s_free[src[f]] -= extra
            r_free[dst[f]] -= extra


@njit(cache=True)
def varys_rates(order, edf, first, src, dst, rem, done, rate, racks):
    """All rates (bit/s, into ``rate``) of the active coflows ``order`` (priority order)
    and ``edf`` (the same coflows in work-conservation order); returns how many coflows
    were skipped."""
    s_free = np.full(racks, RACK_BPS)
    r_free = np.full(racks, RACK_BPS)
    s_tmp, r_tmp = np.zeros(racks), np.zeros(racks)
    skipped = np.empty(len(order), dtype=np.int64)
    n_skipped = 0
    for j in order:
        lo, hi = first[j], first[j + 1]
        rate[lo:hi] = 0.0
        alpha = _alpha(lo, hi, src, dst, rem, done, s_free, r_free, s_tmp, r_tmp)
        if alpha < 0:
            skipped[n_skipped] = j
            n_skipped += 1
            continue
        _madd(lo, hi, alpha, src, dst, rem, done, rate, s_free, r_free)
        _take(lo, hi, src, dst, rate, done, s_free, r_free, s_tmp, r_tmp)
    s_n, r_n = np.zeros(racks, dtype=np.int64), np.zeros(racks, dtype=np.int64)
    _share(skipped[:n_skipped], first, src, dst, done, rate, s_free, r_free, s_n, r_n)
    for j in skipped[:n_skipped]:
        _take(first[j], first[j + 1], src, dst, rate, done, s_free, r_free, s_tmp, r_tmp)
    _top_up(edf, first, src, dst, done, rate, s_free, r_free)
    return n_skipped
