"""Progressive filling of one level restarted at the round where the first changed group
froze (numba), instead of from the first round.

Why it is exact: between two decisions a group only loses members.  Take the groups
that lost some since the last filling (``C``) and the first round ``r*`` in which one of
them froze.  In the rounds before ``r*`` every group of ``C`` was still growing, so the
links they cross never filled then: their fair shares (free capacity / growing members)
are now only larger and never the smallest, and every other link sees exactly the same
counts and subtractions.  So rounds ``0..r*-1`` pick the same links, take the same steps
and freeze the same groups at the same rates, bit for bit; only the links of ``C`` hold
other values, and those are replayed from the saved steps (``count - delta`` growing
members per round: the same subtractions the full filling does).  From ``r*`` on the
rounds run again from the saved state.  The filling is ``groupfill.fill_level``'s.

State of the level (``rs``, built by ``state``; R = rounds, at most links + 1):
``r_res`` [R, links] free capacity at each round's start (row 0: the cleaned input;
row ``n``: what the level hands on), ``r_cnt`` [R, links] growing members per link
then, ``r_step`` each round's step, ``r_level`` the water level at each round's start,
``r_in`` the raw input, ``fr`` each group's freeze round (-1: never grew), ``order``
the level's groups by freeze round with ``r_pos`` each round's first position,
``w_old`` the weights at the last filling, ``meta`` [rounds, valid].
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim import groupfill, kernel

RESTART_MIN = 256  # levels with fewer groups are filled from the first round


@njit(cache=True)
def state(lo, hi, n_links) -> tuple:
    """Empty saved state of a level of groups ``lo..hi`` (not valid yet)."""
    rows = n_links + 2
    return (
        np.empty((rows, n_links)),
        np.empty((rows, n_links), dtype=np.int64),
        np.empty(rows),
        np.empty(rows),
        np.empty(n_links),
        np.full(hi - lo, -1, dtype=np.int64),
        np.empty(hi - lo, dtype=np.int64),
        np.zeros(rows, dtype=np.int64),
        np.zeros(hi - lo, dtype=np.int64),
        np.zeros(2, dtype=np.int64),
    )


@njit(cache=True)
def _changed(lo, hi, g_paths, weight, rs, delta) -> int:
    """Members lost per link since the last filling into ``delta`` (zeros on entry);
    returns the first freeze round of a group that lost some (n_rounds: none)."""
    fr, w_old, meta = rs[5], rs[8], rs[9]
    first = meta[0]
    for g in range(lo, hi):
        lost = w_old[g - lo] - weight[g]
        if lost:
            for k in range(g_paths.shape[1]):
                delta[g_paths[g, k]] += lost
            first = min(first, fr[g - lo] if fr[g - lo] >= 0 else 0)
            w_old[g - lo] = weight[g]
    return first


@njit(cache=True)
def _replay(rs, delta, r_star) -> None:
    """Links that lost members: their counts and free capacity at the start of rounds
    ``0..r_star`` recomputed with ``delta`` fewer growing members (same subtractions)."""
    r_res, r_cnt, r_step = rs[0], rs[1], rs[2]
    for k in range(delta.size):
        if delta[k] == 0:
            continue
        res = r_res[0, k]
        for i in range(r_star + 1):
            r_res[i, k] = res
            r_cnt[i, k] -= delta[k]
            if i < r_star and r_cnt[i, k] > 0:
                res -= r_step[i] * r_cnt[i, k]
        delta[k] = 0


@njit(cache=True)
def _rounds(lv, lo, index, g_paths, weight, eps, g_rate, rs, r0, live, n_live) -> None:
    """Rounds from ``r0`` on (state at its start in ``rs``), saving each round's start,
    step and the groups it freezes; the level's output ends in ``r_res[rounds]``."""
    r_res, r_cnt, r_step, r_level = rs[0], rs[1], rs[2], rs[3]
    fr, order, r_pos, meta = rs[5], rs[6], rs[7], rs[9]
    start, groups = index
    residual, count = r_res[r0].copy(), r_cnt[r0].copy()
    base, level, r, pos = lv * residual.size, r_level[r0], r0, r_pos[r0]
    while n_live > 0:
        r_res[r], r_cnt[r], r_level[r], r_pos[r] = residual, count, level, pos
        step, link = kernel._min_share(residual, count)
        if link < 0:
            raise ValueError("a flow crosses no link of finite capacity")
        r_step[r] = step
        level += step
        groupfill.take_step(residual, count, step, link)
        for k in range(residual.size):
            if residual[k] > eps[k]:
                continue
            residual[k] = 0.0
            if count[k] == 0:
                continue
            for q in range(start[base + k], start[base + k + 1]):
                g = groups[q]
                if live[g - lo]:
                    live[g - lo], g_rate[g], fr[g - lo] = False, level, r
                    order[pos] = g
                    pos += 1
                    n_live -= 1
                    for kk in range(g_paths.shape[1]):
                        count[g_paths[g, kk]] -= weight[g]
        r += 1
    r_res[r], r_pos[r], meta[0] = residual, pos, r


@njit(cache=True)
def _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch) -> bool:
    """Fill the level from its first round, saving the state; False if blocked."""
    lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
    live, count = scratch
    r_res, r_cnt, fr, meta = rs[0], rs[1], rs[5], rs[9]
    rs[4][:] = residual
    rs[8][:] = weight[lo:hi]
    g_rate[lo:hi] = 0.0
    fr[:] = -1
    count[:] = 0
    n_live = groupfill._live(lo, hi, g_paths, weight, residual, eps, live, count)
    meta[1] = 1
    if n_live == 0:
        meta[0] = 0
        r_res[0] = residual
        return True
    kernel._clean(residual, eps)
    r_res[0], r_cnt[0], rs[3][0], rs[7][0] = residual, count, 0.0, 0
    _rounds(lv, lo, index, g_paths, weight, eps, g_rate, rs, 0, live, n_live)
    residual[:] = r_res[meta[0]]
    return False


@njit(cache=True)
def _same(a, b) -> bool:
    """Whether two vectors are equal element by element."""
    for k in range(a.size):
        if a[k] != b[k]:
            return False
    return True


@njit(cache=True)
def refill(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch) -> bool:
    """Level ``lv``'s rates from ``residual`` (consumed: left as the level hands it on),
    restarted at the first round a changed group froze when the input is the one of the
    last filling; returns whether the level is blocked (as ``groupfill.fill_level``).
    ``scratch``: (live flags per group, link counts, per-link scratch of zeros)."""
    lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
    meta, fr, order, r_pos = rs[9], rs[5], rs[6], rs[7]
    if not meta[1] or not _same(residual, rs[4]) or meta[0] == 0:
        return _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch[:2])
    delta, live = scratch[2], scratch[0]
    n_rounds = meta[0]
    r_star = _changed(lo, hi, g_paths, weight, rs, delta)
    if r_star == 0:
        delta[:] = 0
        return _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch[:2])
    if r_star < n_rounds:
        _replay(rs, delta, r_star)
        n_live = 0
        for q in range(r_pos[r_star], r_pos[n_rounds]):
            g = order[q]
            g_rate[g] = 0.0
            fr[g - lo] = -1
            if weight[g] > 0:
                live[g - lo] = True
                n_live += 1
        _rounds(lv, lo, index, g_paths, weight, eps, g_rate, rs, r_star, live, n_live)
    residual[:] = rs[0][meta[0]]
    return False


@njit(cache=True)
def biggest(lv_bounds) -> int:
    """The level with the most groups if it has at least ``RESTART_MIN``, else -1."""
    best, size = -1, RESTART_MIN - 1
    for lv in range(lv_bounds.size - 1):
        if lv_bounds[lv + 1] - lv_bounds[lv] > size:
            best, size = lv, lv_bounds[lv + 1] - lv_bounds[lv]
    return best


@njit(cache=True)
def fill(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rounds, scratch) -> bool:
    """Fill level ``lv``: restartable (``refill``) if it is the level ``rounds`` saves
    (``rounds``: (that level, its ``state``)), else from the first round
    (``groupfill.fill_level``); returns whether it is blocked."""
    big, rs = rounds
    if lv == big:
        return refill(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch)
    return groupfill.fill_level(
        lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, scratch
    )
