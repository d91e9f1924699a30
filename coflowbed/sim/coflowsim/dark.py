"""CoflowSim's DARK (Aalo's D-CLAS): ``CoflowSimulatorDark``.

Ten FIFO queues; a coflow enters queue 0 and moves down one queue per factor 10 of bytes
sent beyond 10 MB, checked only when a coflow arrives or leaves (``updateJobOrder``).
Rates, at the same instants (``updateRates``): queue by queue, coflow by coflow, each
flow gets the smaller of (free sender capacity / this coflow's flows there) and (free
receiver capacity / its flows there); no work-conserving pass."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from coflowbed.sim.coflowsim.consts import (
    DARK_FIRST_LIMIT,
    DARK_MULT,
    DARK_QUEUES,
    RACK_BPS,
    ZERO,
)


def queue_of(sent: float) -> int:
    """The queue a coflow that sent ``sent`` bytes belongs in (unbounded)."""
    q, limit = 0, DARK_FIRST_LIMIT
    while limit < sent:
        q += 1
        limit *= DARK_MULT
    return q


@dataclass
class DarkQueues:
    """The queues of ``CoflowSimulatorDark`` (job indices, FIFO within a queue)."""

    queues: list[list[int]] = field(default_factory=lambda: [[] for _ in range(DARK_QUEUES)])
    current: dict[int, int] = field(default_factory=dict)

    def admit(self, job: int) -> None:
        """A new coflow goes to the end of queue 0."""
        self.queues[0].append(job)
        self.current[job] = 0

    def remove(self, job: int) -> None:
        """A finished coflow leaves its queue."""
        for q in self.queues:
            if job in q:
                q.remove(job)
                return

    def update(self, sent: np.ndarray) -> None:
        """``updateJobOrder``: each coflow behind its bytes sent moves down a queue per
        pass; the moved ones join the end of the next queue (and may move on from it)."""
        for i, queue in enumerate(self.queues):
            moving = [j for j in queue if self.current[j] < queue_of(float(sent[j]))]
            for j in moving:
                self.current[j] += 1
            if i + 1 < DARK_QUEUES and moving:
                gone = set(moving)
                self.queues[i] = [j for j in queue if j not in gone]
                self.queues[i + 1].extend(moving)

    def order(self) -> np.ndarray:
        """Every queued coflow, highest queue first."""
        return np.array([j for q in self.queues for j in q], dtype=np.int64)


@njit(cache=True)
def _count(lo, hi, src, dst, done, rate, s_free, r_free, s_n, r_n):
    """Flows of one coflow per port that can send (the others get rate 0)."""
    for f in range(lo, hi):
        if done[f]:
            continue
        if r_free[dst[f]] <= ZERO or s_free[src[f]] <= ZERO:
            rate[f] = 0.0
            continue
        s_n[src[f]] += 1
        r_n[dst[f]] += 1


@njit(cache=True)
def _assign(lo, hi, src, dst, done, rate, s_free, r_free, s_n, r_n):
    """Each counted flow: min(free src / its flows there, free dst / its flows there)."""
    for f in range(lo, hi):
        s, d = src[f], dst[f]
        if done[f] or r_free[d] <= ZERO or r_n[d] == 0 or s_free[s] <= ZERO or s_n[s] == 0:
            continue
        bps = min(s_free[s] / s_n[s], r_free[d] / r_n[d])
        rate[f] = bps if bps > ZERO else 0.0


@njit(cache=True)
def _take(lo, hi, src, dst, done, rate, s_free, r_free, s_n, r_n, s_used, r_used):
    """Subtract the coflow's rates from the free capacities (summed per port first) and
    clear the scratch arrays."""
    for f in range(lo, hi):
        if not done[f] and r_n[dst[f]] > 0 and s_n[src[f]] > 0:
            s_used[src[f]] += rate[f]
            r_used[dst[f]] += rate[f]
    for f in range(lo, hi):
        s, d = src[f], dst[f]
        s_free[s] -= s_used[s]
        r_free[d] -= r_used[d]
        s_used[s], r_used[d], s_n[s], r_n[d] = 0.0, 0.0, 0, 0


@njit(cache=True)
def dark_rates(order, first, src, dst, done, rate, racks):
    """All rates (bit/s, into ``rate``) of the coflows ``order`` (queue order)."""
    s_free = np.full(racks, RACK_BPS)
    r_free = np.full(racks, RACK_BPS)
    s_n, r_n = np.zeros(racks, dtype=np.int64), np.zeros(racks, dtype=np.int64)
    s_used, r_used = np.zeros(racks), np.zeros(racks)
    for j in order:
        lo, hi = first[j], first[j + 1]
        _count(lo, hi, src, dst, done, rate, s_free, r_free, s_n, r_n)
        _assign(lo, hi, src, dst, done, rate, s_free, r_free, s_n, r_n)
        _take(lo, hi, src, dst, done, rate, s_free, r_free, s_n, r_n, s_used, r_used)
