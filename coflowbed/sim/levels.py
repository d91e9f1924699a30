"""From policy decisions to simulated priority levels, and the scenario's 'static' policy.

Two level modes:

- ``K`` (1..8): the ranks are compressed onto the fabric's K hardware queues by
  ``controller.compress`` with the policy's own scheme, exactly as the emulator does.
- exact (``None``): every distinct rank is its own level (dense ranking), the total order
  the classic reference simulators assume; equal ranks share a level (max-min fair).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.compress import compress
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from workload.marking import MAX_LEVELS


def assign_levels(decisions: Mapping[str, Decision], levels: int | None,
                  how: str = "top") -> dict[str, int]:
    """Level per coflow id (0 = most urgent) for ``levels`` queues or exact (None)."""
    ranks = {cid: _as_tuple(d.rank) for cid, d in decisions.items()}
    if levels is not None:
        return compress(ranks, levels, how)
    try:
        distinct = sorted(set(ranks.values()))
    except TypeError as exc:
        raise ValueError(f"policy ranks are not mutually comparable ({exc})") from None
    dense = {r: i for i, r in enumerate(distinct)}
    return {cid: dense[r] for cid, r in ranks.items()}


def _as_tuple(rank) -> tuple:
    """A rank as a tuple (bare numbers allowed)."""
    return rank if isinstance(rank, tuple) else (rank,)


def parse_levels(text: str | int | None, default: int | None) -> int | None:
    """``"exact"`` -> None, ``"4"`` -> 4, None -> ``default``; ValueError otherwise."""
    if text is None:
        return default
    if str(text) == "exact":
        return None
    try:
        k = int(text)
    except ValueError:
        raise ValueError(f"levels must be 1..{MAX_LEVELS} or 'exact', got {text!r}") from None
    if not 1 <= k <= MAX_LEVELS:
        raise ValueError(f"levels must be 1..{MAX_LEVELS} or 'exact', got {text!r}")
    return k


class StaticPolicy(Policy):
    """Fixed level per coflow (the scenario's ``policy: static``, or the levels an
    emulated run used, for ``coflowbed check``).  Coflows without a level get the lowest
    one, as in the emulator.  ``rates_bps`` caps a coflow's aggregate per sending host
    (the emulator's per-(tag, host) meter): the cap is split evenly over that host's
    flows of the coflow that still have bytes left."""

    name = "static"
    clairvoyant = True  # reads ``remaining`` to split the per-host meter rate
    rates_are_limits = True  # meters police: no work-conserving top-up beyond them

    def __init__(self, levels: Mapping[str, int], default_level: int,
                 rates_bps: Mapping[str, float] | None = None) -> None:
        super().__init__()
        self.levels = dict(levels)
        self.default_level = default_level
        self.rates_bps = dict(rates_bps or {})

    def decide(self, states: Sequence[CoflowState], fabric: FabricView,
               now: float) -> dict[str, Decision]:
        """Rank (level,) and, for metered coflows, per-flow caps."""
        out = {}
        for s in states:
            rank = (self.levels.get(s.coflow_id, self.default_level),)
            rate = self.rates_bps.get(s.coflow_id)
            out[s.coflow_id] = Decision(rank, None if rate is None else _split(s, rate))
        return out


def _split(state: CoflowState, rate_bps: float) -> dict[str, float]:
    """``rate_bps`` per sending host split evenly over its live flows."""
    live = state.remaining_flows()
    per_src: dict[str, int] = {}
    for f in live:
        per_src[f.src] = per_src.get(f.src, 0) + 1
    return {f.flow_id: rate_bps / per_src[f.src] for f in live}
