"""Progressive filling of one level of path groups on a link index built once per
compiled run (numba), instead of once per filling as ``kernel.fill`` does.

Between two decisions the groups are fixed, so the index link -> groups of each level
(``level_index``: one CSR keyed by ``level * links + link``) stays valid; a filling then
costs one pass over the level's groups (which can grow, live counts per link) plus its
rounds.  The arithmetic is ``kernel.fill``'s (uncapped, weighted rows), step for step:
same shares, same subtractions in the same order, so the same rates bit for bit.  A
round looks only at the links with growing members (``growing``): no other link's free
capacity or count changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim import kernel
from coflowbed.sim.kernel import ix


@njit(cache=True)
def level_index(lv_bounds, g_paths, n_links) -> tuple:
    """CSR of the groups crossing each (level, link): (start [levels * links + 1],
    groups), groups of a level by increasing id."""
    n_lv, width = lv_bounds.size - 1, g_paths.shape[1]
    start = np.zeros(n_lv * n_links + 1, dtype=np.int64)
    for lv in range(n_lv):
        for g in range(lv_bounds[lv], lv_bounds[lv + 1]):
            for k in range(width):
                start[lv * n_links + g_paths[g, k] + 1] += 1
    for j in range(n_lv * n_links):
        start[j + 1] += start[j]
    cursor = start[:-1].copy()
    groups = np.empty(start[-1], dtype=np.int64)
    for lv in range(n_lv):
        for g in range(lv_bounds[lv], lv_bounds[lv + 1]):
            for k in range(width):
                slot = lv * n_links + g_paths[g, k]
                groups[cursor[slot]] = g
                cursor[slot] += 1
    return start, groups


@njit(cache=True)
def _live(lo, hi, g_paths, weight, residual, eps, live, count) -> int:
    """Mark the groups ``lo..hi`` with members and free capacity on every link they cross
    (``live``, indexed from ``lo``), add their weights to ``count``; how many."""
    n_live = 0
    for g in range(lo, hi):
        live[g - lo] = False
        if weight[g] <= 0:
            continue
        ok = True
        for k in range(g_paths.shape[1]):
            if residual[g_paths[g, k]] <= eps[g_paths[g, k]]:
                ok = False
        if ok:
            live[g - lo] = True
            n_live += 1
            for k in range(g_paths.shape[1]):
                count[g_paths[g, k]] += weight[g]
    return n_live


@njit(cache=True)
def growing(count, act) -> int:
    """The links with growing members (``count`` > 0) into ``act``, by increasing id;
    how many.  A round changes only those links, so it looks at them alone."""
    n = 0
    for k in range(count.size):
        if count[k] > 0:
            act[n] = k
            n += 1
    return n


@njit(cache=True)
def min_share_on(residual, count, act, n) -> tuple:
    """``kernel._min_share`` over the links ``act[:n]`` (every other has no growing
    member): the same share and link."""
    step, link = np.inf, -1
    for j in range(n):
        k = act[j]
        share = residual[k] / count[k]
        if share < step:
            step, link = share, k
    return step, link


@njit(cache=True)
def step_on(residual, count, act, n, step, link) -> None:
    """One filling round on the links ``act[:n]`` (the others have no growing member):
    each loses ``step`` per growing member; the bottleneck ``link`` is full even if
    round-off left it above its epsilon."""
    for j in range(n):
        k = act[j]
        residual[k] -= step * count[k]
    residual[link] = 0.0


@njit(cache=True)
def still_growing(count, act, n) -> int:
    """Drop from ``act[:n]`` the links left without growing members (order kept); how
    many are left."""
    kept = 0
    for j in range(n):
        if count[act[j]] > 0:
            act[kept] = act[j]
            kept += 1
    return kept


@njit(cache=True)
def fill_level(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, scratch) -> bool:
    """Max-min rates of level ``lv``'s groups (per member) from ``residual`` (consumed);
    returns whether the level is blocked (no group can grow: rates 0, nothing consumed).
    ``index``: ``level_index``; ``scratch``: (live flags, one per group; link counts;
    more unused here)."""
    lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
    live, count = scratch[0], scratch[1]
    g_rate[lo:hi] = 0.0
    count[:] = 0
    n_live = _live(lo, hi, g_paths, weight, residual, eps, live, count)
    if n_live == 0:
        return True
    kernel._clean(residual, eps)
    start, groups = index
    base, level = lv * residual.size, 0.0
    act = np.empty(residual.size, np.int64)
    n_act = growing(count, act)
    while n_live > 0:
        step, link = min_share_on(residual, count, act, n_act)
        if link < 0:
            raise ValueError("a flow crosses no link of finite capacity")
        level += step
        step_on(residual, count, act, n_act, step, link)
        for j in range(n_act):
            k = act[j]
            if residual[k] > eps[k]:
                continue
            residual[k] = 0.0
            if count[k] == 0:
                continue
            for q in range(ix(start[base + k]), ix(start[base + k + 1])):
                g, i = ix(groups[q]), ix(groups[q] - lo)
                if live[i]:
                    live[i] = False
                    g_rate[g] = level
                    n_live -= 1
                    for kk in range(g_paths.shape[1]):
                        if g_paths[g, kk] != k:  # k's own count is 0 once all froze
                            count[ix(g_paths[g, kk])] -= weight[g]
            count[k] = 0
        n_act = still_growing(count, act, n_act)
    return False
