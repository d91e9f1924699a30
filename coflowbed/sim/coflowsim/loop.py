"""The event loop of CoflowSim's DARK simulator (``CoflowSimulatorDark``), without
stepping (FIFO and SEBF replay CoflowSim's steps: ``steploop.py``): rates change only
when coflows are admitted (at epoch starts) or leave, so between two such instants each
flow moves ``rate/1024`` bytes per 8 ms step and the step it finishes in (``remaining <=
ZERO``) is known in closed form.  The loop jumps from one admission or departure to the
next."""

from __future__ import annotations

import time

import numpy as np

from coflowbed.sim.coflowsim.consts import END_MS, QUANTUM, SECOND, ZERO
from coflowbed.sim.coflowsim.jobs import CsWorkload
from coflowbed.sim.coflowsim.outcome import CsOutcome, admit_steps
from coflowbed.sim.coflowsim.policies import CsPolicy, FlowState

BYTES_PER_BPS = QUANTUM / SECOND / 8  # bytes one bit/s moves in a step


def steps_to_finish(rem: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Steps until each flow has at most ``ZERO`` bytes left (inf at rate 0)."""
    per_step = rate * BYTES_PER_BPS
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.ceil((rem - ZERO) / per_step)
    return np.where(per_step > 0, np.maximum(k, 1.0), np.inf)


def job_maxima(jobs: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(job ids, max of ``k`` per job) for flows grouped by job (``jobs`` sorted)."""
    starts = np.flatnonzero(np.r_[True, jobs[1:] != jobs[:-1]])
    return jobs[starts], np.maximum.reduceat(k, starts)


class CoflowLoop:
    """One run of a coflow-level policy over a workload."""

    def __init__(self, wl: CsWorkload, policy: CsPolicy) -> None:
        """Initial state: nothing admitted."""
        n = len(wl.flow_bytes)
        self.wl, self.policy = wl, policy
        self.st = FlowState(
            wl.job_first,
            wl.flow_src,
            wl.flow_dst,
            wl.flow_bytes.copy(),
            np.zeros(n),
            np.zeros(n, dtype=np.bool_),
            np.full(len(wl.jobs), np.nan),
            np.zeros(len(wl.jobs)),
            wl.racks,
        )
        self.finish = np.full(len(wl.jobs), np.nan)
        self.flow_finish = np.full(n, np.nan)
        self.admit_at = admit_steps(wl.arrival_ms)
        self.act = np.zeros(0, dtype=np.int64)
        self.step, self.events, self.next_job = 0, 0, 0

    def run(self) -> CsOutcome:
        """Simulate until every job finished or CoflowSim's end time."""
        t0 = time.perf_counter()
        while self.next_job < len(self.wl.jobs) or len(self.act):
            if self.step * QUANTUM >= END_MS or not self._advance():
                break
        return CsOutcome(
            self.st.start_ms,
            self.finish,
            self.flow_finish,
            self.events,
            self.step,
            time.perf_counter() - t0,
        )

    def _next_admission(self) -> float:
        """Step of the next admission (inf when none is left)."""
        if self.next_job >= len(self.wl.jobs):
            return np.inf
        return float(self.admit_at[self.next_job])

    def _advance(self) -> bool:
        """Move to the next departure or admission; False if nothing can ever move."""
        to_admit = self._next_admission() - self.step
        if not len(self.act):
            self.step += int(to_admit)
            self._admit()
            return True
        k = steps_to_finish(self.st.rem[self.act], self.st.rate[self.act])
        jobs, job_k = job_maxima(self.wl.flow_job[self.act], k)
        n = min(float(job_k.min()), to_admit)
        if not np.isfinite(n):
            return False
        self._move(k, int(n))
        self._depart(jobs[job_k == n])
        if self.step == self._next_admission():
            self._admit()
        return True

    def _move(self, k: np.ndarray, n: int) -> None:
        """``n`` steps at the current rates: bytes moved, flows finished on the way."""
        act, st = self.act, self.st
        moved = np.minimum(st.rate[act] * BYTES_PER_BPS * n, st.rem[act])
        over = k <= n
        moved[over] = st.rem[act][over]
        st.rem[act] -= moved
        st.sent += np.bincount(self.wl.flow_job[act], moved, minlength=len(st.sent))
        st.done[act[over]] = True
        self.flow_finish[act[over]] = (self.step + k[over]) * QUANTUM
        self.act = act[~over]
        self.step += n

    def _depart(self, jobs: np.ndarray) -> None:
        """Jobs whose last flow just finished leave; rates are recomputed."""
        if not len(jobs):
            return
        for j in jobs.tolist():
            self.finish[j] = self.step * QUANTUM
            self.policy.remove(j)
        self.policy.rates(self.st, (self.step - 1) * QUANTUM)
        self.events += 1

    def _admit(self) -> None:
        """Admit every job of this epoch (start = epoch start), then recompute rates."""
        new = []
        while self.next_job < len(self.wl.jobs) and self.admit_at[self.next_job] == self.step:
            j = self.next_job
            self.st.start_ms[j] = self.step * QUANTUM
            self.policy.admit(j)
            new.append(np.arange(self.wl.job_first[j], self.wl.job_first[j + 1]))
            self.next_job += 1
        self.act = np.sort(np.concatenate([self.act, *new]))
        self.policy.rates(self.st, self.step * QUANTUM)
        self.events += 1
