"""Incremental re-sharing of the path groups between two policy decisions (numba): after
a flow completion only the levels whose inputs changed are filled again.

A level's rates are a deterministic function of its groups' weights and of the free
capacity it is handed on the links it crosses.  So, keeping per level the free capacity
it was handed last time (``res_at[lv]``), whether it got no rate at all (``blocked``)
and whether it lost a member since (``dirty``), re-sharing walks down the levels with
the set ``D`` of links whose free capacity now differs from last time:

- a level that is not dirty and crosses no link of ``D`` gets the same rates as before
  and hands the next level the same capacity on its links: skipped in O(|D|);
- a level that was blocked (every group crosses a full link) stays blocked while no link
  of ``D`` it crosses went from full to free (members only leave between decisions):
  skipped in O(|D|), the capacity passes through;
- any other level is filled again (``roundfill.fill``, as ``groupkernel.allocate``
  does) and
  ``D`` becomes the links where what it hands on differs from last time;
- once ``D`` is empty and no dirty level is left, the levels below are unchanged: stop.

The rates are bit for bit those of filling every level again (``groupkernel.allocate``):
only fills whose inputs are identical are skipped.  Under FIFO, D-CLAS and Sincronia
(every coflow its own level, most levels blocked) this skips most of the levels; under
fair sharing (one level) it changes nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim import roundfill


@njit(cache=True)
def level_links(lv_bounds, g_paths, n_links) -> np.ndarray:
    """``uses[lv, link]``: whether some group of level ``lv`` crosses ``link``."""
    uses = np.zeros((lv_bounds.size - 1, n_links), dtype=np.bool_)
    for lv in range(lv_bounds.size - 1):
        for g in range(lv_bounds[lv], lv_bounds[lv + 1]):
            for k in range(g_paths.shape[1]):
                uses[lv, g_paths[g, k]] = True
    return uses


@njit(cache=True)
def _carry(res_row, uses_row, eps, diff, dval, nd) -> tuple:
    """Write the changed links ``diff[:nd]`` (new values ``dval``) into a level's saved
    input ``res_row``; returns (whether the level crosses one of them, whether one it
    crosses went from full to free)."""
    touched, unblocks = False, False
    for q in range(nd):
        k = diff[q]
        if uses_row[k]:
            touched = True
            if res_row[k] <= eps[k] < dval[q]:
                unblocks = True
        res_row[k] = dval[q]
    return touched, unblocks


@njit(cache=True)
def _differences(residual, saved, diff, dval) -> int:
    """Links where ``residual`` differs from ``saved`` into ``diff``/``dval``; count."""
    nd = 0
    for k in range(residual.size):
        if residual[k] != saved[k]:
            diff[nd], dval[nd] = k, residual[k]
            nd += 1
    return nd


@njit(cache=True)
def reshare(grp_lv, g_paths, weight, eps, g_rate, state, from_lv, scratch) -> int:
    """Re-share the groups from level ``from_lv`` on (the levels above are unchanged),
    filling only the levels whose inputs changed.  ``grp_lv``: (lv_bounds, uses,
    ``groupfill.level_index``, ``roundfill`` rounds); ``state``: (res_at [levels + 1,
    links], blocked, dirty), updated; ``scratch``: (diff, dval, residual, fill scratch).
    Returns how many levels were filled."""
    lv_bounds, uses, index, rounds = grp_lv
    res_at, blocked, dirty = state
    diff, dval, residual, fscratch = scratch
    n_lv = lv_bounds.size - 1
    last_dirty = -1
    for lv in range(from_lv, n_lv):
        if dirty[lv]:
            last_dirty = lv
    nd, filled = 0, 0
    for lv in range(from_lv, n_lv):
        if nd == 0 and lv > last_dirty:
            return filled
        touched, unblocks = _carry(res_at[lv], uses[lv], eps, diff, dval, nd)
        if not (dirty[lv] or touched) or (blocked[lv] and not unblocks):
            dirty[lv] = False
            continue
        residual[:] = res_at[lv]
        blocked[lv] = roundfill.fill(
            lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rounds, fscratch
        )
        dirty[lv] = False
        filled += 1
        nd = _differences(residual, res_at[lv + 1], diff, dval)
    for q in range(nd):
        res_at[n_lv, diff[q]] = dval[q]
    return filled
