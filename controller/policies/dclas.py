"""Aalo's D-CLAS: non-clairvoyant discretised least-attained-service across coflows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from controller.policies._common import check_int, check_positive
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.registry import register
from workload.marking import MAX_LEVELS

MIB = 1 << 20


@register
class DClas(Policy):
    """Aalo D-CLAS (Chowdhury & Stoica, "Efficient Coflow Scheduling Without Prior
    Knowledge", SIGCOMM 2015).  Coflows sit in K queues by the bytes they have already sent
    (cluster-wide); a new coflow starts in the top queue; queue q (q >= 1) holds coflows
    with ``first·mult^(q-1) <= bytes_sent < first·mult^q``, the last queue everything above;
    strict priority across queues, FIFO (arrival order) inside one.

    Defaults follow Aalo: first threshold 10 MB with MB = 2^20 bytes (the coflow-benchmark
    trace's MB), multiplier 10; ``queues`` is capped at 8 (3-bit hardware priority; Aalo's
    reference uses 10).  Rank: ``(queue, arrival_seq)``.  ``byte_thresholds`` lists the K-1
    demotion points so the controller re-decides when a coflow crosses one."""

    name = "dclas"
    aliases = ("aalo",)
    compression = "lexicographic"  # every occupied queue keeps its own level

    def __init__(
        self,
        queues: int = MAX_LEVELS,
        first_threshold_bytes: float = 10 * MIB,
        multiplier: float = 10.0,
    ) -> None:
        """Check the parameters and derive the K-1 demotion thresholds."""
        super().__init__()
        self.queues = check_int(self.name, "queues", queues, 1, MAX_LEVELS)
        first = check_positive(self.name, "first_threshold_bytes", first_threshold_bytes)
        mult = check_positive(self.name, "multiplier", multiplier)
        if mult <= 1:
            raise ValueError(
                f"policy {self.name!r}: parameter 'multiplier': must be > 1, got {multiplier!r}"
            )
        self.byte_thresholds = tuple(int(round(first * mult**i)) for i in range(self.queues - 1))
        self._edges = np.asarray(self.byte_thresholds, dtype=np.int64)

    def queue_of(self, bytes_sent: int) -> int:
        """Queue index (0 = top) of a coflow that has sent ``bytes_sent`` bytes."""
        return int(np.searchsorted(self._edges, bytes_sent, side="right"))

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank (queue by bytes_sent, arrival_seq); never reads flow sizes."""
        sent = np.fromiter((s.bytes_sent for s in states), dtype=np.int64, count=len(states))
        queues = np.searchsorted(self._edges, sent, side="right").tolist()
        return {s.coflow_id: Decision(rank=(q, s.arrival_seq)) for s, q in zip(states, queues)}
