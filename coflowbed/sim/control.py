"""A controller's delay in the model: the time between a scheduling decision and the
level being in force on the switches, which the fluid model otherwise takes to be zero.
``release_s``: a released coflow's flows start that long after its release (the
emulator's ``register`` round trip, answered once the coflow's entry is written);
``rerank_s``: a coflow already running gets a new level that long after the decision
that moved it (the re-rank's write).  Policies with levels fixed for the whole DAG
(``ranks_by_identity``: fair, Hermod, Lina, ...) pay none: the emulator installs them
before the run.  Every other policy pays it, the scenario's ``static`` too: the emulator
registers each of its releases as a dynamic policy's (its levels never move, so it pays
only on release).  See docs/simulator.md, "Control delay".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.policies.base import Policy

MAX_CONTROL_DELAY_S = 10.0  # the largest delay a run takes (a controller far slower is broken)


@dataclass(frozen=True)
class ControlDelay:
    """Seconds from release to the coflow's level installed (its flows start then) and
    from a re-ranking decision to the new level installed."""

    release_s: float = 0.0
    rerank_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("release_s", "rerank_s"):
            try:
                check_control_delay(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"control delay {name}: {exc}") from None

    @classmethod
    def of(cls, delay: ControlDelay | float | None) -> ControlDelay:
        """``delay`` as a ControlDelay: a number is both delays, None is none."""
        if delay is None:
            return NO_DELAY
        if isinstance(delay, ControlDelay):
            return delay
        return cls(float(delay), float(delay))

    def __bool__(self) -> bool:
        return self.release_s > 0 or self.rerank_s > 0

    def for_policy(self, policy: Policy) -> ControlDelay:
        """This delay if ``policy`` decides levels while the run goes, else none."""
        return self if pays_control_delay(policy) else NO_DELAY

    def to_json(self) -> dict:
        """As summary.json records it."""
        return {"release_s": self.release_s, "rerank_s": self.rerank_s}


def pays_control_delay(policy: Policy) -> bool:
    """Whether a release under ``policy`` waits for the controller, as in the emulator
    (``controller.scheduler.LiveScheduler``: levels are fixed for the DAG, and written
    before the run, only for ``ranks_by_identity`` policies)."""
    return not policy.ranks_by_identity


def check_control_delay(value: object) -> float:
    """``value`` as seconds, or ValueError unless it is a number in [0, 10]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and 0.0 <= value <= MAX_CONTROL_DELAY_S):
        raise ValueError(f"must be >= 0 and <= {MAX_CONTROL_DELAY_S:g} s, got {value!r}")
    return float(value)


NO_DELAY = ControlDelay()
