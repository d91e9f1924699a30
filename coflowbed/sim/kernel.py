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
GROUP_MIN = 64  # levels with fewer flows are filled flow by flow (no grouping pass)


@njit(cache=True)
def ix(i):
    """``i`` (never negative) as an unsigned index: numba then skips its wraparound of
    negative indices, several instructions per access, in the loops that index a dozen
    arrays per group (docs/measurements/simulator-speed.md, "Unsigned indices")."""
    return np.uint64(i)


@njit(cache=True)
def full_below(capacity: np.ndarray) -> np.ndarray:
    """Per link, the free capacity under which it counts as full."""
    eps = np.zeros(capacity.size)
    for link in range(capacity.size):
        if np.isfinite(capacity[link]):
            eps[link] = REL_TOL * capacity[link]
    return eps


@njit(cache=True)
def allocate_levels(
    paths: np.ndarray,
    levels: np.ndarray,
    capacity: np.ndarray,
    caps: np.ndarray,
    mode: int,
    path_id: np.ndarray,
) -> np.ndarray:
    """Rates of all flows: levels in increasing order (< 0: no rate), max-min within a
    level.  ``mode`` NO_CAPS ignores ``caps``; HARD_CAPS fills up to the caps only
    (meters); SOFT_CAPS does that, then a second, uncapped pass hands out what is left
    (work conserving).  ``path_id`` (ints >= 0, equal only for equal ``paths`` rows;
    empty = unknown) lets uncapped passes fill one row per distinct path of a level."""
    n = paths.shape[0]
    rates = np.zeros(n)
    if n == 0:
        return rates
    residual = capacity.copy()
    eps = full_below(capacity)
    order, bounds = _by_level(levels)
    slot = np.full(path_id.max() + 1 if path_id.size else 0, -1, dtype=np.int64)
    for capped in (True, False):
        if (capped and mode == NO_CAPS) or (not capped and mode == HARD_CAPS):
            continue
        if capped and _grant_all_caps(paths, residual, eps, caps, rates):
            continue
        for g in range(bounds.size - 1):
            idx = order[bounds[g] : bounds[g + 1]]
            if levels[idx[0]] < 0:  # finished flows the engine has not dropped yet
                continue
            if _any_room(paths, idx, residual, eps):  # lower levels mostly find none
                _fill_level(paths, idx, path_id, slot, residual, eps, caps, rates, capped)
    return rates


@njit(cache=True)
def _fill_level(paths, idx, path_id, slot, residual, eps, caps, rates, capped) -> None:
    """One level's share: flow by flow, or one row per distinct path when the level has
    many flows per path (fair sharing: ~7 on the trace; a coflow's own flows mostly
    have distinct paths, as under FIFO or Sincronia)."""
    if capped or not path_id.size or idx.size < max(GROUP_MIN, 2 * slot.size):
        gained = fill(paths, idx, np.zeros(0, dtype=np.int64), residual, eps, caps, rates, capped)
        for j in range(idx.size):
            rates[idx[j]] += gained[j]
    else:
        _fill_by_path(paths, idx, path_id, slot, residual, eps, rates)


@njit(cache=True)
def _fill_by_path(paths, idx, path_id, slot, residual, eps, rates) -> None:
    """Uncapped max-min of flows ``idx``: flows on one path always get the same rate, so
    fill one row per distinct path weighted by its flow count (``slot``: scratch of -1
    per path id, left as found)."""
    rows = np.empty(idx.size, dtype=np.int64)  # a flow of each distinct path
    weight = np.zeros(idx.size, dtype=np.int64)
    row_of = np.empty(idx.size, dtype=np.int64)
    n_rows = 0
    for j in range(idx.size):
        p = path_id[idx[j]]
        if slot[p] < 0:
            slot[p] = n_rows
            rows[n_rows] = idx[j]
            n_rows += 1
        weight[slot[p]] += 1
        row_of[j] = slot[p]
    for r in range(n_rows):
        slot[path_id[rows[r]]] = -1
    gained = fill(paths, rows[:n_rows], weight[:n_rows], residual, eps, rates, rates, False)
    for j in range(idx.size):
        rates[idx[j]] += gained[row_of[j]]


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
    """Flow indices ordered by level (stable) and the bounds of each level's run.  The
    engine keeps flows grouped by coflow and a coflow has one level, so the levels come
    in long runs: sort the runs, then copy each run's indices in order."""
    n = levels.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
    run_start = [0]
    for j in range(1, n):
        if levels[j] != levels[j - 1]:
            run_start.append(j)
    run_start.append(n)
    starts = np.array(run_start)
    runs = starts.size - 1
    run_level = np.empty(runs, dtype=levels.dtype)
    for r in range(runs):
        run_level[r] = levels[starts[r]]
    by_run = np.argsort(run_level, kind="mergesort")
    order = np.empty(n, dtype=np.int64)
    bounds = [0]
    pos = 0
    for q in range(runs):
        r = by_run[q]
        if q and run_level[r] != run_level[by_run[q - 1]]:
            bounds.append(pos)
        for j in range(starts[r], starts[r + 1]):
            order[pos] = j
            pos += 1
    bounds.append(n)
    return order, np.array(bounds)


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
def fill(paths, idx, weight, residual, eps, caps, rates, capped: bool) -> np.ndarray:
    """Progressive filling of flows ``idx``: raise every live flow's rate together until
    a link fills (its flows freeze) or a flow reaches its cap (``capped``: ``caps`` minus
    the rate it has in ``rates``).  ``weight``: how many flows each row stands for
    (empty: one each).  Consumes ``residual``; returns the rate gained per row."""
    _clean(residual, eps)
    gained = np.zeros(idx.size)
    live, count, head, n_live = _live_flows(paths, idx, weight, residual, caps, rates, capped)
    if n_live == 0:
        return gained
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
            n_live -= _freeze_capped(
                paths,
                idx,
                weight,
                residual,
                eps,
                gained,
                live,
                count,
                head,
                cap_order,
                ptr,
                level,
                level + step,
            )
            continue
        if link < 0:
            raise ValueError("a flow crosses no link of finite capacity")
        level += step
        n_live -= _raise(
            paths,
            idx,
            weight,
            residual,
            eps,
            gained,
            live,
            count,
            start,
            by_link,
            step,
            link,
            level,
        )
    return gained


@njit(cache=True)
def _live_flows(paths, idx, weight, residual, caps, rates, capped):
    """Which of ``idx`` can grow (free capacity on every link, headroom to a cap), the
    live-flow count per link, each row's headroom (``capped`` only: else empty) and how
    many rows are live."""
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
            w = weight[j] if weight.size else 1
            for k in range(width):
                count[paths[i, k]] += w
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
def _freeze(paths, i, j, weight, live, count) -> None:
    """Row ``j`` (flow ``i``) stops growing."""
    live[j] = False
    w = weight[j] if weight.size else 1
    for k in range(paths.shape[1]):
        count[paths[i, k]] -= w


@njit(cache=True)
def _freeze_capped(
    paths, idx, weight, residual, eps, gained, live, count, head, cap_order, ptr, level, limit
) -> int:
    """Freeze at their cap the live rows from ``cap_order[ptr]`` on whose headroom is
    <= ``limit`` (at least the first); return how many froze."""
    frozen = 0
    for q in range(ptr, cap_order.size):
        j = cap_order[q]
        if frozen and head[j] > limit:  # sorted: the rest are above too
            break
        if not live[j]:
            continue
        i = idx[j]
        w = weight[j] if weight.size else 1
        for k in range(paths.shape[1]):
            residual[paths[i, k]] -= (head[j] - level) * w  # ``level`` was already taken
        gained[j] = head[j]
        _freeze(paths, i, j, weight, live, count)
        frozen += 1
    _clean(residual, eps)
    return frozen


@njit(cache=True)
def _raise(
    paths, idx, weight, residual, eps, gained, live, count, start, by_link, step, link, level
) -> int:
    """Raise every live row by ``step`` (to ``level``); freeze the rows of the links now
    full (``link`` is full by construction); return how many froze."""
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
                gained[j] = level
                _freeze(paths, idx[j], j, weight, live, count)
                frozen += 1
    return frozen
