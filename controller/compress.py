"""Priority compression: map any policy's ranks onto the fabric's K hardware levels.

Level 0 is the most urgent.  Every scheme is order-preserving: for two coflows a, b with
rank(a) < rank(b), level(a) <= level(b); equal ranks share a level; when there are at most
K distinct ranks, each gets its own level (0, 1, ... in rank order).  With more:

- ``top``: the K-1 most urgent distinct ranks get levels 0..K-2, all others share K-1.
- ``quantile``: distinct ranks are cut into K runs of near-equal count.
- ``lexicographic`` (alias ``mid-first``): ranks are tuples compared field by field; the
  first field is separated first (Hermod: MID buckets), then the second (CType), then the
  third (LID)..., only as far as levels remain.  Coflows whose first fields differ get
  different levels while there are at most K distinct first fields; spare levels go to
  the most urgent groups first.  Beyond K groups, the first K-1 get their own level.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.policies.base import Decision, Rank
from workload.marking import MAX_LEVELS

_ALIASES = {"mid-first": "lexicographic"}


def check_levels(levels: Any) -> int:
    """``levels`` if it is an int in 1..8, else ValueError."""
    if isinstance(levels, bool) or not isinstance(levels, int) or not 1 <= levels <= MAX_LEVELS:
        raise ValueError(f"compress: levels must be an integer in 1..{MAX_LEVELS}, got {levels!r}")
    return levels


def scheme_name(how: str) -> str:
    """Canonical scheme name for ``how`` (aliases resolved); ValueError listing valid ones."""
    name = _ALIASES.get(how, how)
    if name not in _SCHEMES:
        valid = ", ".join([*_SCHEMES, *_ALIASES])
        raise ValueError(f"compress: unknown scheme {how!r}; valid: {valid}")
    return name


def compress(ranks: Mapping[str, Rank], levels: int, how: str = "top") -> dict[str, int]:
    """Level (0 = most urgent, < ``levels``) per coflow id, order-preserving (see module doc)."""
    scheme = _SCHEMES[scheme_name(how)]
    k = check_levels(levels)
    keyed = {cid: _as_tuple(cid, r) for cid, r in ranks.items()}
    distinct = _sorted_distinct(keyed.values())
    lookup = dict(zip(distinct, scheme(distinct, k)))
    return {cid: lookup[r] for cid, r in keyed.items()}


def keep_levels(
    levels: Mapping[str, int], previous: Mapping[str, int], k: int, room: bool = False
) -> dict[str, int]:
    """``levels`` relabelled so that as few coflows as possible move to a more urgent
    level than ``previous`` gave them: the same groups in the same order (so the same
    strict-priority shares), each group at the most urgent level that promotes none of
    its members and is below the group before it, and only where the ``k`` levels run
    out below, promoted as little as that needs.  A coflow moved up mid-flow has its
    new packets overtake its own queued ones (TCP takes that reordering for loss);
    moved down, its old packets still leave first.  ``room`` (after a completion): if
    the lowest level ends up used, ``levels`` as they are, every group as urgent as it
    can be, so the next arrivals find levels free below without moving anyone."""
    order = sorted(set(levels.values()))
    floor: dict[int, int] = {}
    for cid, lv in levels.items():
        if cid in previous:
            floor[lv] = max(floor.get(lv, 0), previous[cid])
    out, last = {}, -1
    for i, lv in enumerate(order):
        last = min(max(floor.get(lv, 0), last + 1), k - len(order) + i)
        out[lv] = last
    if room and last == k - 1:
        return dict(levels)
    return {cid: out[lv] for cid, lv in levels.items()}


def compress_decisions(
    decisions: Mapping[str, Decision], levels: int, how: str = "top"
) -> dict[str, int]:
    """``compress`` applied to the ranks of a policy's decisions."""
    return compress({cid: d.rank for cid, d in decisions.items()}, levels, how)


def describe_mapping(ranks: Mapping[str, Rank], levels: int, how: str = "top") -> dict:
    """JSON-able record of the mapping for result files: scheme, K and, per distinct rank
    (most urgent first), its level and the coflows holding it."""
    mapping = compress(ranks, levels, how)
    holders: dict[tuple, list[str]] = {}
    for cid, r in ranks.items():
        holders.setdefault(_as_tuple(cid, r), []).append(cid)
    rows = [
        {"rank": [_plain(x) for x in r], "level": mapping[ids[0]], "coflows": sorted(ids)}
        for r, ids in sorted(holders.items(), key=lambda kv: kv[0])
    ]
    return {"scheme": scheme_name(how), "levels": levels, "table": rows}


def _as_tuple(cid: str, rank: Any) -> tuple:
    """The rank as a tuple (a bare number becomes a 1-tuple); ValueError on NaN."""
    r = rank if isinstance(rank, tuple) else (rank,)
    if any(isinstance(x, float) and math.isnan(x) for x in r):
        raise ValueError(f"compress: rank of coflow {cid!r} contains NaN: {rank!r}")
    return r


def _sorted_distinct(ranks) -> list[tuple]:
    """Distinct ranks in increasing order; ValueError when they cannot be compared."""
    try:
        return sorted(set(ranks))
    except TypeError as e:
        raise ValueError(f"compress: ranks are not mutually comparable ({e})") from e


def _plain(x: Any) -> Any:
    """A JSON-able Python scalar for a rank field (numpy scalars unwrapped)."""
    x = x.item() if hasattr(x, "item") else x
    return x if isinstance(x, (int, float, str, bool)) or x is None else str(x)


def _top(distinct: Sequence[tuple], k: int) -> list[int]:
    """The k-1 most urgent distinct ranks get their own level, the rest share k-1."""
    return [min(i, k - 1) for i in range(len(distinct))]


def _quantile(distinct: Sequence[tuple], k: int) -> list[int]:
    """Distinct ranks cut into k runs of near-equal length."""
    m = len(distinct)
    return list(range(m)) if m <= k else [i * k // m for i in range(m)]


def _lexicographic(distinct: Sequence[tuple], k: int) -> list[int]:
    """Field-by-field separation (first field first) as far as k levels allow."""
    out = [0] * len(distinct)
    _lex_fill(distinct, 0, len(distinct), 0, k, 0, out)
    return out


def _lex_fill(
    d: Sequence[tuple], lo: int, hi: int, depth: int, budget: int, base: int, out: list[int]
) -> None:
    """Assign levels base..base+budget-1 to the sorted distinct ranks d[lo:hi]."""
    if hi - lo <= budget:
        out[lo:hi] = range(base, base + hi - lo)
        return
    groups = _groups(d, lo, hi, depth)
    if len(groups) >= budget:
        for g, (glo, ghi) in enumerate(groups):
            out[glo:ghi] = [base + min(g, budget - 1)] * (ghi - glo)
        return
    spare, level = budget - len(groups), base
    for glo, ghi in groups:  # spare levels go to the most urgent groups first
        take = min(spare, ghi - glo - 1)
        spare -= take
        _lex_fill(d, glo, ghi, depth + 1, 1 + take, level, out)
        level += 1 + take


def _groups(d: Sequence[tuple], lo: int, hi: int, depth: int) -> list[tuple[int, int]]:
    """Runs of d[lo:hi] sharing the prefix of length depth+1 (contiguous: d is sorted)."""
    runs: list[tuple[int, int]] = []
    start = lo
    for i in range(lo + 1, hi):
        if d[i][: depth + 1] != d[start][: depth + 1]:
            runs.append((start, i))
            start = i
    runs.append((start, hi))
    return runs


_SCHEMES: dict[str, Callable[[Sequence[tuple], int], list[int]]] = {
    "top": _top,
    "quantile": _quantile,
    "lexicographic": _lexicographic,
}
