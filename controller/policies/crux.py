"""Crux's job priorities and their compression onto the queue levels available
(Cao et al., "Crux: GPU-Efficient Communication Scheduling for Deep Learning Training",
SIGCOMM 2024, sections 4.2-4.3), as pure functions of per-job figures.

Interpretation (what this module implements of the paper):

- **Priority** P_j = k_j * I_j with GPU intensity I_j = W_j / t_j (compute per iteration
  over the time the job's per-iteration traffic needs on its busiest link,
  ``workload.multijob.gpu_intensity``).  The correction k_j (the paper's adjustment for
  a job's iteration shape) is taken as 1: every job here is a 1F1B iteration.
  A higher P_j is more urgent.
- **Compression**: jobs sorted by P_j are cut into at most ``classes`` contiguous groups
  (one group = one priority class), keeping the order, so as to maximise the contention
  separated: the sum, over pairs of jobs put in different groups, of their contention
  weight (the paper's job contention graph, weighted by the lower priority of the pair;
  two jobs contend when they share a leaf switch, hence its uplinks, or a host).  With
  at most ``classes`` jobs each gets its own class.  Solved exactly by dynamic
  programming over cut positions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache


def crux_order(priority: Mapping[str, float]) -> list[str]:
    """Jobs most urgent first: higher P_j first, ties by name."""
    return sorted(priority, key=lambda j: (-priority[j], j))


def contention_weight(a: str, b: str, priority: Mapping[str, float], contend: set) -> float:
    """Weight of the contention edge between ``a`` and ``b``: the lower priority of
    the two when they contend, else 0."""
    if frozenset((a, b)) not in contend:
        return 0.0
    return min(priority[a], priority[b])


def compress_jobs(priority: Mapping[str, float], contend: set, classes: int) -> dict[str, int]:
    """Class per job (0 = most urgent, < ``classes``): the order-keeping cut of the
    priority order that separates the most contention weight (module docstring)."""
    order = crux_order(priority)
    if len(order) <= classes:
        return {j: i for i, j in enumerate(order)}
    w = [[contention_weight(a, b, priority, contend) for b in order] for a in order]
    cuts = _best_cuts(tuple(tuple(r) for r in w), classes)
    out, cls = {}, 0
    for i, job in enumerate(order):
        if i in cuts:
            cls += 1
        out[job] = cls
    return out


def _best_cuts(w: tuple[tuple[float, ...], ...], classes: int) -> set[int]:
    """Positions i (a new group starts at job i) of the best cut into <= ``classes``
    contiguous groups: maximises the weight between different groups."""
    n = len(w)

    def inside(lo: int, hi: int) -> float:
        """Weight kept inside the group lo..hi-1 (lost to the cut)."""
        return sum(w[a][b] for a in range(lo, hi) for b in range(a + 1, hi))

    @cache
    def best(lo: int, left: int) -> tuple[float, tuple[int, ...]]:
        """(least weight kept inside groups, cut positions) for jobs lo.. in ``left``
        groups."""
        if left == 1:
            return inside(lo, n), ()
        options = []
        for hi in range(lo + 1, n):
            kept, rest = best(hi, left - 1)
            options.append((inside(lo, hi) + kept, (hi, *rest)))
        return min(options) if options else (inside(lo, n), ())

    return set(best(0, min(classes, n))[1])


def contending_pairs(resources: Mapping[str, Sequence[str]]) -> set:
    """Pairs of jobs (frozensets) that share a resource (a leaf switch)."""
    jobs = sorted(resources)
    return {
        frozenset((a, b))
        for i, a in enumerate(jobs)
        for b in jobs[i + 1 :]
        if set(resources[a]) & set(resources[b])
    }
