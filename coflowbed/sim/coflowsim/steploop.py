"""The event loop of CoflowSim's ``CoflowSimulator`` (FIFO, SEBF) replayed step by
step: rates are set at admissions (after laying the flows out, ``layoutFlowsInJobOrder``)
and departures (``updateRatesDynamicAlpha``, ``varys.py``); between them the compiled
``stepper.advance`` runs CoflowSim's 8 ms steps with its arithmetic until a job ends or
the next admission is due."""

from __future__ import annotations

import time

import numpy as np

from coflowbed.sim.coflowsim.consts import END_MS, QUANTUM
from coflowbed.sim.coflowsim.jobs import CsWorkload
from coflowbed.sim.coflowsim.outcome import CsOutcome, admit_steps
from coflowbed.sim.coflowsim.policies import Ordered
from coflowbed.sim.coflowsim.reducers import reducers_of
from coflowbed.sim.coflowsim.stepper import STEP_FRACTION, advance, moving
from coflowbed.sim.coflowsim.varys import varys_rates

END_STEP = END_MS // QUANTUM


class StepLoop:
    """One FIFO or SEBF run over a workload (``policy`` holds the coflow order)."""

    def __init__(self, wl: CsWorkload, policy: Ordered) -> None:
        """Initial state: nothing admitted, every flow in its reducer's list."""
        self.wl, self.policy, self.red = wl, policy, reducers_of(wl)
        n, n_jobs = len(wl.flow_bytes), len(wl.jobs)
        self.rem, self.rate = wl.flow_bytes.copy(), np.zeros(n)
        self.alive = np.ones(n, dtype=np.bool_)
        self.st = (
            self.red.shuffle_bytes.copy(),
            np.zeros(len(self.red.rack), dtype=np.bool_),
            np.diff(self.red.first),
            self.red.job,
            np.diff(self.red.job_first),
            np.full(len(self.red.rack), np.nan),
            np.full(n_jobs, np.nan),
        )
        self.start_ms, self.flow_finish = np.full(n_jobs, np.nan), np.full(n, np.nan)
        self.admit_at = admit_steps(wl.arrival_ms)
        self.laid = np.zeros(0, dtype=np.int64)
        self.step, self.events, self.next_job = 0, 0, 0

    def run(self) -> CsOutcome:
        """Simulate until every job finished or CoflowSim's end time."""
        t0 = time.perf_counter()
        while (self.next_job < len(self.wl.jobs) or self.policy.order) and self.step < END_STEP:
            if not self._advance():
                break
        return CsOutcome(
            self.start_ms,
            self.st[6],
            self._flow_ends(),
            self.events,
            self.step,
            time.perf_counter() - t0,
        )

    def _next_admission(self) -> int:
        """Step of the next admission (CoflowSim's end step when none is left)."""
        if self.next_job >= len(self.wl.jobs):
            return int(END_STEP)
        return int(self.admit_at[self.next_job])

    def _advance(self) -> bool:
        """Steps to the next departure or admission; False if nothing can ever move."""
        horizon = self._next_admission() - self.step
        if not self.policy.order:
            self.step += horizon
            return self._admit()
        reds, first, flows = moving(self.laid, self.red.first, self.alive, self.rate, *self.st[:2])
        if not len(reds) and self.next_job >= len(self.wl.jobs):
            return False
        per_step = self.rate[flows] / 8 * STEP_FRACTION
        mv = (reds, first, flows, self.rem[flows], per_step, np.ones(len(flows), dtype=np.bool_))
        n = advance(horizon, self.step, mv, self.st, self.flow_finish)
        self.rem[flows], self.alive[flows] = mv[3], mv[5]
        self.step += n
        self._depart()
        if self.step == self._next_admission():
            self._admit()
        return True

    def _depart(self) -> None:
        """Jobs that ended in the last step leave; rates are recomputed at its start."""
        gone = [j for j in self.policy.order if self.st[6][j] == self.step * QUANTUM]
        if not gone:
            return
        for j in gone:
            self.policy.remove(j)
        self._rates((self.step - 1) * QUANTUM)

    def _admit(self) -> bool:
        """Admit every job of this epoch (start = epoch start), lay out, set rates."""
        while self.next_job < len(self.wl.jobs) and self.admit_at[self.next_job] == self.step:
            self.start_ms[self.next_job] = self.step * QUANTUM
            self.policy.admit(self.next_job)
            self.next_job += 1
        self.laid = self._layout()
        self._rates(self.step * QUANTUM)
        return True

    def _layout(self) -> np.ndarray:
        """The reducers not yet ended of the jobs in priority order (``flowsInRacks``)."""
        jf = self.red.job_first
        reds = [np.arange(jf[j], jf[j + 1]) for j in self.policy.order]
        laid = np.concatenate(reds) if reds else np.zeros(0, dtype=np.int64)
        return laid[~self.st[1][laid]]

    def _rates(self, now_ms: float) -> None:
        """``updateRatesDynamicAlpha`` at ``now_ms``."""
        order = np.array(self.policy.order, dtype=np.int64)
        edf = self.policy.edf(self.start_ms, now_ms)
        r = self.red
        varys_rates(
            order,
            edf,
            r.job_first,
            r.first,
            r.rack,
            self.wl.flow_src,
            self.rem,
            self.alive,
            self.st[0],
            self.rate,
            self.wl.racks,
        )
        self.events += 1

    def _flow_ends(self) -> np.ndarray:
        """Per flow finish ms; a flow left in the list of a reducer that ended by its
        ``shuffleBytesLeft`` ends with that reducer."""
        ends = self.flow_finish.copy()
        red_of = np.repeat(np.arange(len(self.red.rack)), np.diff(self.red.first))
        stuck = np.isnan(ends)
        ends[stuck] = self.st[5][red_of[stuck]]
        return ends
