"""The coflow-level policies of CoflowSim as the event loop drives them: which coflows
are active in which order, and (DARK, driven by ``loop.CoflowLoop``) their rates when
one arrives or leaves; FIFO's and SEBF's rates are ``varys.varys_rates``, which
``steploop.StepLoop`` calls."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from coflowbed.sim.coflowsim.dark import DarkQueues, dark_rates


@dataclass
class FlowState:
    """What the policies read and write: per flow bytes left, rate (bit/s), done; per
    job admission time (CoflowSim ms) and bytes sent."""

    first: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    rem: np.ndarray
    rate: np.ndarray
    done: np.ndarray
    start_ms: np.ndarray
    sent: np.ndarray
    racks: int


class CsPolicy(Protocol):
    """A CoflowSim scheduler: admission, departure, rate recomputation."""

    def admit(self, job: int) -> None:
        """A coflow arrived (in arrival order)."""

    def remove(self, job: int) -> None:
        """A coflow finished."""

    def rates(self, st: FlowState, now_ms: float) -> None:
        """Recompute every active flow's rate into ``st.rate``."""


@dataclass
class Ordered:
    """FIFO (``key`` None: arrival order) or SEBF (``key``: static alpha, ties in arrival
    order): the coflows in priority order and in work-conservation order."""

    deadline_ms: np.ndarray
    key: np.ndarray | None = None
    order: list[int] = field(default_factory=list)
    keys: list[float] = field(default_factory=list)

    def admit(self, job: int) -> None:
        """Insert after every coflow whose key is not larger (``addToSortedJobs``)."""
        k = 0.0 if self.key is None else float(self.key[job])
        i = bisect.bisect_right(self.keys, k)
        self.order.insert(i, job)
        self.keys.insert(i, k)

    def remove(self, job: int) -> None:
        """Drop a finished coflow."""
        i = self.order.index(job)
        del self.order[i], self.keys[i]

    def edf(self, start_ms: np.ndarray, now_ms: float) -> np.ndarray:
        """The jobs in work-conservation order: by ``int(start + deadline - now)``,
        stable (CoflowSim sorts by it even without deadlines)."""
        key = lambda j: int(start_ms[j] + self.deadline_ms[j] - now_ms)  # noqa: E731
        return np.array(sorted(self.order, key=key), dtype=np.int64)


@dataclass
class Dark:
    """DARK: D-CLAS queues by bytes sent, per-coflow port shares (``dark``)."""

    queues: DarkQueues = field(default_factory=DarkQueues)

    def admit(self, job: int) -> None:
        """Queue 0, at its end."""
        self.queues.admit(job)

    def remove(self, job: int) -> None:
        """Leave its queue."""
        self.queues.remove(job)

    def rates(self, st: FlowState, now_ms: float) -> None:
        """Move coflows down by bytes sent, then share queue by queue."""
        self.queues.update(st.sent)
        dark_rates(self.queues.order(), st.first, st.src, st.dst, st.done, st.rate, st.racks)
