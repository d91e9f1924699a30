"""The scenario's ``static`` policy: a fixed level per coflow, and optionally a rate per
sending host (a meter), both written by the user in the scenario.

One object for both backends: the simulator calls ``decide`` (ranks are the levels,
``levels_given``; the per-host rate split over the host's live flows), the emulator's
scheduler reads ``level_of`` and ``host_rate_bps`` (one switch meter per tag and host).
It is not in the policy registry: it needs the scenario's levels to exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.policies.base import CoflowState, Decision, FabricView, Policy


class StaticPolicy(Policy):
    """Fixed level per coflow (the scenario's ``policy: static``, or the levels an
    emulated run used, for ``coflowbed check``).  Coflows without a level get
    ``default_level``.  ``rates_bps`` caps a coflow's aggregate per sending host."""

    name = "static"
    clairvoyant = True  # reads ``remaining`` to split the per-host meter rate
    levels_given = True
    rates_are_limits = True  # meters police: no work-conserving top-up beyond them

    def __init__(
        self,
        levels: Mapping[str, int],
        default_level: int,
        rates_bps: Mapping[str, float] | None = None,
    ) -> None:
        """Levels by coflow id, the level of the others, optional per-host rates."""
        super().__init__()
        self.levels = dict(levels)
        self.default_level = default_level
        self.rates_bps = dict(rates_bps or {})

    def level_of(self, coflow_id: str) -> int:
        """The coflow's level (``default_level`` when the scenario gave none)."""
        return self.levels.get(coflow_id, self.default_level)

    def host_rate_bps(self, coflow_id: str) -> float | None:
        """The coflow's rate per sending host (None: not metered)."""
        return self.rates_bps.get(coflow_id)

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank (level,) and, for metered coflows, per-flow caps."""
        out = {}
        for s in states:
            rate = self.host_rate_bps(s.coflow_id)
            out[s.coflow_id] = Decision(
                (self.level_of(s.coflow_id),), None if rate is None else split_per_host(s, rate)
            )
        return out


def split_per_host(state: CoflowState, rate_bps: float) -> dict[str, float]:
    """``rate_bps`` per sending host split evenly over its live flows."""
    live = state.remaining_flows()
    per_src: dict[str, int] = {}
    for f in live:
        per_src[f.src] = per_src.get(f.src, 0) + 1
    return {f.flow_id: rate_bps / per_src[f.src] for f in live}
