"""Baselines without sizes: per-flow fair sharing, FIFO and the strict type orders."""

from __future__ import annotations

from collections.abc import Sequence

from controller.policies._common import type_order
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.registry import register
from workload.dag import CoflowType

EP, PP, DP = CoflowType.EP, CoflowType.PP, CoflowType.DP


@register
class Fair(Policy):
    """Megatron's default (Shoeybi et al., "Megatron-LM", 2019; Narayanan et al., SC 2021):
    no coflow scheduling at all.  Every coflow gets the same rank ``(0,)``, so all share one
    level and the fabric's per-flow (TCP) fair sharing decides."""

    name = "fair"
    aliases = ("megatron",)
    ranks_by_identity = True

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank (0,) for everyone."""
        same = Decision(rank=(0,))
        return {s.coflow_id: same for s in states}


@register
class Fifo(Policy):
    """First-in first-out across coflows (the classic baseline of Varys, Chowdhury et al.,
    SIGCOMM 2014, and Aalo, SIGCOMM 2015): rank = global arrival order ``(arrival_seq,)``;
    compression gives the oldest coflows their own levels."""

    name = "fifo"

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank by arrival sequence."""
        return {s.coflow_id: Decision(rank=(s.arrival_seq,)) for s in states}


class TypeFirst(Policy):
    """Strict, cluster-wide coflow-type order: the naive rules the Hermod thesis compares
    against (Wan et al., HKUST, 2025).  ``first`` lists the order; types not in it (OTHER,
    TP) come last.  Coflows of one type share a level (fair sharing inside it)."""

    first: tuple[CoflowType, ...] = ()
    compression = "lexicographic"
    ranks_by_identity = True

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank (type order,)."""
        order = type_order(self.first)
        return {s.coflow_id: Decision(rank=(order[s.coflow.ctype],)) for s in states}


@register
class DpFirst(TypeFirst):
    """DP before EP before PP (strict; one level per type). Hermod thesis baseline "DP-first"."""

    name = "dp-first"
    first = (DP, EP, PP)


@register
class PpFirst(TypeFirst):
    """PP before EP before DP (strict; one level per type). Hermod thesis baseline "PP-first"."""

    name = "pp-first"
    first = (PP, EP, DP)


@register
class EpFirst(TypeFirst):
    """EP before PP before DP (strict; one level per type). Hermod thesis baseline "EP-first"."""

    name = "ep-first"
    first = (EP, PP, DP)
