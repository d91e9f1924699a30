"""The event-driven fluid simulator.

Between two events every active flow moves at a constant rate; events are coflow
releases, flow completions, compute completions and (for policies with
``byte_thresholds``, e.g. D-CLAS) a coflow's bytes sent crossing a threshold.  At an
event that changes the set of flows or crosses a threshold the policy is asked
(``decide(states, fabric_view, now)``), ranks become levels (``levels`` module) and the
rates are recomputed (``alloc.allocate``).  Pure compute events change no rate.

Clairvoyant policies get ``CoflowState.remaining`` (bytes left per flow, whole bytes
rounded up, refreshed only for coflows that moved since the last call); non-clairvoyant
ones only ``bytes_sent``.  A policy with ``decide_table`` (SEBF, Sincronia) is handed
the live flows as arrays instead (no per-flow objects: 10^5 flows per call on the
Facebook trace), their bytes left whole as well.

A flow completion less than ``stepkernel.SAME_INSTANT`` of the clock before a release
or compute end is taken with it, at its instant: two instants equal in exact arithmetic
give one event whichever way round-off put them.

A policy with ``hold_rates`` (SEBF, as Varys and its reference simulator) keeps its rates
until the next decision: a flow completion then changes no rate, so the engine jumps
straight to the next coflow completion (or release, or compute end) and records every
flow that ended on the way at its own instant.

Otherwise, without caps, the flow completions between two decisions run compiled on
path groups (``grouprun``/``groupkernel``); ``fast=False`` keeps this per-flow loop for
them (the reference).  ``incremental=True`` makes those runs skip the levels whose
inputs did not change (``groupalloc``; the same rates, bit for bit).

A control delay (``control``) puts a controller's cost in, for policies without levels
fixed for the DAG (``control.pays_control_delay``): a released coflow is handed to the
policy and starts only ``release_s`` after its release (``DagState.install_after``),
and a coflow already running gets a new level ``rerank_s`` after the decision that
moved it (a level change due is an event of the fault kind, so the compiled runs stop
before it as before a fault).  Rates (caps) take effect at the decision.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coflowbed.core import progress
from coflowbed.sim import grouprun, heap, stepkernel
from coflowbed.sim.alloc import allocate
from coflowbed.sim.control import NO_DELAY, ControlDelay
from coflowbed.sim.dagstate import DagState
from coflowbed.sim.fabric import FabricModel, LinkFault
from coflowbed.sim.flowtable import FlowTable, whole_bytes
from coflowbed.sim.levels import assign_levels
from coflowbed.sim.outcome import CoflowOutcome, SimStats
from coflowbed.sim.thresholds import next_crossing, snap
from controller.policies.base import CoflowState, Decision, FlowTable as BsFlowTable, Policy
from controller.policies.bigswitch import port_capacity
from workload.dag import Dag
from workload.marking import MAX_LEVELS

log = logging.getLogger("sim")

FINISH_TOL = 1e-9  # a flow within this fraction of its size (or 1e-6 B) of the end is done
MAX_FINISH_TOL = 1e-2  # the loosest finishing tolerance a run takes (``Simulator.finish_tol``)
PROGRESS_EVERY_S = 10.0  # wall seconds between progress lines of a long run
COMPACT_FRACTION = 0.25  # drop finished flows from the active arrays past this share


def check_finish_tol(tol: float) -> None:
    """ValueError unless ``tol`` is a finishing tolerance a run takes (0 < tol <= 1e-2)."""
    if not 0.0 < tol <= MAX_FINISH_TOL:
        raise ValueError(f"finish tolerance must be > 0 and <= {MAX_FINISH_TOL:g}, got {tol!r}")


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
    faults: Sequence[LinkFault] = ()  # leaf-spine links down for a while (scenario faults)
    fast: bool = True  # flow completions on path groups (groupkernel); False: per flow
    incremental: bool = False  # path groups re-share only the levels that changed (groupalloc)
    # A flow within this fraction of its size of the end is done (docs/measurements/
    # simulator-speed.md, "A finishing tolerance"): looser merges completions into fewer
    # events.
    finish_tol: float = FINISH_TOL
    # Decision -> level installed (docs/simulator.md, "Control delay"); a policy with
    # levels fixed for the DAG pays none (``ControlDelay.for_policy``).
    control: ControlDelay = NO_DELAY

    def __post_init__(self) -> None:
        check_finish_tol(self.finish_tol)
        self.flows = FlowTable.build(self.dag.coflows, self.fabric)
        self.delay = self.control.for_policy(self.policy)
        self.left = np.diff(self.flows.offsets)  # unfinished flows per coflow
        wait = np.where(self.left > 0, self.delay.release_s, 0.0) if self.delay else None
        self.dagstate = DagState(self.dag, install_after=None if wait is None else wait.tolist())
        n = len(self.dag.coflows)
        self.outcomes = [CoflowOutcome() for _ in range(n)]
        self._bar: Any = None  # a progress bar once the run takes long (_report_progress)
        self._report_at = math.inf  # wall time of the next progress line (set by run)
        self.view = self.fabric.view(self.levels or MAX_LEVELS)
        self.states: dict[int, CoflowState] = {}  # active coflows, release order
        self.level_of = np.zeros(n, dtype=np.int64)  # installed (in force)
        self.decided = np.full(n, -1, dtype=np.int64)  # the last decision's; -1: none yet
        # Level changes decided and not yet in force: (time, seq, coflow, level); their
        # own sequence numbers (``_seq`` numbers the coflows' arrivals).
        self._relevel: list[tuple[float, int, int, int]] = []
        self._relevel_seq = 0
        self.caps = np.full(len(self.flows), np.inf)
        self.sent = np.zeros(n)  # bytes delivered per coflow
        self.moved = np.zeros(n, dtype=bool)  # delivered bytes since the last decide
        self.active = np.zeros(0, dtype=np.int64)  # indices of unfinished released flows
        # Per-flow arrays aligned with ``active`` (gathered once, not at every event).
        self.act_cof = np.zeros(0, dtype=np.int32)
        self.act_paths = np.zeros((0, self.fabric.width), dtype=np.int32)
        self.act_pid = np.zeros(0, dtype=np.int64)
        self.act_level = np.zeros(0, dtype=np.int64)  # set at every decision; -1: retired
        self.n_retired = 0  # finished flows still in the active arrays
        self.rates = np.zeros(0)
        # A compiled run's groups, kept when it stopped at a coflow completion.
        self.carried: grouprun.Carried | None = None
        # A decision a compiled run took at a stop (coflow completion, byte threshold)
        # and could not go on with (``grouprun``; caps per flow index): the next
        # ``_decide`` returns it.
        self.pending: tuple[np.ndarray, list, np.ndarray | None] | None = None
        # The next event (seconds to it, kind) as a compiled run that stopped before it
        # found it: the next ``_next_event`` returns it instead of taking it again.
        self.known_next: tuple[float, str] | None = None
        self.thresholds = np.asarray(sorted(self.policy.byte_thresholds or ()), dtype=float)
        self.capped = False  # whether the last decision set rate caps
        self.now = 0.0
        self.version = 0  # bumped whenever the set of active coflows changes
        self._seq = 0
        self.done = 0  # coflows completed
        # The policy's vectorised decide, when it has one (no per-flow dicts).
        self.tabular = type(self.policy).decide_table is not Policy.decide_table
        self.port_bps = port_capacity(self.view)
        # Rates held until the next decision: flow completions in between change no rate.
        self.hold = bool(self.policy.hold_rates) and not self.thresholds.size
        # Link faults: (time, seq, +1 down / -1 up, links) due; faults waiting for a coflow.
        self.capacity = self.fabric.capacity_bps
        self._down: Counter[tuple[int, int]] = Counter()
        self._fault_heap: list[tuple[float, int, int, tuple[tuple[int, int], ...]]] = []
        self._after: dict[str, list[LinkFault]] = {}
        for lf in self.faults:
            if lf.after is None:
                self._push_fault(lf.at_s, lf)
            else:
                self._after.setdefault(lf.after, []).append(lf)

    def run(self) -> Simulator:
        """Simulate until every node is done (or the horizon); returns self."""
        heap.keep_freed_memory()
        t0 = time.perf_counter()
        self.dagstate.start()
        self.settle()
        redecide: bool | None = True  # None: nothing changed (see _advance)
        self._report_at = t0 + PROGRESS_EVERY_S
        while not self.dagstate.all_done():
            if redecide is not None:
                self._reallocate(redecide)
                # From rates just computed: flow completions on path groups, compiled.
                after, redecide = self._fast_events() if self._fast_ok() else (False, None)
                if after:
                    if self._out_of_wall(t0):
                        break
                    continue
            dt, why = self._next_event()
            if not math.isfinite(dt):
                raise RuntimeError(
                    f"simulation stalled at t={self.now:.6f}s with "
                    f"{len(self.states)} coflows active"
                )
            if self._out_of_wall(t0):
                break
            if self.now + dt > self.horizon_s:
                if self.hold and self.horizon_s > self.now:
                    self._advance(self.horizon_s - self.now, "horizon")  # flows held rates end
                break
            self.stats.flow_visits += self.active.size - self.n_retired
            redecide = self._advance(dt, why)
            self.stats.events += 1
        self.stats.finished = self.dagstate.all_done()
        self.stats.sim_end_s = self.now
        if self._bar is not None:
            self._bar.update(self.done - self._bar.n)
            self._bar.close()
        self.stats.wall_s = time.perf_counter() - t0
        log.info(
            "simulated %d coflows, %d flows: %d events, %d policy calls, %.3f s wall",
            len(self.outcomes),
            len(self.flows),
            self.stats.events,
            self.stats.policy_calls,
            self.stats.wall_s,
        )
        return self

    def _out_of_wall(self, t0: float) -> bool:
        """Whether the run has used up its wall time; logs progress every 10 s."""
        wall = time.perf_counter()
        if wall - t0 > self.wall_limit_s:
            return True
        if wall >= self._report_at:
            self._report_at = wall + PROGRESS_EVERY_S
            self._report_progress(wall - t0)
        return False

    # --- link faults ---------------------------------------------------------------

    def _push_fault(self, t: float, lf: LinkFault) -> None:
        """Schedule ``lf`` down at ``t`` (and up ``down_s`` later)."""
        self._seq += 1
        heapq.heappush(self._fault_heap, (t, self._seq, 1, lf.links))
        if lf.down_s is not None:
            self._seq += 1
            heapq.heappush(self._fault_heap, (t + lf.down_s, self._seq, -1, lf.links))

    def next_fault(self) -> float:
        """When the next link fault starts or ends or a delayed level change comes into
        force (inf if none)."""
        t = self._fault_heap[0][0] if self._fault_heap else math.inf
        return min(t, self._relevel[0][0]) if self._relevel else t

    def _apply_faults(self) -> None:
        """Links due to change state now: capacities, and every flow's path over the
        spines left (flows in flight move too, as OVS rehashes over the new buckets)."""
        changed = False
        while self._fault_heap and self._fault_heap[0][0] <= self.now + 1e-12:
            _t, _seq, step, links = heapq.heappop(self._fault_heap)
            for link in links:
                self._down[link] += step
            changed = True
        if not changed:
            return
        down = frozenset(k for k, n in self._down.items() if n > 0)
        self.capacity = self.fabric.capacity_with(down)
        self.flows.repath(self.fabric, down)
        self.act_paths = self.flows.paths[self.active]
        self.act_pid = self.flows.path_id[self.active]
        log.info("simulated %.3f s: %d leaf-spine links down", self.now, len(down))

    def _report_progress(self, wall_s: float) -> None:
        """One progress line of a long run (simulated time, coflows done, load), and a
        progress bar of coflows done (on a terminal; from the first report on)."""
        if self._bar is None:
            self._bar = progress.bar(len(self.outcomes), "simulate", unit="coflow")
        self._bar.update(self.done - self._bar.n)
        log.info(
            "simulated %.1f s: %d/%d coflows done, %d coflows and %d flows active, "
            "%d events, %.0f s wall",
            self.now,
            self.done,
            len(self.outcomes),
            len(self.states),
            self.active.size - self.n_retired,
            self.stats.events,
            wall_s,
        )

    # --- releases and completions -------------------------------------------------

    def settle(self) -> None:
        """Handle every release and compute end due now, including those that
        completions at this instant trigger (empty coflows, zero-length computes)."""
        self.dagstate.pop_due(self.now)
        while self.dagstate.ready:
            ready, self.dagstate.ready = self.dagstate.ready, []
            opened = [c for c in ready if self._release(c)]
            if opened:
                self._activate(opened)
            self.dagstate.pop_due(self.now)

    def _release(self, c: int) -> bool:
        """Coflow ``c`` is released now; True if it has flows to start (``_activate``)."""
        cf = self.dag.coflows[c]
        released = self.dagstate.release_time(c)  # before now by a control delay
        self.outcomes[c].release_s = released
        if self.left[c] == 0:
            self.complete(c)
            return False
        self.version += 1
        self.states[c] = CoflowState(cf, released, self._seq)
        self._seq += 1
        self.moved[c] = True
        return True

    def _activate(self, cs: list[int]) -> None:
        """Append the flows of the coflows ``cs``, just released, to the active arrays
        (one concatenation per instant, not one per coflow)."""
        new = np.concatenate([self.flows.span(c) for c in cs])
        self.active = np.concatenate([self.active, new])
        self.act_cof = np.concatenate([self.act_cof, self.flows.coflow_of[new]])
        self.act_paths = np.concatenate([self.act_paths, self.flows.paths[new]])
        self.act_pid = np.concatenate([self.act_pid, self.flows.path_id[new]])
        # Aligned until the decision that follows every release sets real levels and rates.
        self.act_level = np.concatenate([self.act_level, np.zeros(new.size, dtype=np.int64)])
        self.rates = np.concatenate([self.rates, np.zeros(new.size)])

    def complete(self, c: int) -> None:
        """Coflow ``c`` delivered everything: record it, release its dependants."""
        self.outcomes[c].finish_s = self.now
        self.done += 1
        self.version += 1
        self.states.pop(c, None)
        cid = self.dag.coflows[c].coflow_id
        for lf in self._after.pop(cid, ()):
            self._push_fault(self.now + lf.at_s, lf)
        self.dagstate.node_done(cid, self.now)

    # --- deciding and allocating -----------------------------------------------------

    def _reallocate(self, redecide: bool) -> None:
        """Recompute every active flow's rate (left to the compiled run that follows
        if it can run: rates 0 until it shares); ask the policy first if ``redecide``
        (the set of coflows changed or a byte threshold was crossed, as in the
        emulator's scheduler) else keep the last levels and caps."""
        if redecide or not self.states:
            self._compact()  # policies see live flows only; levels are rewritten below
        if not self.states:
            self.rates = np.zeros(0)
            return
        if redecide:
            cs, ranks, caps = self.decide()
            levels = self.levels_for(cs, ranks)
            self.install(cs, levels)
            self.act_level = self.level_of[self.act_cof]
            self.capped = caps is not None
            if caps is not None:
                self.caps[self.active] = caps
            self.record_first(cs, ranks, levels)
        else:
            caps = self.caps[self.active] if self.capped else None
        if self._fast_ok():
            # The compiled run shares first (bit for bit the rates ``allocate`` gives)
            # and stamps the flows that start: sharing here too would be done twice.
            self.rates = np.zeros(self.active.size)
            return
        fl = self.flows
        self.rates = allocate(
            self.act_paths,
            self.act_level,
            self.capacity,
            caps,
            self.policy.rates_are_limits,
            self.act_pid,
        )
        starting = stepkernel.starting(self.active, self.rates, fl.start_s, self.now)
        for c in np.unique(self.act_cof[starting]).tolist() if starting.size else ():
            if math.isnan(self.outcomes[c].start_s):
                self.outcomes[c].start_s = self.now
        self.stats.allocations += 1

    def decide(
        self, rows: tuple | None = None, sent: np.ndarray | None = None
    ) -> tuple[np.ndarray, list, np.ndarray | None]:
        """Call the policy once: (active coflows in release order, their ranks, per-flow
        rate caps aligned with ``self.active`` or None); the one a compiled run left
        (``pending``, its caps taken for the active flows as they are now) if any.  A
        compiled run that has not written its groups back gives the live flows' rows
        (``groupkernel.live_rows``; tabular policies) and bytes sent per coflow."""
        if self.pending is not None:
            (cs, ranks, caps), self.pending = self.pending, None
            return cs, ranks, None if caps is None else caps[self.active]
        cs = np.fromiter(self.states, np.int64, len(self.states))
        sent = self.sent if sent is None else sent
        for c, st in self.states.items():
            st.bytes_sent = int(round(sent[c]))
        got = self._decide_table(cs, rows) if self.tabular else None
        ranks, caps = got if got is not None else self._decide_states(cs)
        self.moved[:] = False
        self.stats.policy_calls += 1
        if caps is not None and (np.isnan(caps).any() or (caps < 0).any()):
            raise ValueError(f"policy {self.policy.name!r}: negative or NaN rate")
        return cs, ranks, caps

    def _decide_states(self, cs: np.ndarray) -> tuple[list, np.ndarray | None]:
        """``Policy.decide`` on CoflowStates (remaining bytes refreshed for coflows that
        moved, clairvoyant policies only)."""
        if self.policy.clairvoyant:
            for c, st in self.states.items():
                if self.moved[c]:
                    st.remaining = self.flows.remaining_dict(c)
        states = list(self.states.values())
        decisions = self.policy.decide(states, self.view, self.now)
        missing = [s.coflow_id for s in states if s.coflow_id not in decisions]
        if missing:
            raise ValueError(f"policy {self.policy.name!r} gave no decision for {missing[:3]}")
        ranks = [decisions[s.coflow_id].rank for s in states]
        return ranks, self._caps_of(cs, [decisions[s.coflow_id].flow_rates_bps for s in states])

    def _decide_table(
        self, cs: np.ndarray, rows: tuple | None = None
    ) -> tuple[list, np.ndarray | None] | None:
        """``Policy.decide_table`` on the live flows as arrays (no per-flow objects);
        None if the policy declines (then ``decide`` is used).  ``rows``: the live
        flows of arrays not compacted (``groupkernel.live_rows``; caps then come back
        aligned with those arrays, inf where not live)."""
        if rows is None:
            paths = self.act_paths
            at, cof, bits = None, self.act_cof, self.flows.remaining[self.active]
            src, dst = paths[:, 0].astype(np.int64), paths[:, -1].astype(np.int64)
        else:
            at, cof, src, dst, bits = rows
        bits = whole_bytes(bits)  # as ``decide`` sees them, round-off of either loop gone
        pos = np.empty(len(self.outcomes), dtype=np.int64)
        pos[cs] = np.arange(cs.size)
        owner = pos[cof]
        start = np.searchsorted(owner, np.arange(cs.size + 1)).astype(np.int64)
        args = (owner, src, dst, bits * 8.0, start, self.port_bps, len(self.fabric.hosts))
        table = BsFlowTable((), *args)
        ids = [self.dag.coflows[c].coflow_id for c in cs.tolist()]
        seq = np.fromiter((st.arrival_seq for st in self.states.values()), np.int64, cs.size)
        d = self.policy.decide_table(table, ids, seq, self.now)
        if d is None:
            self.tabular = False
            return None
        if len(d.ranks) != cs.size:
            raise ValueError(
                f"policy {self.policy.name!r} gave {len(d.ranks)} ranks for {cs.size} coflows"
            )
        caps = None if d.flow_rates_bps is None else np.asarray(d.flow_rates_bps, dtype=float)
        if caps is not None and at is not None:
            by_row, caps = caps, np.full(self.active.size, np.inf)
            caps[at] = by_row
        return d.ranks, caps

    def _caps_of(self, cs: np.ndarray, rates: list) -> np.ndarray | None:
        """Per-flow caps aligned with ``self.active`` from per-coflow {flow id: bit/s}
        (None when no coflow has rates; flows without a rate are uncapped)."""
        if not any(rates):
            return None
        caps = self.caps
        caps[self.active] = np.inf
        for c, r in zip(cs.tolist(), rates):
            if r:
                local = self.flows.local_index(c)
                at = np.fromiter(map(local.__getitem__, r.keys()), np.int64, len(r))
                caps[self.flows.offsets[c] + at] = np.fromiter(r.values(), float, len(r))
        return caps[self.active]

    def levels_for(self, cs: np.ndarray, ranks: list) -> list[int]:
        """Levels of the decided coflows (a static policy's ranks are its levels)."""
        if self.policy.levels_given:
            return [int(r[0]) for r in ranks]
        ids = [self.dag.coflows[c].coflow_id for c in cs.tolist()]
        levels = assign_levels(
            {cid: Decision(r) for cid, r in zip(ids, ranks)}, self.levels, self.policy.compression
        )
        return [levels[cid] for cid in ids]

    def install(self, cs: np.ndarray, levels: list[int]) -> None:
        """The levels just decided for the coflows ``cs`` into ``level_of``: at once,
        except (with a re-rank delay) for a coflow already decided before and moved,
        which keeps its level until the change comes into force (``_apply_relevels``)."""
        lv = np.asarray(levels, dtype=np.int64)
        if self.delay.rerank_s <= 0:
            self.level_of[cs] = lv
            return
        old = self.decided[cs]
        first = old < 0
        self.level_of[cs[first]] = lv[first]
        moved = ~first & (old != lv)
        due = self.now + self.delay.rerank_s
        for c, level in zip(cs[moved].tolist(), lv[moved].tolist()):
            self._relevel_seq += 1
            heapq.heappush(self._relevel, (due, self._relevel_seq, c, level))
        self.decided[cs] = lv

    def _apply_relevels(self) -> None:
        """Level changes due now into force (those of coflows still active), and the
        live flows' levels with them."""
        changed = False
        while self._relevel and self._relevel[0][0] <= self.now + 1e-12:
            _t, _seq, c, level = heapq.heappop(self._relevel)
            if c in self.states:
                self.level_of[c] = level
                changed = True
        if changed:
            live = self.act_level >= 0  # retired flows keep -1
            self.act_level[live] = self.level_of[self.act_cof[live]]
            self.stats.relevels += 1

    def record_first(self, cs: np.ndarray, ranks: list, levels: list[int]) -> None:
        """Remember each coflow's level and rank at its first decision."""
        for c, r, lv in zip(cs.tolist(), ranks, levels):
            out = self.outcomes[c]
            if out.level is None:
                out.level, out.rank = int(lv), str(r)

    # --- compiled flow events --------------------------------------------------------

    def _fast_ok(self) -> bool:
        """Whether the next events can run on path groups: max-min sharing without caps
        or held rates, some flow active."""
        return self.fast and not (self.hold or self.capped) and self.active.size > 0

    def _fast_events(self) -> tuple[bool, bool | None]:
        """Flow completions compiled on path groups (``grouprun.run_groups``)."""
        return grouprun.run_groups(self)

    # --- time ----------------------------------------------------------------------

    def _next_event(self) -> tuple[float, str]:
        """Time to the next event and its kind (as the compiled run that just stopped
        before it found it, if one did)."""
        fl = self.flows
        if not self.rates.size == self.active.size == self.act_level.size:
            # The compiled passes do not check bounds: never hand them misaligned arrays.
            raise RuntimeError("simulator: active-flow arrays out of step")
        if self.known_next is not None:
            known, self.known_next = self.known_next, None
            return known
        t_dag = self.dagstate.next_time()
        best, why = t_dag - self.now, "dag"
        if self.hold:
            dt = stepkernel.next_coflow_end(self.active, self.rates, fl.remaining, self.act_cof)
        else:
            dt = stepkernel.next_finish(self.active, self.rates, fl.remaining)
        if dt < best and stepkernel.ahead(self.now + dt, t_dag):
            best, why = dt, "flow"
        fault_dt = self.next_fault() - self.now
        if fault_dt < best:
            best, why = fault_dt, "fault"
        if self.thresholds.size and math.isfinite(dt):
            dt = self._next_threshold()
            if dt < best:
                best, why = dt, "threshold"
        return max(best, 0.0), why

    def _next_threshold(self) -> float:
        """Time until some active coflow's bytes sent reaches the next threshold."""
        cs = np.fromiter(self.states, np.int64, len(self.states))
        return next_crossing(self.act_cof, self.rates, self.sent, cs, self.thresholds)

    def snap_thresholds(self) -> None:
        """Active coflows at a byte threshold to round-off count exactly it."""
        cs = np.fromiter(self.states, np.int64, len(self.states))
        snap(self.sent, cs, self.thresholds)

    def _advance(self, dt: float, why: str) -> bool | None:
        """Move time by ``dt`` and handle what happens then.  Returns True if the policy
        must decide again, False if only rates must be recomputed, None if nothing
        changed (a pure compute event)."""
        fl = self.flows
        self.carried = None  # flows move here: a compiled run's groups are stale
        start, self.now = self.now, self.now + dt
        done, when = stepkernel.advance(
            self.active,
            self.rates,
            self.act_cof,
            fl.remaining,
            fl.size,
            self.sent,
            self.moved,
            dt,
            start,
            self.finish_tol,
        )
        if why == "threshold":
            self.snap_thresholds()
        before = self.version
        if done.size:
            self._finish_flows(self.active[done], when)
            stepkernel.retire(done, self.rates, self.act_level)
            self.n_retired += done.size
            self.compact_if_due()
        self.settle()
        if why == "fault":
            self._apply_faults()  # after the flows that ended on the way: rates again
            self._apply_relevels()
            return True if self.version != before else False
        if why == "threshold" or self.version != before:
            return True
        return False if done.size and not self.hold else None

    def compact_if_due(self) -> None:
        """Compact the active arrays once a quarter of them is retired."""
        if self.n_retired > COMPACT_FRACTION * self.active.size:
            self._compact()

    def _compact(self) -> None:
        """Drop retired flows from the active arrays.  Done lazily (a quarter retired, or
        before a decision): shifting 10^5 entries at every completion would cost more
        than the rest of an event."""
        if not self.n_retired:
            return
        m = stepkernel.compact(
            self.active, self.rates, self.act_cof, self.act_pid, self.act_level, self.act_paths
        )
        self.active, self.rates = self.active[:m], self.rates[:m]
        self.act_cof, self.act_pid = self.act_cof[:m], self.act_pid[:m]
        self.act_level, self.act_paths = self.act_level[:m], self.act_paths[:m]
        self.n_retired = 0

    def _finish_flows(self, idx: np.ndarray, when: np.ndarray) -> None:
        """Flows ``idx`` delivered their last byte at ``when`` (<= now); a retired flow
        still in the active arrays gets cap 0 (no rate)."""
        fl = self.flows
        done = stepkernel.finish(
            idx, when, fl.coflow_of, fl.remaining, fl.finish_s, self.caps, self.sent, self.left
        )
        for c in np.sort(done).tolist():  # in coflow order, as dependants are released
            self.complete(c)
