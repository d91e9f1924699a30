"""What a CoflowSim-model run produced, in CoflowSim milliseconds (1024 per second)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from coflowbed.sim.coflowsim.consts import EPOCH, STEPS_PER_EPOCH


@dataclass(frozen=True)
class CsOutcome:
    """Per job admission and finish, per flow finish (NaN: unfinished), and counts."""

    start_ms: np.ndarray
    finish_ms: np.ndarray
    flow_finish_ms: np.ndarray
    events: int  # rate recomputations (fair: rate changes)
    steps: int  # time steps simulated
    wall_s: float

    @property
    def finished(self) -> bool:
        """Whether every job finished."""
        return not bool(np.isnan(self.finish_ms).any())

    @property
    def cct_ms(self) -> np.ndarray:
        """Coflow completion times (finish - admission), CoflowSim ms."""
        return self.finish_ms - self.start_ms


def admit_steps(arrival_ms: np.ndarray) -> np.ndarray:
    """Time step at which each job is admitted: the start of the epoch before the one
    its arrival falls in (``simulate``: admit every job with arrival <= epoch end)."""
    epochs = [max(0, math.ceil(a / EPOCH) - 1) for a in arrival_ms.tolist()]
    return np.array(epochs, dtype=np.int64) * STEPS_PER_EPOCH
