"""CoflowSim's FAIR (``FlowSimulator.fairShare``): in every 8 ms step each active flow
moves min(1 MB / flows at its receiver, 1 MB / flows at its sender) — an equal split at
each port, the smaller of the two, with no redistribution of what that leaves unused.

Flows between the same two racks always move the same bytes, so the loop keeps one
counter per rack pair (bytes each of its flows has moved) and each flow's finishing
mark on it, and jumps from one step in which flows finish (the counts change) to the
next, or to the next admission (``fairkernel``, compiled)."""

from __future__ import annotations

import time

import numpy as np

from coflowbed.sim.coflowsim import fairkernel as fk
from coflowbed.sim.coflowsim.consts import END_MS, QUANTUM
from coflowbed.sim.coflowsim.jobs import CsWorkload
from coflowbed.sim.coflowsim.outcome import CsOutcome, admit_steps


def pair_arrays(wl: CsWorkload) -> tuple:
    """(moved, per_step, first_mark, n_src, n_dst, src, dst, pair_first, pair_flows) of
    every rack pair the workload uses, and each flow's pair."""
    keys = wl.flow_src * wl.racks + wl.flow_dst
    uniq, flow_pair = np.unique(keys, return_inverse=True)
    order = np.argsort(flow_pair, kind="stable")
    pair_first = np.r_[0, np.cumsum(np.bincount(flow_pair, minlength=len(uniq)))]
    n = len(uniq)
    pairs = (
        np.zeros(n),
        np.zeros(n),
        np.full(n, np.inf),
        np.zeros(wl.racks, dtype=np.int64),
        np.zeros(wl.racks, dtype=np.int64),
        uniq // wl.racks,
        uniq % wl.racks,
        pair_first.astype(np.int64),
        order.astype(np.int64),
    )
    return pairs, flow_pair.astype(np.int64)


class FairLoop:
    """One FAIR run over a workload."""

    def __init__(self, wl: CsWorkload) -> None:
        """Nothing admitted yet."""
        n = len(wl.flow_bytes)
        self.wl = wl
        self.pairs, self.flow_pair = pair_arrays(wl)
        self.status = np.zeros(n, dtype=np.int64)
        self.flow_finish = np.full(n, np.nan)
        scratch = np.zeros(int(np.diff(self.pairs[7]).max(initial=1)), dtype=np.int64)
        self.flows = (self.status, np.zeros(n), wl.flow_job, self.flow_finish, scratch)
        self.start = np.full(len(wl.jobs), np.nan)
        self.finish = np.full(len(wl.jobs), np.nan)
        self.jobs = (np.diff(wl.job_first), self.finish)
        self.admit_at = admit_steps(wl.arrival_ms)
        self.state = np.zeros(2)  # step, active jobs
        self.events, self.next_job = 0, 0

    def run(self) -> CsOutcome:
        """Simulate until every job finished or CoflowSim's end time."""
        t0 = time.perf_counter()
        end_step = END_MS // QUANTUM
        while self.next_job < len(self.wl.jobs) or self.state[1] > 0:
            limit = min(float(end_step), self._next_admission())
            self.events += fk.run_until(limit, self.state, self.pairs, self.flows, self.jobs)
            if not self.state[0] < end_step:
                break  # CoflowSim's end time (or nothing could move)
            if self.next_job < len(self.wl.jobs):
                self.state[0] = max(self.state[0], self._next_admission())
                self._admit()
        return CsOutcome(
            self.start,
            self.finish,
            self.flow_finish,
            self.events,
            int(min(self.state[0], end_step)),
            time.perf_counter() - t0,
        )

    def _next_admission(self) -> float:
        """Step of the next admission (inf when none is left)."""
        if self.next_job >= len(self.wl.jobs):
            return np.inf
        return float(self.admit_at[self.next_job])

    def _admit(self) -> None:
        """Admit every job of this epoch; their flows join their pairs; reshare."""
        wl, (moved, per_step, first_mark, n_src, n_dst, src, dst, _, _) = self.wl, self.pairs
        status, mark = self.flows[0], self.flows[1]
        step = self.state[0]
        while self.next_job < len(wl.jobs) and self.admit_at[self.next_job] == step:
            j = self.next_job
            self.start[j] = step * QUANTUM
            lo, hi = int(wl.job_first[j]), int(wl.job_first[j + 1])
            fk.admit_flows(
                lo,
                hi,
                self.flow_pair,
                wl.flow_bytes,
                status,
                mark,
                moved,
                first_mark,
                n_src,
                n_dst,
                src,
                dst,
            )
            self.next_job += 1
            self.state[1] += 1
        fk.reshare(first_mark, per_step, n_src, n_dst, src, dst)
        self.events += 1
