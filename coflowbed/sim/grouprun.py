"""The engine's side of the compiled flow-completion runs (``groupkernel``): build the
path groups from the active arrays (or go on with those a run stopped at a coflow
completion or a byte threshold left, ``Carried``), run, write back and book what
happened."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from coflowbed.sim import groupkernel, vclock

if TYPE_CHECKING:
    from coflowbed.sim.engine import Simulator

FAST_BUDGET = 2000  # flow events per compiled run (then wall limit and progress are checked)


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


def run_groups(sim: Simulator) -> tuple[bool, bool | None]:
    """Run ``sim``'s flow completions compiled from the rates just computed.  Returns
    (False, None) if it stopped before an event (the engine handles that one, rates
    current), else (True, what ``Simulator._advance`` returns after the event it
    stopped at: a flow completion, or a byte threshold, after which the policy
    decides again)."""
    from coflowbed.sim.engine import FINISH_TOL

    fl, by_cof = sim.flows, bool(sim.thresholds.size)
    coflows = (sim.sent, sim.left, by_cof)
    carried, sim.carried = _valid(sim), None
    if carried is None:
        act = (sim.active, sim.act_level, sim.act_pid, sim.act_cof, sim.act_paths)
        grp = groupkernel.build(*act, fl.remaining, sim.rates, fl.start_s, by_cof)
        setup = (sim.capacity, sim.thresholds, coflows, sim.active, fl.size, FINISH_TOL)
        kept = groupkernel.prepare(grp, *setup, sim.now, sim.incremental)
        need, valid = 0, False
    else:
        grp, kept, need, valid = carried.grp, carried.kept, carried.need, True
    flows = (sim.active, sim.act_cof, fl.remaining, fl.size, fl.start_s, fl.finish_s, sim.caps)
    clock = (sim.now, sim.dagstate.next_time(), sim._next_fault(), sim.horizon_s)
    args = (sim.thresholds, clock, FAST_BUDGET, FINISH_TOL, need, valid)
    out = groupkernel.loop(grp, kept, flows, coflows, *args)
    status, sim.now, events, visits, allocs, n_last, fin, done_c, began, need, dt, why = out
    arrays = (sim.active, sim.act_cof, fl.remaining, sim.rates, sim.act_level, sim.sent)
    if status == groupkernel.BEFORE:
        groupkernel.sync(grp, *arrays, sim.moved, by_cof)
    else:  # groups kept for the next run (before _book may compact the engine's arrays)
        grp, active = groupkernel.sync_carry(grp, kept[6], *arrays, sim.moved, by_cof)
        sim.carried = Carried(grp, kept, need, sim.now, active, sim.capacity)
    _book(sim, (events, visits, allocs), fin.size, began)
    if status == groupkernel.BEFORE:
        sim.known_next = (dt, groupkernel.KIND_NAMES[why])
        return False, None
    if status == groupkernel.AT_THRESHOLD:
        _snap(sim, kept[8])
        _after(sim, done_c[done_c >= 0], n_last)
        return True, True  # the policy decides again (it may keep the levels' order)
    return True, _after(sim, done_c[done_c >= 0], n_last)


def _snap(sim: Simulator, cclk: tuple) -> None:
    """A run stopped at a byte threshold: the coflows there counted exactly at it (as
    ``Simulator._advance`` does), and the carried coflow lines' next threshold
    instants taken again for those moved or at one."""
    before = sim.sent.copy()
    sim._snap_thresholds()
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
        sim._complete(c)
    sim._settle()
    if sim.version != before:
        return True
    return False if n_last else None


def _book(sim: Simulator, counts: tuple[int, int, int], retired: int, began) -> None:
    """Book a compiled run: (events, flow visits, allocations), flows retired, coflows
    that started moving (their start: their earliest flow's)."""
    sim.stats.events += counts[0]
    sim.stats.flow_visits += counts[1]
    sim.stats.allocations += counts[2]
    sim.n_retired += retired
    for c in np.unique(began).tolist():
        if math.isnan(sim.outcomes[c].start_s):
            sim.outcomes[c].start_s = float(np.nanmin(sim.flows.start_s[sim.flows.span(c)]))
    sim.compact_if_due()
