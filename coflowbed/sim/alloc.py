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
SMALL_FILL = 256  # fewer live flows than this: plain rounds (no link index)
AGGREGATE_MIN = 256  # groups smaller than this are filled flow by flow (no unique pass)


def full_below(capacity: np.ndarray) -> np.ndarray:
    """Per link, the free capacity under which it counts as full (round-off guard)."""
    return REL_TOL * np.where(np.isfinite(capacity), capacity, 0.0)


def waterfill(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray | None = None,
              eps: np.ndarray | None = None, weights: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of the flows in ``paths`` on ``residual`` capacity (progressive
    filling), each flow at most ``caps`` (None = no caps).  Subtracts what it gives from
    ``residual`` and returns the rates.  ``eps``: per-link free capacity that counts as
    full (default: ``full_below(residual)``).  ``weights``: positive integer multiplicity
    of each row (a row then stands for that many identical flows; rates are per flow)."""
    eps = full_below(residual) if eps is None else eps
    _clean(residual, eps)
    if caps is not None and weights is not None:
        raise ValueError("waterfill: caps and weights cannot be combined")
    rates = np.zeros(paths.shape[0])
    live = np.arange(paths.shape[0])
    if caps is not None:
        granted = _grant_feasible_caps(paths, residual, caps, rates, eps)
        live = np.setdiff1d(live, granted, assume_unique=True)
    if live.size < SMALL_FILL:
        _fill_small(paths, residual, caps, eps, weights, rates, live)
        return rates
    fill = _Filling(paths, residual, eps, weights, rates)
    fill.freeze(np.setdiff1d(np.arange(paths.shape[0]), live, assume_unique=True), None)
    fill.run(caps)
    return rates


def _fill_small(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray | None,
                eps: np.ndarray, weights: np.ndarray | None, rates: np.ndarray,
                live: np.ndarray) -> None:
    """Progressive filling of the ``live`` flows by plain rounds over them (cheaper than
    building ``_Filling``'s index for a few flows); same result as ``_Filling.run``."""
    n_links, width = residual.shape[0], paths.shape[1]
    w = np.ones(paths.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    while live.size:
        lk = paths[live]
        count = np.bincount(lk.ravel(), np.repeat(w[live], width), n_links)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, residual / count, np.inf)
        link = int(share.argmin())
        step = float(share[link])
        if caps is not None:
            head = caps[live] - rates[live]
            capped = head <= step
            if capped.any():
                # Flows whose cap is below every link's fair share reach it before any
                # link fills (freezing them only raises other shares): freeze at the cap.
                idx = live[capped]
                rates[idx] = caps[idx]
                residual -= np.bincount(paths[idx].ravel(), np.repeat(head[capped], width), n_links)
                _clean(residual, eps)
                live = live[~capped]
                continue
        if not np.isfinite(step):
            raise ValueError("a flow crosses no link of finite capacity")
        rates[live] += step
        with np.errstate(invalid="ignore"):
            residual -= step * count
        full = _clean(residual, eps)
        full[link] = True  # the bottleneck is full even if round-off left it above eps
        residual[link] = 0.0
        live = live[~full[lk].any(axis=1)]


class _Filling:
    """Progressive filling on a link -> flows index (CSR), so that a round costs O(links
    + flows frozen in it) instead of O(live flows): every live flow has the same rate
    (``level``), and a link's live-flow count is updated only when flows freeze."""

    def __init__(self, paths: np.ndarray, residual: np.ndarray, eps: np.ndarray,
                 weights: np.ndarray | None, rates: np.ndarray) -> None:
        """Index ``paths`` by link; all flows start live at rate 0."""
        n, self.width = paths.shape
        self.paths, self.residual, self.eps = paths, residual, eps
        self.n_links = residual.shape[0]
        self.w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        flat = paths.ravel()
        # numpy's stable sort is a linear radix sort for 16-bit keys: use it when links fit.
        keys = flat.astype(np.int16) if self.n_links <= np.iinfo(np.int16).max else flat
        self.by_link = np.argsort(keys, kind="stable") // self.width  # flows, link by link
        self.start = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=self.n_links))])
        self.count = np.bincount(flat, np.repeat(self.w, self.width), self.n_links)
        self.live = np.ones(n, dtype=bool)
        self.n_live = n
        self.rates = rates
        self.slot = np.zeros(n, dtype=np.int64)  # scratch for de-duplicating flow lists
        self.level = 0.0  # the rate of every live flow

    def freeze(self, idx: np.ndarray, rate: float | np.ndarray | None) -> None:
        """Flows ``idx`` (live) stop growing at ``rate`` (None: keep their rates)."""
        if not idx.size:
            return
        if rate is not None:
            self.rates[idx] = rate
        self.live[idx] = False
        self.n_live -= idx.size
        self.count -= np.bincount(self.paths[idx].ravel(), np.repeat(self.w[idx], self.width),
                                  self.n_links)
        self.count[self.count < 0.5] = 0.0  # counts are integers: drop round-off

    def run(self, caps: np.ndarray | None) -> None:
        """Raise every live flow's rate until each is frozen by a full link or its cap."""
        cap_order, ptr = self._cap_order(caps)
        while self.n_live:
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(self.count > 0, self.residual / self.count, np.inf)
            link = int(share.argmin())
            step = float(share[link])
            if ptr < cap_order.size and caps[cap_order[ptr]] - self.level <= step:
                # Flows whose cap is below every link's fair share reach it before any
                # link fills (freezing them only raises other shares): freeze at the cap.
                end = int(np.searchsorted(caps[cap_order], self.level + step, side="right"))
                idx = cap_order[ptr:max(end, ptr + 1)]
                idx = idx[self.live[idx]]
                ptr = max(end, ptr + 1)
                head = (caps[idx] - self.level) * self.w[idx]
                self.residual -= np.bincount(self.paths[idx].ravel(),
                                             np.repeat(head, self.width), self.n_links)
                _clean(self.residual, self.eps)
                self.freeze(idx, caps[idx])
                continue
            if not np.isfinite(step):
                raise ValueError("a flow crosses no link of finite capacity")
            self._raise(step, link)

    def _cap_order(self, caps: np.ndarray | None) -> tuple[np.ndarray, int]:
        """Live flows with a finite cap, by increasing cap; start pointer."""
        if caps is None:
            return np.zeros(0, dtype=np.int64), 0
        idx = np.flatnonzero(self.live & np.isfinite(caps))
        return idx[np.argsort(caps[idx], kind="stable")], 0

    def _raise(self, step: float, link: int) -> None:
        """Raise every live flow by ``step``; freeze the flows of links now full."""
        self.level += step
        with np.errstate(invalid="ignore"):
            self.residual -= step * self.count
        full = _clean(self.residual, self.eps) & (self.count > 0)
        full[link] = True  # the bottleneck is full even if round-off left it above eps
        self.residual[link] = 0.0
        links = np.flatnonzero(full)
        idx = np.concatenate([self.by_link[self.start[k]:self.start[k + 1]] for k in links])
        idx = idx[self.live[idx]]
        # A flow may sit on two full links: keep one copy (O(len) instead of a sort).
        self.slot[idx] = np.arange(idx.size)
        self.freeze(idx[self.slot[idx] == np.arange(idx.size)], self.level)


def _grant_feasible_caps(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray,
                         rates: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Give every flow whose links can carry all their flows' caps its cap at once (such
    links never fill, so max-min gives those flows exactly their caps); return the
    indices of the flows granted.  Saves the rounds a policy's feasible rates (MADD)
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
    return np.flatnonzero(ok)


def _clean(residual: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Set links with free capacity <= ``eps`` (round-off, or below 0) to exactly 0;
    return the mask of full links."""
    full = residual <= eps
    residual[full] = 0.0
    return full


def allocate(paths: np.ndarray, levels: np.ndarray, capacity: np.ndarray,
             caps: np.ndarray | None = None, hard_caps: bool = False,
             path_id: np.ndarray | None = None) -> np.ndarray:
    """Rates (bit/s) of flows with ``paths`` at priority ``levels`` (0 = most urgent)
    on links of ``capacity``: strict priority by level, max-min within a level; with
    ``caps``, capped pass first and a work-conserving pass for the leftover, unless
    ``hard_caps`` (meters: a flow never exceeds its cap).  ``path_id`` (optional, ints
    >= 0, equal only for flows with equal ``paths`` rows) lets uncapped passes fill one
    row per distinct path and level, weighted by its flow count."""
    residual = capacity.astype(float).copy()
    eps = full_below(capacity)
    rates = np.zeros(paths.shape[0])
    if paths.shape[0] == 0:
        return rates
    grouping = None
    if caps is None:
        passes = [None]
    else:
        passes = [caps] if hard_caps else [caps, None]
    for cap in passes:
        if cap is not None and _grant_all_caps(paths, residual, cap, rates, eps):
            continue
        # Free capacity only shrinks during a pass, so a flow without room now gets none
        # later: visit only the groups with some flow that has room (one vector pass).
        room = (residual[paths] > 0).all(axis=1)
        if not room.any():
            continue
        groups, group_of = grouping = grouping or _level_groups(levels)
        for k in np.flatnonzero(np.bincount(group_of[room], minlength=len(groups))).tolist():
            g = groups[k]
            if not _has_room(residual, paths[g]):
                continue
            if cap is None:
                rates[g] += _fill_by_path(paths, g, residual, eps, path_id)
            else:
                rates[g] += waterfill(paths[g], residual, cap[g] - rates[g], eps)
    return rates


def _level_groups(levels: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Flow indices per level, most urgent first, and each flow's group number."""
    if levels.min() == levels.max():  # one level (e.g. fair sharing): no sort needed
        order, bounds = np.arange(levels.size), np.zeros(0, dtype=np.int64)
    else:
        order = np.argsort(levels, kind="stable")
        bounds = np.flatnonzero(np.diff(levels[order])) + 1
    groups = np.split(order, bounds)
    group_of = np.empty(levels.size, dtype=np.int64)
    group_of[order] = np.repeat(np.arange(len(groups)), np.diff(np.r_[0, bounds, order.size]))
    return groups, group_of


def _grant_all_caps(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray,
                    rates: np.ndarray, eps: np.ndarray) -> bool:
    """If every flow has a finite cap and all caps together fit every link, strict
    priority gives each flow exactly its cap (each level finds room for all of its
    caps): grant them in one step and return True; else change nothing, return False.
    (A policy's own feasible rates, e.g. MADD plus greedy work conservation.)"""
    if not np.isfinite(caps).all():
        return False
    demand = np.bincount(paths.ravel(), np.repeat(caps, paths.shape[1]), residual.shape[0])
    if not (demand <= residual + eps).all():
        return False
    rates += caps
    residual -= demand
    _clean(residual, eps)
    return True


def _fill_by_path(paths: np.ndarray, g: np.ndarray, residual: np.ndarray, eps: np.ndarray,
                  path_id: np.ndarray | None) -> np.ndarray:
    """Uncapped max-min rates of flows ``g``: flows on one path always get the same
    rate, so fill one row per distinct path, weighted by its count, when that saves."""
    if path_id is None or g.size < AGGREGATE_MIN:
        return waterfill(paths[g], residual, None, eps)
    first, inv, counts = _distinct(path_id[g])
    if first.size > 0.8 * g.size:  # nearly every flow has its own path: no gain
        return waterfill(paths[g], residual, None, eps)
    return waterfill(paths[g[first]], residual, None, eps, counts)[inv]


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a position of each distinct key, each element's distinct-key number, counts);
    by counting when the keys are dense (no sort), else by ``np.unique``."""
    span = int(keys.max()) + 1
    if span > 4 * keys.size:
        _, first, inv, counts = np.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True)
        return first, inv.ravel(), counts
    counts = np.bincount(keys, minlength=span)
    present = np.flatnonzero(counts)
    pos = np.empty(span, dtype=np.int64)
    pos[keys] = np.arange(keys.size)  # any one position per key will do
    number = np.empty(span, dtype=np.int64)
    number[present] = np.arange(present.size)
    return pos[present], number[keys], counts[present]


def _has_room(residual: np.ndarray, paths: np.ndarray) -> bool:
    """Whether some flow of the group has free capacity on every link it crosses."""
    return bool((residual[paths] > 0).all(axis=1).any())
