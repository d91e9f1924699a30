"""Blocked levels kept blocked in O(blocking links) instead of O(groups) (numba).

A level is blocked when every group with members crosses a full link (free capacity
within its epsilon): it gets no rate and hands on the capacity it was given, untouched.
Between two decisions a group only loses members, so a level that was blocked stays
blocked as long as one full link per group stays full.  When a level is found blocked
its *blockers* are noted: for each group not already crossing a noted link, the first
full link it crosses (at most one per group, so a level's blockers fit in its group
range).  The next filling of that level first checks those links alone; if every one
is still full, the filling would find no live group and change nothing, so it is
skipped: bit for bit the same rates and free capacity.

State (``state``): ``valid`` per level (blockers noted since its last filling found it
blocked), ``count`` per level, ``links`` (level ``lv``'s blockers from its first group
index ``lo``), ``mark`` per link (scratch, all False between calls).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim.kernel import ix


@njit(cache=True)
def state(n_levels, n_groups, n_links) -> tuple:
    """No level known blocked yet."""
    return (
        np.zeros(n_levels, np.bool_),
        np.zeros(n_levels, np.int64),
        np.empty(n_groups, np.int64),
        np.zeros(n_links, np.bool_),
    )


@njit(cache=True)
def still(lv, lo, residual, eps, blk) -> bool:
    """Whether level ``lv`` (first group ``lo``) is known blocked and its blockers are
    all still full in ``residual``."""
    valid, count, links = blk[0], blk[1], blk[2]
    if not valid[lv]:
        return False
    for q in range(lo, lo + count[lv]):
        if residual[links[q]] > eps[links[q]]:
            return False
    return True


@njit(cache=True)
def note(lv, lo, hi, g_paths, weight, residual, eps, blk) -> None:
    """Level ``lv`` (groups ``lo..hi``) was just found blocked by ``residual``: note one
    full link per group not already crossing a noted one."""
    valid, count, links, mark = blk
    n = lo
    for g in range(lo, hi):
        if weight[g] <= 0:
            continue
        first = full_link(g, g_paths, mark, residual, eps)
        if first >= 0:
            mark[first] = True
            links[n] = first
            n += 1
    for q in range(lo, n):
        mark[links[q]] = False
    valid[lv], count[lv] = True, n - lo


@njit(cache=True)
def full_link(g, g_paths, mark, residual, eps) -> int:
    """The first full link group ``g`` crosses: -2 if it crosses a ``mark``-ed link
    (already noted), -1 if none is full."""
    first = -1
    for k in range(g_paths.shape[1]):
        link = g_paths[g, k]
        if mark[ix(link)]:
            return -2
        if first == -1 and residual[link] <= eps[link]:
            first = link
    return first


@njit(cache=True)
def forget(lv, blk) -> None:
    """Level ``lv`` is not blocked (any more)."""
    blk[0][lv] = False
