"""Rate allocation of the fluid model: strict priority across levels, max-min fairness
(progressive filling) within a level, optional per-flow caps, work conservation.

All functions work on numpy arrays: ``paths`` is int32 [flows, width] of link indices
(padding = a link of infinite capacity), ``residual`` the free capacity of every link
in bit/s (modified in place as capacity is handed out).

Caps (a policy's own rates, e.g. Varys MADD) are honoured in a first pass, level by
level; a second pass then hands whatever capacity is left to the same flows, again
strictly by level and max-min fair within a level, so the allocation is work
conserving: a flow only stays below what its links could give it when a link it
crosses is full.
"""
from __future__ import annotations

import numpy as np

REL_TOL = 1e-9  # links within this fraction of their capacity count as full


def full_below(capacity: np.ndarray) -> np.ndarray:
    """Per link, the free capacity under which it counts as full (round-off guard)."""
    return REL_TOL * np.where(np.isfinite(capacity), capacity, 0.0)


def waterfill(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray | None = None,
              eps: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of the flows in ``paths`` on ``residual`` capacity (progressive
    filling), each flow at most ``caps`` (None = no caps).  Subtracts what it gives from
    ``residual`` and returns the rates.  ``eps``: per-link free capacity that counts as
    full (default: ``full_below(residual)``)."""
    n_links = residual.shape[0]
    rates = np.zeros(paths.shape[0])
    live = np.arange(paths.shape[0])
    eps = full_below(residual) if eps is None else eps
    _clean(residual, eps)
    if caps is not None:
        live = _grant_feasible_caps(paths, residual, caps, rates, eps)
    while live.size:
        lk = paths[live]
        count = np.bincount(lk.ravel(), minlength=n_links)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, residual / count, np.inf)
        level = share[lk].min(axis=1).min()
        if caps is not None:
            head = caps[live] - rates[live]
            capped = head <= level
            if capped.any():
                # Flows whose cap is below every link's fair share reach it before any
                # link fills (freezing them only raises other shares): freeze at the cap.
                idx = live[capped]
                rates[idx] = caps[idx]
                np.subtract.at(residual, paths[idx].ravel(), np.repeat(head[capped], paths.shape[1]))
                _clean(residual, eps)
                live = live[~capped]
                continue
        if not np.isfinite(level):
            raise ValueError("a flow crosses no link of finite capacity")
        rates[live] += level
        residual -= level * count
        full = _clean(residual, eps)
        live = live[~full[lk].any(axis=1)]
    return rates


def _grant_feasible_caps(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray,
                         rates: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Give every flow whose links can carry all their flows' caps its cap at once (such
    links never fill, so max-min gives those flows exactly their caps); return the
    indices of the other flows.  Saves the rounds a policy's feasible rates (MADD)
    would otherwise cost."""
    n_links = residual.shape[0]
    finite = np.isfinite(caps)
    demand = np.bincount(paths[finite].ravel(), minlength=n_links,
                         weights=np.repeat(caps[finite], paths.shape[1]))
    unbounded = np.bincount(paths[~finite].ravel(), minlength=n_links) > 0
    roomy = (demand <= residual + eps) & ~unbounded
    ok = finite & roomy[paths].all(axis=1)
    if ok.any():
        rates[ok] = caps[ok]
        np.subtract.at(residual, paths[ok].ravel(), np.repeat(caps[ok], paths.shape[1]))
        _clean(residual, eps)
    return np.flatnonzero(~ok)


def _clean(residual: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Set links with free capacity <= ``eps`` (round-off, or below 0) to exactly 0;
    return the mask of full links."""
    full = residual <= eps
    residual[full] = 0.0
    return full


def allocate(paths: np.ndarray, levels: np.ndarray, capacity: np.ndarray,
             caps: np.ndarray | None = None, hard_caps: bool = False) -> np.ndarray:
    """Rates (bit/s) of flows with ``paths`` at priority ``levels`` (0 = most urgent)
    on links of ``capacity``: strict priority by level, max-min within a level; with
    ``caps``, capped pass first and a work-conserving pass for the leftover, unless
    ``hard_caps`` (meters: a flow never exceeds its cap)."""
    residual = capacity.astype(float).copy()
    eps = full_below(capacity)
    rates = np.zeros(paths.shape[0])
    if paths.shape[0] == 0:
        return rates
    order = np.argsort(levels, kind="stable")
    bounds = np.flatnonzero(np.diff(levels[order])) + 1
    groups = np.split(order, bounds)
    if caps is None:
        passes = [None]
    else:
        passes = [caps] if hard_caps else [caps, None]
    for cap in passes:
        for g in groups:
            if not _has_room(residual, paths[g]):
                continue
            sub_caps = None if cap is None else cap[g] - rates[g]
            rates[g] += waterfill(paths[g], residual, sub_caps, eps)
    return rates


def _has_room(residual: np.ndarray, paths: np.ndarray) -> bool:
    """Whether some flow of the group has free capacity on every link it crosses."""
    return bool((residual[paths] > 0).all(axis=1).any())
