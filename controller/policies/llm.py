"""LLM-training baselines that act on one kind of traffic: Lina and ByteScheduler."""

from __future__ import annotations

from collections.abc import Sequence

from controller.policies._common import check_bool
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.registry import register
from workload.dag import CoflowType


@register
class Lina(Policy):
    """Lina (Li et al., "Accelerating Distributed MoE Training and Inference with Lina",
    USENIX ATC 2023): during the backward pass, MoE all-to-all (EP) goes ahead of the
    gradient all-reduce (DP), which Lina splits and defers.  Lina changes nothing else, so
    every other coflow keeps Megatron's single fair level.

    Rank: ``(0,)`` for EP coflows whose identity phase is ``"bwd"``, ``(1,)`` for all others
    (fair sharing inside each level).  ``backward_only=False`` lifts EP in every phase
    (an EP coflow without a phase tag is only lifted then)."""

    name = "lina"
    compression = "lexicographic"
    ranks_by_identity = True

    def __init__(self, backward_only: bool = True) -> None:
        """Check and keep the parameter."""
        super().__init__()
        self.backward_only = check_bool(self.name, "backward_only", backward_only)

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """EP (in backward) at rank 0, everything else at rank 1."""
        out: dict[str, Decision] = {}
        for s in states:
            ident = s.coflow.identity
            lifted = ident.ctype is CoflowType.EP and (
                not self.backward_only or ident.phase == "bwd"
            )
            out[s.coflow_id] = Decision(rank=(0,) if lifted else (1,))
        return out


@register
class ByteScheduler(Policy):
    """ByteScheduler (Peng et al., "A Generic Communication Scheduler for Distributed DNN
    Training Acceleration", SOSP 2019): DP (gradient/parameter) communication is ordered by
    layer, front layers (small LID) first, because the next forward pass needs them first.

    ByteScheduler manages only DP tensors and holds them back with credits; traffic it does
    not manage (PP, EP, other) is never held, so we rank it above every DP coflow, one fair
    level: rank ``(0,)`` for non-DP, ``(1, lid)`` for DP."""

    name = "bytescheduler"
    compression = "lexicographic"
    ranks_by_identity = True

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Non-DP at rank (0,), DP by layer."""
        out: dict[str, Decision] = {}
        for s in states:
            ident = s.coflow.identity
            if ident.ctype is CoflowType.DP:
                out[s.coflow_id] = Decision(rank=(1, ident.lid))
            else:
                out[s.coflow_id] = Decision(rank=(0,))
        return out
