"""What one simulation run measures as it goes: each coflow's timing
(``CoflowOutcome``) and the run's counters (``SimStats``), written by the engine and by
its compiled runs (``coflowbed.sim.grouprun``) alike."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class CoflowOutcome:
    """Simulated timing of one coflow (NaN = not reached)."""

    release_s: float = math.nan
    start_s: float = math.nan
    finish_s: float = math.nan
    level: int | None = None  # level at the coflow's first decision
    rank: str = ""


@dataclass
class SimStats:
    """Counters of one simulation run."""

    events: int = 0
    policy_calls: int = 0
    allocations: int = 0
    flow_visits: int = 0  # sum over events of the active flows (the per-flow work floor)
    wall_s: float = 0.0
    sim_end_s: float = 0.0
    relevels: int = 0  # instants at which delayed level changes came into force
    finished: bool = False
