"""What an imported SimAI/AICB or ASTRA-sim 1.0 workload says, format-free: the
parallel layout and, per layer, compute time and collective of its three passes."""

from __future__ import annotations

from dataclasses import dataclass

# Collective names of the text formats -> our collective names.
COMM_TYPES = {
    "ALLREDUCE": "all_reduce",
    "ALLGATHER": "all_gather",
    "REDUCESCATTER": "reduce_scatter",
    "ALLTOALL": "all_to_all",
}
# Group a pass's collective runs over: plain names mean TP for forward / input-gradient
# and DP for weight-gradient (SimAI's MockNccl group types); ``_EP`` / ``_DP_EP`` name
# the expert group and the expert-data-parallel group; ``world`` is every rank.
GROUPS = ("tp", "dp", "ep", "dp_ep", "world")
PASSES = ("fwd", "ig", "wg")


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass of a layer: compute seconds, then a collective (``collective`` "" for
    none) of ``size`` bytes per rank over ``group``."""

    compute_s: float
    collective: str
    group: str
    size: int


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer line: its name, line number and forward / input-gradient /
    weight-gradient passes, and the update delay after the weight-gradient collective."""

    name: str
    line: int
    fwd: Pass
    ig: Pass
    wg: Pass
    update_s: float


@dataclass(frozen=True, slots=True)
class Layout:
    """Ranks: tp fastest, then dp, then pp (Megatron order); ep carved out of dp."""

    tp: int
    dp: int
    pp: int = 1
    ep: int = 1

    @property
    def ranks(self) -> int:
        """All ranks: tp x dp x pp."""
        return self.tp * self.dp * self.pp


@dataclass(frozen=True, slots=True)
class ImportedWorkload:
    """A parsed workload file: ``policy`` is its first token, ``ga`` microbatches per
    iteration (gradient accumulation), ``pp_bytes`` per rank across a stage boundary;
    ``ignored`` lists header fields read but not modelled."""

    source: str
    fmt: str
    policy: str
    layout: Layout
    layers: tuple[Layer, ...]
    ga: int = 1
    pp_bytes: int = 0
    ignored: tuple[str, ...] = ()


def groups(lay: Layout, kind: str, stage: int) -> list[list[int]]:
    """Rank lists of every ``kind`` group of pipeline ``stage`` (``world``: all ranks)."""
    tp, dp, ep = lay.tp, lay.dp, lay.ep
    base = tp * dp * stage

    def rank(t: int, d: int) -> int:
        """Rank of TP index t, DP index d in the stage."""
        return base + t + tp * d

    if kind == "world":
        return [list(range(lay.ranks))]
    if kind == "tp":
        return [[rank(t, d) for t in range(tp)] for d in range(dp)]
    if kind == "dp":
        return [[rank(t, d) for d in range(dp)] for t in range(tp)]
    blocks = range(dp // ep)
    if kind == "ep":
        return [[rank(t, q * ep + e) for e in range(ep)] for t in range(tp) for q in blocks]
    if kind == "dp_ep":
        return [[rank(t, q * ep + e) for q in blocks] for t in range(tp) for e in range(ep)]
    raise ValueError(f"groups: unknown group kind {kind!r}")
