"""Per-group virtual time for the compiled flow-completion runs (numba): a group's bytes
served per member are a line ``served(t) = served0 + rate * (t - t0) / 8``, rebased only
when its rate changes, so an event no longer touches every moving group.

Per group the clock keeps ``t0`` (when ``served0`` was taken), ``h_left`` and ``h_tol``
(its first unfinished member's bytes left at build time and finishing tolerance), and
two instants: ``t_end`` when that member delivers its last byte and ``t_due`` when it
comes within its tolerance (both inf without rate or members).  The next completion is
the smallest ``t_end`` and the groups due at an event are those with ``t_due <= now``.
Both are taken per level from a short *near list* (the groups whose ``t_due`` is below
a bound above the level's smallest ``t_end``; a group whose instants change joins it if
they fall below the bound), and over all the level's groups only when time reaches
the bound; the answers are the same, exactly, as a pass over every group.

With byte thresholds (one coflow per group) each coflow's bytes sent are a line too:
``sent(t) = sent0 + c_rate * (t - c_t0)``, with ``t_thr`` the instant it reaches its next
threshold.  ``c_rate`` is summed over the coflow's groups when the run starts; after that
each change of a group (its rate, or members finishing) adds its difference to ``c_delta``
and the coflow's line is redone once per event with the sum of them.  A coflow of thousands
of groups is then not summed again for the few that changed; the sum differs from summing
again in the last digits only (docs/measurements/simulator-speed.md, "Freed memory kept,
coflow rates by differences, restarts from round 0").

Layout: ``clk`` = (t0, h_left, h_tol, t_end, t_due); ``cclk`` = (c_rate, c_t0, t_thr,
coflows of the run, touched flags, touched list, [touched count], c_delta).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim.kernel import ix

NEAR = 256  # groups a level's near list holds about when taken in full (if it has more)
SAMPLE = 4  # a level of more than SAMPLE * NEAR groups sets its bound from a sample


@njit(cache=True)
def served_at(served0, t0, rate, now) -> float:
    """Bytes served per member at ``now`` on a line taken at ``t0``."""
    return served0 + rate * (now - t0) / 8.0


@njit(cache=True)
def head_of(g, m_start, m_pos, head, rem0, active, size, tol, clk) -> None:
    """Cache group ``g``'s first unfinished member's bytes left and tolerance."""
    if head[g] < m_start[g + 1]:
        p = m_pos[head[g]]
        clk[1][g], clk[2][g] = rem0[p], max(tol * size[active[p]], 1e-6)


@njit(cache=True)
def instants(g, weight, g_rate, served, clk) -> None:
    """``t_end`` and ``t_due`` of group ``g`` from its line (inf: never)."""
    t0, h_left, h_tol, t_end, t_due = clk
    rate = g_rate[g]
    if weight[g] <= 0 or rate <= 0.0:
        t_end[g], t_due[g] = np.inf, np.inf
        return
    left, per_byte = h_left[g] - served[g], 8.0 / rate  # one division, not two
    t_end[g] = t0[g] + left * per_byte
    t_due[g] = t0[g] + (left - h_tol[g]) * per_byte


@njit(cache=True)
def start(grp, active, size, tol, now) -> tuple:
    """A clock of every group at ``now`` (counters all taken now)."""
    _lvb, m_start, m_pos, rem0, _paths, g_rate, weight, _gc, _st, head, served = grp
    n = g_rate.size
    clk = (np.full(n, now), np.zeros(n), np.zeros(n), np.empty(n), np.empty(n))
    for g in range(n):
        head_of(g, m_start, m_pos, head, rem0, active, size, tol, clk)
        instants(g, weight, g_rate, served, clk)
    return clk


@njit(cache=True)
def earliest(times) -> float:
    """The smallest of ``times`` (inf if none is finite)."""
    return np.min(times) if times.size else np.inf


@njit(cache=True)
def level_clock(lv_bounds) -> tuple:
    """Per level the smallest ``t_end`` and ``t_due`` of its groups, whether they must be
    taken again (``stale``: every level at first), and its *near list*: the groups that
    may come due before the level's ``bound`` (every group whose ``t_due`` is below it,
    and maybe some that moved past it since), held in the level's own id range of
    ``near`` (``n_near`` each, ``in_near`` per group); ``buf`` per group for the groups
    due.  ``bound`` -inf at first: nothing is near until a level is taken in full."""
    n_lv, n = lv_bounds.size - 1, lv_bounds[-1]
    return (
        np.full(n_lv, np.inf),
        np.full(n_lv, np.inf),
        np.ones(n_lv, np.bool_),
        np.full(n_lv, -np.inf),
        np.zeros(n_lv, np.int64),
        np.empty(n, np.int64),
        np.zeros(n, np.bool_),
        np.empty(n, np.int64),
    )


@njit(cache=True)
def refresh(lclk, lv_bounds, clk) -> None:
    """Take the stale levels' smallest instants again: from the near list when its
    smallest ``t_end`` is below the bound (every group off the list ends later), else
    over all the level's groups, choosing a new bound and list (``_rebuild``)."""
    stale = lclk[2]
    for lv in range(stale.size):
        if stale[lv]:
            lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
            if not _from_near(lclk, lv, lo, clk):
                _rebuild(lclk, lv, lo, hi, clk)
            stale[lv] = False


@njit(cache=True)
def _from_near(lclk, lv, lo, clk) -> bool:
    """The level's smallest instants over its near list (dropping the groups whose
    ``t_due`` moved to the bound or past it), if its smallest ``t_end`` is below the
    bound: then they are the level's (``t_due <= t_end`` for every group)."""
    lv_end, lv_due, _stale, bound, n_near, near, in_near = lclk[:7]
    t_end, t_due = clk[3], clk[4]
    b, kept, e, d = bound[lv], 0, np.inf, np.inf
    for j in range(n_near[lv]):
        g = near[lo + j]
        if t_due[g] < b:
            near[lo + kept] = g
            kept += 1
            e, d = _lower(e, t_end[g]), _lower(d, t_due[g])
        else:
            in_near[g] = False
    n_near[lv] = kept
    if e < b:
        lv_end[lv], lv_due[lv] = e, d
        return True
    return False


@njit(cache=True)
def _rebuild(lclk, lv, lo, hi, clk) -> None:
    """The level's smallest instants over all its groups; the new bound is above the
    smallest ``t_end`` (``_bound``; inf for small levels), and the near list every
    group whose ``t_due`` is below it."""
    lv_end, lv_due, _stale, bound, n_near, near, in_near = lclk[:7]
    t_end, t_due = clk[3], clk[4]
    e, d = smallest(t_end, t_due, lo, hi)
    lv_end[lv], lv_due[lv] = e, d
    b = np.inf
    if hi - lo > NEAR:
        b = _bound(t_end, lo, hi)
        if not b > e:
            b = _above(t_end, lo, hi, e)
    bound[lv] = b
    n = 0
    for g in range(lo, hi):
        in_near[g] = t_due[g] < b
        if in_near[g]:
            near[lo + n] = g
            n += 1
    n_near[lv] = n


@njit(cache=True)
def _bound(t_end, lo, hi) -> float:
    """About the ``NEAR + 1``-th smallest ``t_end`` of groups ``lo..hi``: exactly that
    on levels of up to ``SAMPLE * NEAR`` groups, else that rank's in every
    ``stride``-th group (a partition of ``stride`` times fewer values; levels are taken
    in full at every run's start).  Any bound gives the same answers: it only sets how
    many groups the near list holds."""
    stride = max(1, (hi - lo) // (SAMPLE * NEAR))
    k = NEAR // stride
    return np.partition(t_end[lo:hi:stride].copy(), k)[k]


@njit(cache=True)
def _above(times, lo, hi, x) -> float:
    """The smallest of ``times[lo:hi]`` above ``x`` (inf: none)."""
    best = np.inf
    for g in range(lo, hi):
        if x < times[g] < best:
            best = times[g]
    return best


@njit(cache=True)
def near_add(lclk, lv, lo, ids, t_due) -> None:
    """Put on level ``lv``'s near list the groups ``ids`` (of that level, new instants)
    whose ``t_due`` is below its bound and that are not on it yet."""
    bound, n_near, near, in_near = lclk[3], lclk[4], lclk[5], lclk[6]
    b = bound[lv]
    for q in range(ids.size):
        g = ix(ids[q])
        if t_due[g] < b and not in_near[g]:
            in_near[g] = True
            near[lo + n_near[lv]] = g
            n_near[lv] += 1


@njit(cache=True)
def due(lclk, lv, lo, hi, t_due, now) -> np.ndarray:
    """Level ``lv``'s groups with ``t_due <= now``, by increasing id: from its near list
    if ``now`` is below its bound (every other group is due later), else from all, and
    then the level is taken in full at its next refresh (the callers give the groups
    due new instants without noting them: those on the list are on it already)."""
    n_near, near, buf = lclk[4], lclk[5], lclk[7]
    m = 0
    if now < lclk[3][lv]:
        for j in range(n_near[lv]):
            g = near[lo + j]
            if t_due[g] <= now:
                buf[lo + m] = g
                m += 1
        out = buf[lo : lo + m]
        out.sort()
        return out
    lclk[3][lv] = -np.inf
    for g in range(lo, hi):
        if t_due[g] <= now:
            buf[lo + m] = g
            m += 1
    return buf[lo : lo + m]


@njit(cache=True)
def smallest(t_end, t_due, lo, hi) -> tuple:
    """The smallest of ``t_end[lo:hi]`` and of ``t_due[lo:hi]`` (inf: none), on four
    running minima each (the same minima, without one long chain of comparisons)."""
    e0 = e1 = e2 = e3 = d0 = d1 = d2 = d3 = np.inf
    g = lo
    while g + 4 <= hi:
        e0, d0 = _lower(e0, t_end[g]), _lower(d0, t_due[g])
        e1, d1 = _lower(e1, t_end[g + 1]), _lower(d1, t_due[g + 1])
        e2, d2 = _lower(e2, t_end[g + 2]), _lower(d2, t_due[g + 2])
        e3, d3 = _lower(e3, t_end[g + 3]), _lower(d3, t_due[g + 3])
        g += 4
    for q in range(g, hi):
        e0, d0 = _lower(e0, t_end[q]), _lower(d0, t_due[q])
    end = _lower(_lower(e0, e1), _lower(e2, e3))
    return end, _lower(_lower(d0, d1), _lower(d2, d3))


@njit(cache=True)
def _lower(best, x) -> float:
    """``x`` if it is below ``best`` (a NaN never is), else ``best``."""
    return x if x < best else best


@njit(cache=True)
def rebase(grp, clk, cclk, old, lo, hi, now, changed, n, by_coflow) -> int:
    """Groups ``lo..hi`` whose rate differs from their line's (``old``): counters taken
    at ``now`` on the old line, instants from the new rate, ``old`` set to it, and with
    byte thresholds (``by_coflow``) the difference noted for their coflows' lines
    (``cclk``: redone by ``recount_touched``); their ids go to ``changed`` from slot
    ``n``, and the slots then used are returned."""
    return rebase_some(grp, clk, cclk, old, changed[:0], lo, hi, now, changed, n, by_coflow)


@njit(cache=True)
def rebase_some(grp, clk, cclk, old, ids, lo, hi, now, changed, n, by_coflow) -> int:
    """``rebase`` on the groups ``ids`` if there are any, else on ``lo..hi`` (one loop:
    a helper called per group would pass the tuples' arrays, counted, every time)."""
    g_rate, weight, g_cof, served = grp[5], grp[6], grp[7], grp[10]
    t0 = clk[0]
    marks, lst, n_t, c_delta = cclk[4:]
    count = ids.size if ids.size else hi - lo
    cur, run, summing = ix(0), 0.0, False  # the coflow whose difference ``run`` sums
    for q in range(count):
        g = ix(ids[q] if ids.size else lo + q)
        if g_rate[g] != old[g]:
            served[g] = served_at(served[g], t0[g], old[g], now)
            t0[g] = now
            if by_coflow:
                c = ix(g_cof[g])
                if not summing or c != cur:  # the same sums, one store per run of groups
                    if summing:
                        c_delta[cur] = run
                    cur, run, summing = c, c_delta[c], True
                    if not marks[c]:
                        marks[c] = True
                        lst[n_t[0]] = c
                        n_t[0] += 1
                run += (g_rate[g] - old[g]) * weight[g] / 8.0
            old[g] = g_rate[g]
            instants(g, weight, g_rate, served, clk)
            changed[n] = g
            n += 1
    if summing:
        c_delta[cur] = run
    return n


@njit(cache=True)
def settle(grp, clk, now) -> None:
    """Every counter taken at ``now`` (before writing the groups back)."""
    g_rate, served = grp[5], grp[10]
    t0 = clk[0]
    for g in range(g_rate.size):
        served[g] = served_at(served[g], t0[g], g_rate[g], now)
        t0[g] = now


@njit(cache=True)
def coflow_clock(g_cof, n_cof, g_rate, weight, sent, thresholds, now) -> tuple:
    """The coflows' lines at ``now`` (rates summed over their groups, thresholds); the
    coflows of the run are those of ``g_cof`` (none: an empty clock)."""
    has, c_delta = np.zeros(n_cof, np.bool_), np.zeros(n_cof)
    c, acc = -1, 0.0  # a coflow's groups come in runs: summed in a register, in order
    for g in range(g_cof.size):
        if g_cof[g] != c:
            if c >= 0:
                c_delta[c] = acc
            c = g_cof[g]
            has[c], acc = True, c_delta[c]
        if weight[g] > 0:
            acc += g_rate[g] * weight[g] / 8.0
    if c >= 0:
        c_delta[c] = acc
    cs = np.flatnonzero(has)
    lines = (np.zeros(n_cof), np.full(n_cof, now), np.full(n_cof, np.inf))
    marks = (np.zeros(n_cof, np.bool_), np.empty(cs.size, np.int64), np.zeros(1, np.int64))
    cclk = (*lines, cs, *marks, c_delta)
    marks[0][cs] = True
    marks[1][:] = cs
    marks[2][0] = cs.size
    recount_touched(cclk, sent, thresholds, now)
    return cclk


@njit(cache=True)
def recount_touched(cclk, sent, thresholds, now) -> None:
    """Redo the lines of the coflows touched since the last call: each one's bytes
    sent taken at ``now`` on its old line, its rate moved by the differences noted
    (``c_delta``, then cleared) and the instant it reaches its next threshold (one
    loop, no helper per coflow: see ``rebase_some``).  A rate that the differences
    leave at or below zero (every group stopped: round-off may leave a trace) is 0."""
    c_rate, c_t0, t_thr, _cs, marks, lst, n, c_delta = cclk
    for j in range(n[0]):
        c = lst[j]
        marks[c] = False
        sent[c] += c_rate[c] * (now - c_t0[c])
        c_t0[c] = now
        agg = max(c_rate[c] + c_delta[c], 0.0)
        c_delta[c] = 0.0
        c_rate[c], t_thr[c] = agg, threshold_at(thresholds, sent[c], agg, now)
    n[0] = 0


@njit(cache=True)
def next_threshold(cclk, now) -> float:
    """Seconds from ``now`` until some coflow of the run reaches its next threshold."""
    t_thr, cs = cclk[2], cclk[3]
    best = np.inf
    for c in cs:
        if t_thr[c] < best:
            best = t_thr[c]
    return best - now


@njit(cache=True)
def settle_coflows(cclk, sent, now) -> None:
    """Every coflow's bytes sent taken at ``now``."""
    c_rate, c_t0, cs = cclk[0], cclk[1], cclk[3]
    for c in cs:
        sent[c] += c_rate[c] * (now - c_t0[c])
        c_t0[c] = now


@njit(cache=True)
def rethreshold(cclk, sent, before, thresholds, now) -> None:
    """After the coflows were settled at ``now`` and those at a byte threshold were put
    exactly at it (``sent`` was ``before``): the next threshold instant of each coflow
    of the run that was moved so or had reached its threshold (its line is unchanged)."""
    c_rate, t_thr, cs = cclk[0], cclk[2], cclk[3]
    for c in cs:
        if sent[c] == before[c] and t_thr[c] > now:
            continue
        t_thr[c] = threshold_at(thresholds, sent[c], c_rate[c], now)


@njit(cache=True, inline="always")
def threshold_at(thresholds, sent, rate, now) -> float:
    """When a coflow that has sent ``sent`` bytes at ``now`` reaches the next threshold
    above them at ``rate`` bytes/s (inf: none, or no rate).  Inlined where it is called
    (no reference counting of ``thresholds`` per coflow)."""
    if rate <= 0.0:
        return np.inf
    k = np.searchsorted(thresholds, sent * (1 + 1e-12) + 1e-6, side="right")
    return now + (thresholds[k] - sent) / rate if k < thresholds.size else np.inf
