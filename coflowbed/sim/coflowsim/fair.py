"""CoflowSim's FAIR (``FlowSimulator.fairShare``): in every 8 ms step each active flow
moves min(1 MB / flows at its receiver, 1 MB / flows at its sender) — an equal split at
each port, the smaller of the two, with no redistribution of what that leaves unused.

Flows between the same two racks always move the same bytes, so the loop keeps one
counter per rack pair (bytes each of its flows has moved since the pair's first flow)
and a heap of its flows' finishing marks; it jumps from step to the next step in which
a flow finishes (the counts change) or jobs are admitted."""

from __future__ import annotations

import heapq
import time

import numpy as np

from coflowbed.sim.coflowsim.consts import END_MS, QUANTUM, QUANTUM_BYTES, ZERO
from coflowbed.sim.coflowsim.jobs import CsWorkload
from coflowbed.sim.coflowsim.outcome import CsOutcome, admit_steps


class PairState:
    """Per rack pair: bytes moved per flow so far, bytes per step, finishing heap."""

    def __init__(self, wl: CsWorkload) -> None:
        """Index every (src, dst) pair the workload uses."""
        keys = wl.flow_src * wl.racks + wl.flow_dst
        uniq, self.flow_pair = np.unique(keys, return_inverse=True)
        self.src, self.dst = uniq // wl.racks, uniq % wl.racks
        self.moved = np.zeros(len(uniq))
        self.per_step = np.zeros(len(uniq))
        self.first_mark = np.full(len(uniq), np.inf)
        self.heaps: list[list[tuple[float, int]]] = [[] for _ in uniq]
        self.n_src = np.zeros(wl.racks, dtype=np.int64)
        self.n_dst = np.zeros(wl.racks, dtype=np.int64)

    def add(self, flow: int, size: float, src: int, dst: int) -> None:
        """A flow joins its pair: it is done once the pair moved ``size - ZERO`` more."""
        p = int(self.flow_pair[flow])
        heapq.heappush(self.heaps[p], (self.moved[p] + size - ZERO, flow))
        self.first_mark[p] = self.heaps[p][0][0]
        self.n_src[src] += 1
        self.n_dst[dst] += 1

    def reshare(self) -> None:
        """Bytes per step of every pair at the current flow counts."""
        with np.errstate(divide="ignore"):
            self.per_step = np.minimum(
                QUANTUM_BYTES / self.n_dst[self.dst], QUANTUM_BYTES / self.n_src[self.src]
            )

    def steps_left(self) -> np.ndarray:
        """Steps until each pair's next flow finishes (inf for idle pairs)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            k = np.ceil((self.first_mark - self.moved) / self.per_step)
        return np.where(np.isfinite(self.first_mark), np.maximum(k, 1.0), np.inf)

    def pop_done(self, pair: int, before: float, n: int) -> list[int]:
        """Flows of ``pair`` that finish within ``n`` steps from ``before`` moved."""
        heap, out, step = self.heaps[pair], [], self.per_step[pair]
        while heap and max(1.0, np.ceil((heap[0][0] - before) / step)) <= n:
            out.append(heapq.heappop(heap)[1])
        self.first_mark[pair] = heap[0][0] if heap else np.inf
        self.n_src[self.src[pair]] -= len(out)
        self.n_dst[self.dst[pair]] -= len(out)
        return out


class FairLoop:
    """One FAIR run over a workload."""

    def __init__(self, wl: CsWorkload) -> None:
        """Nothing admitted yet."""
        self.wl, self.pairs = wl, PairState(wl)
        self.start = np.full(len(wl.jobs), np.nan)
        self.finish = np.full(len(wl.jobs), np.nan)
        self.flow_finish = np.full(len(wl.flow_bytes), np.nan)
        self.left = np.diff(wl.job_first)  # unfinished flows per job
        self.admit_at = admit_steps(wl.arrival_ms)
        self.step, self.events, self.next_job, self.active = 0, 0, 0, 0

    def run(self) -> CsOutcome:
        """Simulate until every job finished or CoflowSim's end time."""
        t0 = time.perf_counter()
        while self.next_job < len(self.wl.jobs) or self.active:
            if self.step * QUANTUM >= END_MS or not self._advance():
                break
        return CsOutcome(
            self.start,
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
        """Jump to the next step in which flows finish or jobs arrive."""
        to_admit = self._next_admission() - self.step
        if not self.active:
            self.step += int(to_admit)
        else:
            k = self.pairs.steps_left()
            n = min(float(k.min()), to_admit)
            if not np.isfinite(n):
                return False
            self._move(k, int(n))
        if self.step == self._next_admission():
            self._admit()
        self.pairs.reshare()
        self.events += 1
        return True

    def _move(self, k: np.ndarray, n: int) -> None:
        """``n`` steps at the current shares; record the flows that finish in the last."""
        live = np.isfinite(k)
        before = self.pairs.moved.copy()
        self.pairs.moved[live] += self.pairs.per_step[live] * n
        end = (self.step + n) * QUANTUM
        for p in np.flatnonzero(k == n).tolist():
            self._finish(self.pairs.pop_done(p, before[p], n), end)
        self.step += n

    def _finish(self, flows: list[int], end: float) -> None:
        """Record finished flows (at ``end``) and the jobs they complete."""
        for f in flows:
            self.flow_finish[f] = end
            j = int(self.wl.flow_job[f])
            self.left[j] -= 1
            if self.left[j] == 0:
                self.finish[j] = end
                self.active -= 1

    def _admit(self) -> None:
        """Admit every job of this epoch; their flows join their pairs."""
        wl = self.wl
        while self.next_job < len(wl.jobs) and self.admit_at[self.next_job] == self.step:
            j = self.next_job
            self.start[j] = self.step * QUANTUM
            for f in range(int(wl.job_first[j]), int(wl.job_first[j + 1])):
                self.pairs.add(f, float(wl.flow_bytes[f]), int(wl.flow_src[f]), int(wl.flow_dst[f]))
            self.next_job += 1
            self.active += 1
