"""Compiled core of the fluid model's rate allocation (numba): strict priority across
levels, max-min fairness by progressive filling within a level, per-flow caps.

Why compiled: the exact model re-shares capacity at every flow completion (tens of
thousands of instants on the Facebook trace, each a filling of up to hundreds of
rounds over 10^5 flows); as numpy calls each round cost a few dozen array passes and
calls, here a round costs O(links + flows frozen in it).

Arrays: ``paths`` int32 [flows, width] of link indices (padding = a link of infinite
capacity), ``residual`` float64 free capacity per link (bit/s, consumed in place),
``eps`` the free capacity under which a link counts as full (round-off guard).
"""
from __future__ import annotations

import numpy as np
from numba import njit

REL_TOL = 1e-9  # links within this fraction of their capacity count as full

NO_CAPS, SOFT_CAPS, HARD_CAPS = 0, 1, 2  # allocate modes


@njit(cache=True)
def full_below(capacity: np.ndarray) -> np.ndarray:
    """Per link, the free capacity under which it counts as full."""
    eps = np.zeros(capacity.size)
    for link in range(capacity.size):
        if np.isfinite(capacity[link]):
            eps[link] = REL_TOL * capacity[link]
    return eps


@njit(cache=True)
def allocate_levels(paths: np.ndarray, levels: np.ndarray, capacity: np.ndarray,
                    caps: np.ndarray, mode: int) -> np.ndarray:
    """Rates of all flows: levels in increasing order, max-min within a level.  ``mode``
    NO_CAPS ignores ``caps``; HARD_CAPS fills up to the caps only (meters); SOFT_CAPS
    does that, then a second, uncapped pass hands out what is left (work conserving)."""
    rates = np.zeros(paths.shape[0])
    if paths.shape[0] == 0:
        return rates
    residual = capacity.copy()
    eps = full_below(capacity)
    order, bounds = _by_level(levels)
    for capped in (True, False):
        if (capped and mode == NO_CAPS) or (not capped and mode == HARD_CAPS):
            continue
        if capped and _grant_all_caps(paths, residual, eps, caps, rates):
            continue
        for g in range(bounds.size - 1):
            idx = order[bounds[g]:bounds[g + 1]]
            if _any_room(paths, idx, residual, eps):  # lower levels mostly find none
                fill(paths, idx, residual, eps, caps, rates, capped)
    return rates


@njit(cache=True)
def _any_room(paths, idx, residual, eps) -> bool:
    """Whether some flow of ``idx`` has free capacity on every link it crosses."""
    for j in range(idx.size):
        ok = True
        for k in range(paths.shape[1]):
            if residual[paths[idx[j], k]] <= eps[paths[idx[j], k]]:
                ok = False
                break
        if ok:
            return True
    return False


@njit(cache=True)
def _by_level(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flow indices ordered by level (stable) and the bounds of each level's run; a
    counting sort when the levels span no more values than there are flows (dense
    ranks: one pass, where a comparison sort at every event would dominate)."""
    n = levels.size
    low, high = levels.min(), levels.max()
    if high - low >= n:
        order = np.argsort(levels, kind="mergesort")
        bounds = [0]
        for j in range(1, n):
            if levels[order[j]] != levels[order[j - 1]]:
                bounds.append(j)
        bounds.append(n)
        return order, np.array(bounds)
    start = np.zeros(high - low + 2, dtype=np.int64)
    for j in range(n):
        start[levels[j] - low + 1] += 1
    for v in range(high - low + 1):
        start[v + 1] += start[v]
    cursor = start[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for j in range(n):
        v = levels[j] - low
        order[cursor[v]] = j
        cursor[v] += 1
    return order, np.unique(start)  # empty levels give repeated bounds


@njit(cache=True)
def _grant_all_caps(paths, residual, eps, caps, rates) -> bool:
    """If every flow has a finite cap and all caps together fit every link, strict
    priority gives each flow exactly its cap: grant them at once and return True;
    else change nothing and return False (saves the rounds of feasible MADD rates)."""
    demand = np.zeros(residual.size)
    for i in range(paths.shape[0]):
        if not np.isfinite(caps[i]):
            return False
        for k in range(paths.shape[1]):
            demand[paths[i, k]] += caps[i]
    for link in range(residual.size):
        if demand[link] > residual[link] + eps[link]:
            return False
    for i in range(paths.shape[0]):
        rates[i] += caps[i]
    for link in range(residual.size):
        residual[link] -= demand[link]
    _clean(residual, eps)
    return True


@njit(cache=True)
def _clean(residual: np.ndarray, eps: np.ndarray) -> None:
    """Links with free capacity <= eps (round-off, or below 0) get exactly 0."""
    for link in range(residual.size):
        if residual[link] <= eps[link]:
            residual[link] = 0.0


@njit(cache=True)
def fill(paths, idx, residual, eps, caps, rates, capped: bool) -> None:
    """Progressive filling of flows ``idx``: raise every live flow's rate together until
    a link fills (its flows freeze) or a flow reaches its cap (``capped``: ``caps`` minus
    the rate it has); adds each flow's share to ``rates`` and consumes ``residual``."""
    _clean(residual, eps)
    live, count, head, n_live = _live_flows(paths, idx, residual, caps, rates, capped)
    if n_live == 0:
        return
    start, by_link = _link_index(paths, idx, live, residual.size)
    cap_order = _cap_order(live, head) if capped else np.zeros(0, dtype=np.int64)
    level, ptr = 0.0, 0
    while n_live > 0:
        step, link = _min_share(residual, count)
        while ptr < cap_order.size and not live[cap_order[ptr]]:
            ptr += 1
        if ptr < cap_order.size and head[cap_order[ptr]] - level <= step:
            # Flows whose cap is below every link's fair share reach it before any link
            # fills (freezing them only raises other shares): freeze them at the cap.
            n_live -= _freeze_capped(paths, idx, residual, eps, rates, live, count, head,
                                     cap_order, ptr, level, level + step)
            continue
        if link < 0:
            raise ValueError("a flow crosses no link of finite capacity")
        level += step
        n_live -= _raise(paths, idx, residual, eps, rates, live, count, start, by_link,
                         step, link, level)


@njit(cache=True)
def _live_flows(paths, idx, residual, caps, rates, capped):
    """Which of ``idx`` can grow (free capacity on every link, headroom to a cap), the
    live-flow count per link, each flow's headroom (``capped`` only: else empty) and
    how many are live."""
    m, width = idx.size, paths.shape[1]
    live = np.zeros(m, dtype=np.bool_)
    count = np.zeros(residual.size, dtype=np.int64)
    head = np.empty(m if capped else 0)
    n_live = 0
    for j in range(m):
        i = idx[j]
        if capped:
            head[j] = caps[i] - rates[i]
            if not head[j] > 0.0:
                continue
        ok = True
        for k in range(width):
            if residual[paths[i, k]] <= 0.0:
                ok = False
        if ok:
            live[j] = True
            n_live += 1
            for k in range(width):
                count[paths[i, k]] += 1
    return live, count, head, n_live


@njit(cache=True)
def _link_index(paths, idx, live, n_links):
    """CSR index link -> live flows (positions in ``idx``)."""
    width = paths.shape[1]
    start = np.zeros(n_links + 1, dtype=np.int64)
    for j in range(idx.size):
        if live[j]:
            for k in range(width):
                start[paths[idx[j], k] + 1] += 1
    for link in range(n_links):
        start[link + 1] += start[link]
    cursor = start[:-1].copy()
    by_link = np.empty(start[-1], dtype=np.int64)
    for j in range(idx.size):
        if live[j]:
            for k in range(width):
                link = paths[idx[j], k]
                by_link[cursor[link]] = j
                cursor[link] += 1
    return start, by_link


@njit(cache=True)
def _cap_order(live, head):
    """Live flows with a finite headroom, by increasing headroom."""
    pick = np.flatnonzero(live & np.isfinite(head))
    return pick[np.argsort(head[pick], kind="mergesort")]


@njit(cache=True)
def _min_share(residual, count):
    """The smallest fair share over links with live flows, and that link (-1: none
    finite)."""
    step, link = np.inf, -1
    for k in range(residual.size):
        if count[k] > 0:
            share = residual[k] / count[k]
            if share < step:
                step, link = share, k
    return step, link


@njit(cache=True)
def _freeze(paths, i, j, live, count) -> None:
    """Flow ``i`` (position ``j``) stops growing."""
    live[j] = False
    for k in range(paths.shape[1]):
        count[paths[i, k]] -= 1


@njit(cache=True)
def _freeze_capped(paths, idx, residual, eps, rates, live, count, head, cap_order, ptr,
                   level, limit) -> int:
    """Freeze at their cap the live flows from ``cap_order[ptr]`` on whose headroom is
    <= ``limit`` (at least the first); return how many froze."""
    frozen = 0
    for q in range(ptr, cap_order.size):
        j = cap_order[q]
        if frozen and head[j] > limit:  # sorted: the rest are above too
            break
        if not live[j]:
            continue
        i = idx[j]
        for k in range(paths.shape[1]):
            residual[paths[i, k]] -= head[j] - level  # ``level`` was already taken
        rates[i] += head[j]
        _freeze(paths, i, j, live, count)
        frozen += 1
    _clean(residual, eps)
    return frozen


@njit(cache=True)
def _raise(paths, idx, residual, eps, rates, live, count, start, by_link, step, link,
           level) -> int:
    """Raise every live flow by ``step`` (to ``level``); freeze the flows of the links
    now full (``link`` is full by construction); return how many froze."""
    for k in range(residual.size):
        if count[k] > 0:
            residual[k] -= step * count[k]
    residual[link] = 0.0  # the bottleneck is full even if round-off left it above eps
    frozen = 0
    for k in range(residual.size):
        if residual[k] > eps[k]:
            continue
        residual[k] = 0.0
        if count[k] == 0:  # no live flow left on it (e.g. full since an earlier round)
            continue
        for q in range(start[k], start[k + 1]):
            j = by_link[q]
            if live[j]:
                rates[idx[j]] += level
                _freeze(paths, idx[j], j, live, count)
                frozen += 1
    return frozen
