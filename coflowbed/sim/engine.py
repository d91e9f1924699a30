"""The event-driven fluid simulator.

Between two events every active flow moves at a constant rate; events are coflow
releases, flow completions, compute completions and (for policies with
``byte_thresholds``, e.g. D-CLAS) a coflow's bytes sent crossing a threshold.  At an
event that changes the set of flows or crosses a threshold the policy is asked
(``decide(states, fabric_view, now)``), ranks become levels (``levels`` module) and the
rates are recomputed (``alloc.allocate``).  Pure compute events change no rate.

Clairvoyant policies get ``CoflowState.remaining`` (bytes left per flow, refreshed only
for coflows that moved since the last call); non-clairvoyant ones only ``bytes_sent``.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from coflowbed.sim.alloc import allocate
from coflowbed.sim.dagstate import DagState
from coflowbed.sim.fabric import FabricModel
from coflowbed.sim.flowtable import FlowTable
from coflowbed.sim.levels import StaticPolicy, assign_levels
from controller.policies.base import CoflowState, Decision, Policy
from workload.dag import Dag

log = logging.getLogger("sim")

FINISH_TOL = 1e-9  # a flow within this fraction of its size (or 1e-6 B) of the end is done


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
    wall_s: float = 0.0
    sim_end_s: float = 0.0
    finished: bool = False


@dataclass
class Simulator:
    """Runs ``dag`` on ``fabric`` under ``policy`` with ``levels`` queues (None = exact)."""

    dag: Dag
    fabric: FabricModel
    policy: Policy
    levels: int | None = None
    horizon_s: float = math.inf  # stop (partial) when simulated time passes this
    wall_limit_s: float = math.inf  # stop (partial) after this much wall time (benchmarks)
    stats: SimStats = field(default_factory=SimStats)

    def __post_init__(self) -> None:
        self.flows = FlowTable.build(self.dag.coflows, self.fabric)
        self.dagstate = DagState(self.dag)
        n = len(self.dag.coflows)
        self.outcomes = [CoflowOutcome() for _ in range(n)]
        self.view = self.fabric.view(self.levels or 8)
        self.states: dict[int, CoflowState] = {}  # active coflows, release order
        self.left = np.diff(self.flows.offsets)  # unfinished flows per coflow
        self.level_of = np.zeros(n, dtype=np.int64)
        self.caps = np.full(len(self.flows), np.inf)
        self.sent = np.zeros(n)  # bytes delivered per coflow
        self.moved = np.zeros(n, dtype=bool)  # delivered bytes since the last decide
        self.active = np.zeros(0, dtype=np.int64)  # indices of unfinished released flows
        self.rates = np.zeros(0)
        self.thresholds = np.asarray(sorted(self.policy.byte_thresholds or ()), dtype=float)
        self.capped = False  # whether the last decision set rate caps
        self.now = 0.0
        self.version = 0  # bumped whenever the set of active coflows changes
        self._seq = 0

    def run(self) -> "Simulator":
        """Simulate until every node is done (or the horizon); returns self."""
        t0 = time.perf_counter()
        self.dagstate.start()
        self._settle()
        redecide = True
        while not self.dagstate.all_done():
            if redecide is not None:
                self._reallocate(redecide)
            dt, why = self._next_event()
            if not math.isfinite(dt):
                raise RuntimeError(f"simulation stalled at t={self.now:.6f}s with "
                                   f"{len(self.states)} coflows active")
            if self.now + dt > self.horizon_s or time.perf_counter() - t0 > self.wall_limit_s:
                break
            redecide = self._advance(dt, why)
            self.stats.events += 1
        self.stats.finished = self.dagstate.all_done()
        self.stats.sim_end_s = self.now
        self.stats.wall_s = time.perf_counter() - t0
        log.info("simulated %d coflows, %d flows: %d events, %d policy calls, %.3f s wall",
                 len(self.outcomes), len(self.flows), self.stats.events,
                 self.stats.policy_calls, self.stats.wall_s)
        return self

    # --- releases and completions -------------------------------------------------

    def _settle(self) -> None:
        """Handle every release and compute end due now, including those that
        completions at this instant trigger (empty coflows, zero-length computes)."""
        self.dagstate.pop_due(self.now)
        while self.dagstate.ready:
            ready, self.dagstate.ready = self.dagstate.ready, []
            for c in ready:
                self._release(c)
            self.dagstate.pop_due(self.now)

    def _release(self, c: int) -> None:
        """Coflow ``c`` is released now."""
        cf = self.dag.coflows[c]
        self.outcomes[c].release_s = self.now
        if self.left[c] == 0:
            self._complete(c)
            return
        self.version += 1
        self.states[c] = CoflowState(cf, self.now, self._seq)
        self._seq += 1
        self.moved[c] = True
        self.active = np.concatenate([self.active, self.flows.span(c)])

    def _complete(self, c: int) -> None:
        """Coflow ``c`` delivered everything: record it, release its dependants."""
        self.outcomes[c].finish_s = self.now
        self.version += 1
        self.states.pop(c, None)
        self.dagstate.node_done(self.dag.coflows[c].coflow_id, self.now)

    # --- deciding and allocating -----------------------------------------------------

    def _reallocate(self, redecide: bool) -> None:
        """Recompute every active flow's rate; ask the policy first if ``redecide``
        (the set of coflows changed or a byte threshold was crossed, as in the
        emulator's scheduler) else keep the last levels and caps."""
        if not self.states:
            self.rates = np.zeros(0)
            return
        if redecide:
            decisions = self._decide()
            levels = self._levels(decisions)
            act_coflows = np.fromiter(self.states, np.int64, len(self.states))
            self.level_of[act_coflows] = [levels[self.dag.coflows[c].coflow_id] for c in act_coflows]
            self.capped = self._set_caps(decisions)
            self._record_first(decisions, levels)
        fl = self.flows
        caps = self.caps[self.active] if self.capped else None
        self.rates = allocate(fl.paths[self.active], self.level_of[fl.coflow_of[self.active]],
                              self.fabric.capacity_bps, caps,
                              getattr(self.policy, "rates_are_limits", False),
                              fl.path_id[self.active])
        newly = self.rates > 0
        starting = self.active[newly & np.isnan(fl.start_s[self.active])]
        fl.start_s[starting] = self.now
        for c in np.unique(fl.coflow_of[starting]).tolist():
            if math.isnan(self.outcomes[c].start_s):
                self.outcomes[c].start_s = self.now
        self.stats.allocations += 1

    def _decide(self) -> dict[str, Decision]:
        """Refresh coflow states and call the policy once."""
        states = list(self.states.values())
        clair = self.policy.clairvoyant
        for c, st in self.states.items():
            st.bytes_sent = int(round(self.sent[c]))
            if clair and self.moved[c]:
                st.remaining = self.flows.remaining_dict(c)
        self.moved[:] = False
        decisions = self.policy.decide(states, self.view, self.now)
        self.stats.policy_calls += 1
        missing = [s.coflow_id for s in states if s.coflow_id not in decisions]
        if missing:
            raise ValueError(f"policy {self.policy.name!r} gave no decision for {missing[:3]}")
        return decisions

    def _levels(self, decisions: dict[str, Decision]) -> dict[str, int]:
        """Levels of the decided coflows (a static policy's ranks are its levels)."""
        if isinstance(self.policy, StaticPolicy):
            return {cid: int(d.rank[0]) for cid, d in decisions.items()}
        return assign_levels(decisions, self.levels, getattr(self.policy, "compression", "top"))

    def _set_caps(self, decisions: dict[str, Decision]) -> bool:
        """Store per-flow rate caps from the decisions; False when there are none."""
        with_rates = [(c, decisions[self.dag.coflows[c].coflow_id].flow_rates_bps)
                      for c in self.states]
        with_rates = [(c, r) for c, r in with_rates if r]
        if not with_rates:
            return False
        self.caps[self.active] = np.inf
        for c, rates in with_rates:
            local = self.flows.local_index(c)
            pos = np.fromiter(map(local.__getitem__, rates.keys()), np.int64, len(rates))
            vals = np.fromiter(rates.values(), float, len(rates))
            if np.isnan(vals).any() or (vals < 0).any():
                raise ValueError(f"policy {self.policy.name!r}: negative or NaN rate "
                                 f"for coflow {self.dag.coflows[c].coflow_id}")
            self.caps[self.flows.offsets[c] + pos] = vals
        return True

    def _record_first(self, decisions: dict[str, Decision], levels: dict[str, int]) -> None:
        """Remember each coflow's level and rank at its first decision."""
        for c in self.states:
            out = self.outcomes[c]
            if out.level is None:
                cid = self.dag.coflows[c].coflow_id
                out.level, out.rank = int(levels[cid]), str(decisions[cid].rank)

    # --- time ----------------------------------------------------------------------

    def _next_event(self) -> tuple[float, str]:
        """Time to the next event and its kind."""
        fl = self.flows
        best, why = self.dagstate.next_time() - self.now, "dag"
        moving = self.rates > 0
        if moving.any():
            left = fl.remaining[self.active[moving]] * 8.0 / self.rates[moving]
            dt = float(left.min())
            if dt < best:
                best, why = dt, "flow"
        if self.thresholds.size and moving.any():
            dt = self._next_threshold()
            if dt < best:
                best, why = dt, "threshold"
        return max(best, 0.0), why

    def _next_threshold(self) -> float:
        """Time until some active coflow's bytes sent reaches the next threshold."""
        fl = self.flows
        cof = fl.coflow_of[self.active]
        agg = np.bincount(cof, weights=self.rates, minlength=len(self.outcomes)) / 8.0
        cs = np.fromiter(self.states, np.int64, len(self.states))
        cs = cs[agg[cs] > 0]
        if not cs.size:
            return math.inf
        sent = self.sent[cs]
        k = np.searchsorted(self.thresholds, sent * (1 + 1e-12) + 1e-6, side="right")
        ok = k < self.thresholds.size
        if not ok.any():
            return math.inf
        return float(((self.thresholds[k[ok]] - sent[ok]) / agg[cs[ok]]).min())

    def _advance(self, dt: float, why: str) -> bool | None:
        """Move time by ``dt`` and handle what happens then.  Returns True if the policy
        must decide again, False if only rates must be recomputed, None if nothing
        changed (a pure compute event)."""
        fl = self.flows
        act = self.active
        moving = self.rates > 0
        delivered = np.minimum(self.rates * dt / 8.0, fl.remaining[act])
        fl.remaining[act] -= delivered
        cof = fl.coflow_of[act]
        self.sent += np.bincount(cof, weights=delivered, minlength=len(self.outcomes))
        self.moved[cof[moving]] = True
        self.now += dt
        done = moving & (fl.remaining[act] <= np.maximum(FINISH_TOL * fl.size[act], 1e-6))
        flows_done = bool(done.any())
        before = self.version
        if flows_done:
            self._finish_flows(act[done])
            self.active = act[~done]
            self.rates = self.rates[~done]
        self._settle()
        if why == "threshold" or self.version != before:
            return True
        return False if flows_done else None

    def _finish_flows(self, idx: np.ndarray) -> None:
        """Flows ``idx`` delivered their last byte now."""
        fl = self.flows
        self.sent += np.bincount(fl.coflow_of[idx], weights=fl.remaining[idx],
                                 minlength=len(self.outcomes))
        fl.remaining[idx] = 0.0
        fl.finish_s[idx] = self.now
        counts = np.bincount(fl.coflow_of[idx], minlength=len(self.outcomes))
        self.left -= counts
        for c in np.flatnonzero((counts > 0) & (self.left == 0)).tolist():
            self._complete(c)
