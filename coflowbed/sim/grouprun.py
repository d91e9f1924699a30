"""The engine's side of the compiled flow-completion runs (``groupkernel``): build the
path groups from the active arrays (or go on with those a run stopped at a coflow
completion or a byte threshold left, ``Carried``), run, write back and book what
happened.  A policy that decides on bytes sent or on a table of the live flows is
asked at those stops without the groups being written back (``_decided``): if its
levels keep the order, the run goes on as it is."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from coflowbed.sim import groupkernel, vclock
from coflowbed.sim.dagstate import DagState
from coflowbed.sim.flowtable import FlowTable
from coflowbed.sim.outcome import CoflowOutcome, SimStats
from controller.policies.base import CoflowState, Policy

FAST_BUDGET = 2000  # flow events per compiled run (then wall limit and progress are checked)
# What ``_decided`` did at a run's stop: nothing / decided, the run goes on / decided,
# the order changed / coflows completed and something came due.
NOT_TAKEN, KEPT, DECIDED, SETTLE = 0, 1, 2, 3


@dataclass(frozen=True)
class Carried:
    """A compiled run's groups and state kept after a coflow completed or reached a
    byte threshold (``sync_carry``): the next run goes on with them if the decision that
    follows kept the levels' order and nothing else changed.  ``active``: the
    engine's active flows they expect (compacted); ``capacity``: the link capacities
    they were shared on."""

    grp: tuple
    kept: tuple
    need: int
    now: float
    active: np.ndarray
    capacity: np.ndarray


class Simulator(Protocol):
    """What a compiled run reads and writes of the simulator it runs for
    (``coflowbed.sim.engine.Simulator``): its flow table and active-flow arrays, its
    clock and thresholds, and the steps it hands back (complete a coflow, decide,
    assign levels, settle rates)."""

    flows: FlowTable
    dagstate: DagState
    policy: Policy
    states: dict[int, CoflowState]
    sent: np.ndarray
    left: np.ndarray
    moved: np.ndarray
    caps: np.ndarray
    level_of: np.ndarray
    thresholds: np.ndarray
    active: np.ndarray
    act_cof: np.ndarray
    act_level: np.ndarray
    act_pid: np.ndarray
    act_paths: np.ndarray
    rates: np.ndarray
    capacity: Any
    now: float
    horizon_s: float
    finish_tol: float
    incremental: bool
    tabular: bool
    carried: Carried | None
    pending: tuple[np.ndarray, list, np.ndarray | None] | None
    known_next: tuple[float, str] | None
    version: int  # bumped whenever the set of active coflows changes
    stats: SimStats
    outcomes: list[CoflowOutcome]
    n_retired: int

    def next_fault(self) -> float: ...

    def settle(self) -> None: ...

    def compact_if_due(self) -> None: ...

    def complete(self, c: int) -> None: ...

    def decide(
        self, rows: tuple | None = None, sent: np.ndarray | None = None
    ) -> tuple[np.ndarray, list, np.ndarray | None]: ...

    def levels_for(self, cs: np.ndarray, ranks: list) -> list[int]: ...

    def install(self, cs: np.ndarray, levels: list[int]) -> None: ...

    def record_first(self, cs: np.ndarray, ranks: list, levels: list[int]) -> None: ...

    def snap_thresholds(self) -> None: ...


def run_groups(sim: Simulator) -> tuple[bool, bool | None]:
    """Run ``sim``'s flow completions compiled from the rates just computed; at a coflow
    completion or byte threshold the policy may decide without the run ending
    (``_decided``).  Returns (False, None) if it stopped before an event (the engine
    handles that one, rates current), else (True, what ``Simulator._advance`` returns
    after the event it stopped at: a flow completion, or a byte threshold, after which
    the policy decides again, unless it already did)."""
    fl = sim.flows
    coflows = (sim.sent, sim.left, bool(sim.thresholds.size))
    grp, kept, need, valid = _groups(sim, coflows)
    flows = (sim.active, sim.act_cof, fl.remaining, fl.size, fl.start_s, fl.finish_s, sim.caps)
    spent, relevelled, taken = 0, False, NOT_TAKEN
    while taken == NOT_TAKEN or taken == KEPT:
        clock = (sim.now, sim.dagstate.next_time(), sim.next_fault(), sim.horizon_s)
        args = (sim.thresholds, clock, FAST_BUDGET - spent, sim.finish_tol, need, valid)
        out = groupkernel.loop(grp, kept, flows, coflows, *args)
        status, sim.now, events, visits, allocs, n_last, fin, done_c, began, need, dt, why = out
        spent, valid = spent + events, True
        taken = _decided(sim, out, grp, kept, spent)
        if taken == NOT_TAKEN:
            break
        relevelled |= taken == KEPT  # the same order, maybe other level numbers: go on
    _write_back(sim, (grp, kept, need), status == groupkernel.BEFORE, relevelled)
    if taken != NOT_TAKEN:  # booked (and put at the threshold, coflows completed) there
        if taken == SETTLE:
            sim.settle()
        sim.compact_if_due()
        return True, True
    _book(sim, (events, visits, allocs), fin.size, began)
    if status == groupkernel.BEFORE:
        sim.known_next = (dt, groupkernel.KIND_NAMES[why])
        return False, None
    if status == groupkernel.AT_THRESHOLD:
        _snap(sim, kept[8])
        _after(sim, done_c[done_c >= 0], n_last)
        return True, True  # the policy decides again (it may keep the levels' order)
    return True, _after(sim, done_c[done_c >= 0], n_last)


def _groups(sim: Simulator, coflows: tuple) -> tuple:
    """(groups, run state, level to re-share from, whether the saved sharing is
    valid): those carried from the last run if it can go on with them, else built
    and prepared from the active arrays."""
    carried, sim.carried = _valid(sim), None
    if carried is not None:
        return carried.grp, carried.kept, carried.need, True
    fl = sim.flows
    act = (sim.active, sim.act_level, sim.act_pid, sim.act_cof, sim.act_paths)
    grp = groupkernel.build(*act, fl.remaining, sim.rates, fl.start_s, coflows[2])
    setup = (sim.capacity, sim.thresholds, coflows, sim.active, fl.size, sim.finish_tol)
    return grp, groupkernel.prepare(grp, *setup, sim.now, sim.incremental), 0, False


def _write_back(sim: Simulator, run: tuple, before: bool, relevelled: bool) -> None:
    """Write a run's groups back to the engine's arrays (``run``: groups, run state,
    level to re-share from), kept for the next run unless it stopped ``before`` an
    event; the live flows' levels as the policy last set them if it decided inside
    the run (``relevelled``)."""
    grp, kept, need = run
    by_cof = bool(sim.thresholds.size)
    arrays = (sim.active, sim.act_cof, sim.flows.remaining, sim.rates, sim.act_level, sim.sent)
    if before:
        groupkernel.sync(grp, *arrays, sim.moved, by_cof)
    else:  # groups kept for the next run (before _book may compact the engine's arrays)
        grp, active = groupkernel.sync_carry(grp, kept[6], *arrays, sim.moved, by_cof)
        sim.carried = Carried(grp, kept, need, sim.now, active, sim.capacity)
    if relevelled:  # retired flows: -1 (written back above)
        live = sim.act_level >= 0
        sim.act_level[live] = sim.level_of[sim.act_cof[live]]


def _decided(sim: Simulator, out: tuple, grp: tuple, kept: tuple, spent: int) -> int:
    """After a run ``out`` stopped at a byte threshold (no coflow done) or a coflow
    completion, with nothing else due now and budget left, for a policy that decides
    on bytes sent or on a table of the live flows (not on per-flow states: not
    clairvoyant, or tabular): book the run (no compaction: the groups still index the
    active arrays), put the coflows at the threshold or complete those done, and let
    the policy decide without writing the groups back (bytes sent and left taken from
    the groups: ``sent_now``, ``live_rows``).  Returns ``KEPT`` if its levels keep
    the groups' order (``same_coflow_levels``: the run goes on as it is), ``DECIDED``
    if not (the decision left in ``sim.pending`` for ``Simulator.decide``),
    ``SETTLE`` if the completions made something due now (released by the caller,
    the policy asked then), ``NOT_TAKEN`` if not eligible (nothing done here)."""
    status, done_c = out[0], out[7]
    if status == groupkernel.BEFORE or (sim.policy.clairvoyant and not sim.tabular):
        return NOT_TAKEN
    if spent >= FAST_BUDGET or (status == groupkernel.AT_THRESHOLD and done_c[0] >= 0):
        return NOT_TAKEN
    if _due(sim):
        return NOT_TAKEN
    _book(sim, out[2:5], out[6].size, out[8], compact=False)
    if status == groupkernel.AT_THRESHOLD:
        _snap(sim, kept[8])
    for c in np.sort(done_c[done_c >= 0]).tolist():
        sim.complete(c)
    if sim.dagstate.ready or _due(sim) or not sim.states:
        return SETTLE
    rows = groupkernel.live_rows(grp, sim.act_cof, sim.act_paths) if sim.tabular else None
    sent = None if sim.thresholds.size else groupkernel.sent_now(grp, sim.act_cof, sim.sent)
    cs, ranks, caps = sim.decide(rows, sent)
    levels = sim.levels_for(cs, ranks)
    sim.install(cs, levels)  # a re-rank delay keeps the moved ones where they are
    if caps is None and groupkernel.same_coflow_levels(grp, sim.act_cof, sim.level_of):
        sim.record_first(cs, ranks, levels)
        return KEPT
    by_flow = None
    if caps is not None:
        by_flow = np.full(sim.flows.remaining.size, np.inf)
        by_flow[sim.active] = caps
    sim.pending = (cs, ranks, by_flow)
    return DECIDED


def _due(sim: Simulator) -> bool:
    """Whether a release, compute end or fault is due now."""
    return min(sim.dagstate.next_time(), sim.next_fault()) <= sim.now


def _snap(sim: Simulator, cclk: tuple) -> None:
    """A run stopped at a byte threshold: the coflows there counted exactly at it (as
    ``Simulator._advance`` does), and the carried coflow lines' next threshold
    instants taken again for those moved or at one."""
    before = sim.sent.copy()
    sim.snap_thresholds()
    vclock.rethreshold(cclk, sim.sent, before, sim.thresholds, sim.now)


def _valid(sim: Simulator) -> Carried | None:
    """``sim.carried`` if the next run can go on with it: the same instant, links and
    active flows, and levels that group them alike (``groupkernel.same_levels``)."""
    c = sim.carried
    if c is None or c.now != sim.now or c.capacity is not sim.capacity:
        return None
    if not np.array_equal(c.active, sim.active):
        return None
    return c if groupkernel.same_levels(c.grp, sim.act_level) else None


def _after(sim: Simulator, done: np.ndarray, n_last: int) -> bool | None:
    """Complete the coflows ``done`` at the run's last event, release what is due; what
    ``Simulator._advance`` would return (True: decide again, False: re-share only)."""
    before = sim.version
    for c in np.sort(done).tolist():
        sim.complete(c)
    sim.settle()
    if sim.version != before:
        return True
    return False if n_last else None


def _book(
    sim: Simulator, counts: tuple[int, int, int], retired: int, began, compact: bool = True
) -> None:
    """Book a compiled run: (events, flow visits, allocations), flows retired, coflows
    that started moving (their start: their earliest flow's); then compact the active
    arrays if due (``compact``)."""
    sim.stats.events += counts[0]
    sim.stats.flow_visits += counts[1]
    sim.stats.allocations += counts[2]
    sim.n_retired += retired
    for c in np.unique(began).tolist():
        if math.isnan(sim.outcomes[c].start_s):
            sim.outcomes[c].start_s = float(np.nanmin(sim.flows.start_s[sim.flows.span(c)]))
    if compact:
        sim.compact_if_due()
