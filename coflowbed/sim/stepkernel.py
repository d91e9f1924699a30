"""Compiled per-event passes of the simulator over the active flows (numba): time to the
next completion, moving time forward, dropping finished flows.

Each is one pass over arrays aligned with the engine's active set (``active`` flow
indices, their ``rates`` in bit/s, their coflow ``cof``); as numpy expressions each took
five to ten passes and temporaries, at every one of tens of thousands of events.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# A flow completion less than this fraction of the clock before a release or compute end
# is taken with it, at its instant (``ahead``).
SAME_INSTANT = 1e-12


@njit(cache=True)
def next_finish(active, rates, remaining) -> float:
    """Seconds until the first moving flow delivers its last byte (inf: none moves)."""
    best = np.inf
    for j in range(active.size):
        if rates[j] > 0.0:
            t = remaining[active[j]] * 8.0 / rates[j]
            if t < best:
                best = t
    return best


@njit(cache=True)
def ahead(t_flow, t_dag) -> bool:
    """Whether a flow completion at ``t_flow`` comes before a release or compute end at
    ``t_dag`` by more than round-off (``SAME_INSTANT`` of the clock).  If not, the two
    are one event at ``t_dag`` (the flows finish at their own instants within it): two
    instants equal in exact arithmetic, reached by different sums, must give the same
    events in either loop, whichever way each rounded."""
    return t_flow + SAME_INSTANT * abs(t_flow) < t_dag


@njit(cache=True)
def next_coflow_end(active, rates, remaining, cof) -> float:
    """Seconds until the first coflow whose flows all move delivers its last byte (held
    rates: only then does anything change).  ``active`` is grouped by coflow."""
    best, run_end = np.inf, 0.0
    for j in range(active.size):
        left = remaining[active[j]]
        if left <= 0.0:
            t = 0.0  # finished, awaiting compaction
        else:
            t = left * 8.0 / rates[j] if rates[j] > 0.0 else np.inf
        if j == 0 or cof[j] != cof[j - 1]:
            run_end = t
        elif t > run_end:
            run_end = t
        if j + 1 == active.size or cof[j + 1] != cof[j]:
            best = min(best, run_end)
    return best


@njit(cache=True)
def advance(active, rates, cof, remaining, size, sent, moved, dt, start, finish_tol):
    """Deliver ``dt`` seconds of every moving flow (``remaining`` and per-coflow ``sent``
    and ``moved`` updated in place); return the positions of the flows now done and the
    instant each delivered its last byte (its own, under constant rates)."""
    done = np.empty(active.size, dtype=np.int64)
    when = np.empty(active.size)
    n_done = 0
    for j in range(active.size):
        rate = rates[j]
        if rate <= 0.0:
            continue
        i = active[j]
        left = remaining[i]
        got = min(rate * dt / 8.0, left)
        remaining[i] = left - got
        sent[cof[j]] += got
        moved[cof[j]] = True
        if remaining[i] <= max(finish_tol * size[i], 1e-6):
            done[n_done] = j
            when[n_done] = min(start + left * 8.0 / rate, start + dt)
            n_done += 1
    return done[:n_done], when[:n_done]


@njit(cache=True)
def compact(active, rates, cof, pid, level, paths) -> int:
    """Remove the finished flows (``level`` < 0) from the aligned arrays by shifting the
    rest down in place; return the new length."""
    m = 0
    while m < active.size and level[m] >= 0:  # nothing moves before the first removed
        m += 1
    for j in range(m, active.size):
        if level[j] < 0:
            continue
        active[m], rates[m], cof[m], pid[m], level[m] = (
            active[j],
            rates[j],
            cof[j],
            pid[j],
            level[j],
        )
        for k in range(paths.shape[1]):
            paths[m, k] = paths[j, k]
        m += 1
    return m


@njit(cache=True)
def retire(done, rates, level) -> None:
    """Flows at positions ``done`` finished: rate 0 and level -1 (skipped by every pass,
    removed at the next ``compact``)."""
    for j in done:
        rates[j] = 0.0
        level[j] = -1


@njit(cache=True)
def starting(active, rates, start_s, now) -> np.ndarray:
    """Flows that move for the first time: stamp ``start_s`` with ``now``; return their
    positions."""
    out = np.empty(active.size, dtype=np.int64)
    n = 0
    for j in range(active.size):
        i = active[j]
        if rates[j] > 0.0 and np.isnan(start_s[i]):
            start_s[i] = now
            out[n] = j
            n += 1
    return out[:n]


@njit(cache=True)
def finish(idx, when, coflow_of, remaining, finish_s, caps, sent, left) -> np.ndarray:
    """Flows ``idx`` delivered their last byte at ``when``: count what was left in
    ``sent``, zero ``remaining`` and ``caps``, stamp ``finish_s``, decrement ``left``
    per coflow; return the coflows that have no flow left now (each once)."""
    done = np.empty(idx.size, dtype=np.int64)
    n = 0
    for q in range(idx.size):
        i = idx[q]
        c = coflow_of[i]
        sent[c] += remaining[i]
        remaining[i] = 0.0
        finish_s[i] = when[q]
        caps[i] = 0.0
        left[c] -= 1
        if left[c] == 0:
            done[n] = c
            n += 1
    return done[:n]
