"""Compiled run of consecutive flow completions on path groups (numba): the event loop of
max-min sharing between two policy decisions, out of Python.

Between two decisions the levels are fixed, so flows of one level on one path (and, with
byte thresholds, of one coflow) always move at the same rate: they form a *group* with
one rate, one counter ``served`` (bytes each member received since the group was built,
as taken at the group's ``t0``) and its members sorted by the bytes they had left then
(``rem0``), so a member's bytes left are ``rem0 - served`` and they finish in that
order.  An event then costs O(groups) instead of O(flows): re-sharing fills one
weighted row per group (bit for bit the rates the per-flow filling gives: a weighted
row adds its weight where the flows would add one each).  Time runs on per-group lines
(``vclock``): a group's counter is rebased only when its rate changes, the next
completion is the smallest of the groups' instants and only the groups due at an event
are visited.

The loop stops, with the engine's arrays brought up to date (``sync``), when a coflow
completes, when a coflow reaches a byte threshold (the loop takes that event itself),
when the next event is another kind (release, compute end, fault, horizon; ``loop``
returns it) or after ``budget`` events; the engine then carries on.  ``prepare`` sets a
run up once per set of groups; after a completion or a threshold ``sync_carry`` writes
them back and renumbers them as ``build`` would, and the next ``loop`` goes on with
them when the decision kept every level (``same_levels``): a coflow moved to the next
queue at a threshold often keeps the coflows' order, and the same order gives the same
rates (counts in docs/simulator.md).

Layout (built by ``build`` from the engine's active arrays, positions ``p`` into them):
``lv_bounds`` group ranges per level (increasing level); ``m_start``/``m_pos`` members
of each group (CSR of positions, by increasing ``rem0``); ``head`` each group's first
unfinished member; ``weight`` its unfinished member count.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim import blockers, groupalloc, groupfill, kernel, roundfill, stepkernel, vclock

# The loop stopped before an event (rates current) / after a flow completion that
# completed a coflow / after a coflow reached a byte threshold (both: groups carried).
BEFORE, AFTER, AT_THRESHOLD = 0, 1, 2
DAG, FLOW, FAULT, THRESHOLD = 0, 1, 2, 3  # kinds of the next event
KIND_NAMES = ("dag", "flow", "fault", "threshold")  # the engine's names of the kinds


@njit(cache=True)
def group_ids(active, level, pid, cof, by_coflow):
    """Group id per position (-1: retired flow), ordered by level then first member;
    returns (gid, number of groups, group range bounds per level).  ``slot[path]`` holds
    the last group of that path: valid only if made since the level (or, ``by_coflow``,
    the coflow run) began, as group ids only grow."""
    order, bounds = kernel._by_level(level)
    gid = np.full(active.size, -1, dtype=np.int64)
    slot = np.full(pid.max() + 1 if pid.size else 0, -1, dtype=np.int64)
    lv_bounds = [0]
    n = 0
    for b in range(bounds.size - 1):
        idx = order[bounds[b] : bounds[b + 1]]
        if idx.size == 0 or level[idx[0]] < 0:
            continue
        first = n
        for q in range(idx.size):
            p = idx[q]
            if by_coflow and q and cof[p] != cof[idx[q - 1]]:
                first = n
            if slot[pid[p]] < first:
                slot[pid[p]] = n
                n += 1
            gid[p] = slot[pid[p]]
        lv_bounds.append(n)
    return gid, n, np.array(lv_bounds)


@njit(cache=True)
def members(gid, n_groups, rem0):
    """CSR of positions per group, each group's by increasing ``rem0`` (stable)."""
    m_start = np.zeros(n_groups + 1, dtype=np.int64)
    for p in range(gid.size):
        if gid[p] >= 0:
            m_start[gid[p] + 1] += 1
    for g in range(n_groups):
        m_start[g + 1] += m_start[g]
    cursor = m_start[:-1].copy()
    m_pos = np.empty(m_start[-1], dtype=np.int64)
    for p in range(gid.size):
        if gid[p] >= 0:
            m_pos[cursor[gid[p]]] = p
            cursor[gid[p]] += 1
    for g in range(n_groups):
        if m_start[g + 1] - m_start[g] > 1:  # (a call per group counts references)
            _sort_members(m_pos, m_start[g], m_start[g + 1], rem0)
    return m_start, m_pos


@njit(cache=True)
def _sort_members(m_pos, lo, hi, rem0) -> None:
    """Stable sort of ``m_pos[lo:hi]`` by ``rem0`` (insertion sort when short)."""
    if hi - lo > 32:
        seg = m_pos[lo:hi].copy()
        m_pos[lo:hi] = seg[np.argsort(rem0[seg], kind="mergesort")]
        return
    for a in range(lo + 1, hi):
        p = m_pos[a]
        b = a - 1
        while b >= lo and rem0[m_pos[b]] > rem0[p]:
            m_pos[b + 1] = m_pos[b]
            b -= 1
        m_pos[b + 1] = p


@njit(cache=True)
def build(active, level, pid, cof, paths, remaining, rates, start_s, by_coflow):
    """Groups of the live active flows: (lv_bounds, m_start, m_pos, rem0 per position,
    then per group: paths, rate, weight, coflow, whether every member already started,
    first unfinished member, bytes served per member)."""
    rem0 = np.zeros(active.size)
    for p in range(active.size):
        rem0[p] = remaining[active[p]]
    gid, n, lv_bounds = group_ids(active, level, pid, cof, by_coflow)
    m_start, m_pos = members(gid, n, rem0)
    g_paths = np.empty((n, paths.shape[1]), dtype=np.int32)
    g_rate = np.zeros(n)
    g_cof = np.zeros(n, dtype=np.int64)
    started = np.ones(n, dtype=np.bool_)
    for g in range(n):
        p = m_pos[m_start[g]]
        for k in range(paths.shape[1]):  # (a row copy per group would count references)
            g_paths[g, k] = paths[p, k]
        g_rate[g], g_cof[g] = rates[p], cof[p]
        for a in range(m_start[g], m_start[g + 1]):
            if np.isnan(start_s[active[m_pos[a]]]):
                started[g] = False
    weight = np.diff(m_start)
    head = m_start[:-1].copy()
    return (
        lv_bounds,
        m_start,
        m_pos,
        rem0,
        g_paths,
        g_rate,
        weight,
        g_cof,
        started,
        head,
        np.zeros(n),
    )


@njit(cache=True)
def allocate(grp_lv, g_paths, weight, eps, g_rate, res_at, from_lv, fscratch, seen) -> None:
    """Rates of the groups (per member): levels in order, max-min within a level on one
    weighted row per non-empty group (``roundfill.fill``; ``grp_lv``: (lv_bounds, uses,
    link index, rounds) as ``groupalloc.reshare``).  Strict priority leaves the levels
    above ``from_lv`` as they were, so it starts there from ``res_at[from_lv]`` (row
    ``lv``: free capacity before level ``lv``, rewritten from ``from_lv`` on).  A level
    still blocked by the links that blocked it last time (``blockers``) is skipped.
    ``seen``: (blockers state, the rate of each group's line (``vclock``), filled per
    level), the last written for the levels filled."""
    lv_bounds, _uses, index, rounds = grp_lv
    blk, _old, filled = seen
    residual = res_at[from_lv].copy()
    for lv in range(from_lv, lv_bounds.size - 1):
        res_at[lv] = residual
        lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
        filled[lv] = not blockers.still(lv, lo, residual, eps, blk)
        if not filled[lv]:
            continue
        if roundfill.fill(
            lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rounds, fscratch
        ):
            blockers.note(lv, lo, hi, g_paths, weight, residual, eps, blk)
        else:
            blockers.forget(lv, blk)
    res_at[lv_bounds.size - 1] = residual


@njit(cache=True)
def stamp(grp, changed, active, cof, start_s, now, out_c, n) -> int:
    """Members of the groups ``changed`` that got a rate and never moved start now
    (``start_s``); append each coflow seen so to ``out_c`` from slot ``n``; returns the
    slots then used."""
    _lvb, m_start, m_pos, _r0, _paths, g_rate, weight, _gc, started, head, _sv = grp
    for g in changed:
        if started[g] or g_rate[g] <= 0.0 or weight[g] <= 0:
            continue
        started[g] = True
        for a in range(head[g], m_start[g + 1]):
            i = active[m_pos[a]]
            if np.isnan(start_s[i]):
                start_s[i] = now
                out_c[n] = cof[m_pos[a]]
                n += 1
    return n


@njit(cache=True)
def finish_due(grp, clk, lclk, cclk, flows, coflows, now, tol, out) -> tuple:
    """At ``now``: finish the members of the groups due (``t_due <= now``, in the levels
    whose smallest ``t_due`` is, ``lclk`` fresh) that are done (stamped at their own
    instant, appended to ``fin``), append the coflows with no flow left to ``done_c``
    (from its first free slot, -1), mark the levels that lost a member in ``dirty`` and
    note the groups that did for their restartable fillings (``out``: fin, n_fin,
    done_c, dirty, ``roundfill.slots``); returns (flows done, n_fin, the lowest level
    index that lost a member)."""
    lv_bounds = grp[0]
    fin, n_fin, done_c, dirty, rounds = out
    lv_due, stale = lclk[1], lclk[2]
    low = lv_bounds.size  # lowest level index that lost a member
    n_dc = 0
    while n_dc < done_c.size and done_c[n_dc] >= 0:
        n_dc += 1
    n = 0
    for lv in range(lv_bounds.size - 1):
        if lv_due[lv] > now:
            continue
        stale[lv] = True
        lv_out = (fin, n_fin, done_c, n_dc, rounds)
        ids = vclock.due(lclk, lv, lv_bounds[lv], lv_bounds[lv + 1], clk[4], now)
        fn = _finish_level(grp, clk, cclk, flows, coflows, now, tol, lv, ids, lv_out)
        if fn[0]:
            dirty[lv] = True
            low = min(low, lv)
        n, n_fin, n_dc = n + fn[0], fn[1], fn[2]
    return n, n_fin, low


@njit(cache=True)
def _finish_level(grp, clk, cclk, flows, coflows, now, tol, lv, ids, out) -> tuple:
    """``finish_due`` on level ``lv``'s groups due ``ids`` (``vclock.due``; ``out``:
    fin, n_fin, done_c, n_dc, rounds); returns (flows done, n_fin, n_dc)."""
    lv_bounds, m_start, m_pos, rem0, _paths, g_rate, weight, g_cof, _st, head, served = grp
    active, cof, remaining, size, _start_s, finish_s, caps = flows
    sent, left, by_coflow = coflows
    fin, n_fin, done_c, n_dc, rounds = out
    t0 = clk[0]
    marks, lst, n_t, c_delta = cclk[4:]
    lo = lv_bounds[lv]
    lost, noted, meta = roundfill.lost_of(rounds, lv, lo)
    n = 0
    for g in ids:
        rate = g_rate[g]
        s_now = vclock.served_at(served[g], t0[g], rate, now)
        n_was = n
        while head[g] < m_start[g + 1]:
            p = m_pos[head[g]]
            i = active[p]
            t_end = t0[g] + (rem0[p] - served[g]) * 8.0 / rate
            lft = rem0[p] - s_now
            if lft > max(tol * size[i], 1e-6) and t_end > now:
                break
            finish_s[i] = min(t_end, now)
            remaining[i], caps[i] = 0.0, 0.0
            if by_coflow:
                sent[g_cof[g]] += lft
                c = g_cof[g]
                c_delta[c] -= rate / 8.0  # one member less at this rate
                if not marks[c]:  # vclock.rebase_some's, written out
                    marks[c] = True
                    lst[n_t[0]] = c
                    n_t[0] += 1
            left[cof[p]] -= 1
            if left[cof[p]] == 0:
                done_c[n_dc] = cof[p]
                n_dc += 1
            fin[n_fin] = p
            n_fin += 1
            head[g] += 1
            weight[g] -= 1
            n += 1
        if n > n_was and noted.size and not noted[g - lo]:  # roundfill.note_lost's
            noted[g - lo] = True
            lost[meta[5]] = g - lo
            meta[5] += 1
        vclock.head_of(g, m_start, m_pos, head, rem0, active, size, tol, clk)
        vclock.instants(g, weight, g_rate, served, clk)
    return n, n_fin, n_dc


@njit(cache=True)
def next_event(clk, lclk, cclk, thresholds, clock) -> tuple:
    """(seconds to the next event, its kind, the next completion's instant), as the
    engine's ``_next_event``; ``lclk`` is made fresh (``vclock.refresh``) and ``clock``
    is (lv_bounds, now, next release or compute end, next fault)."""
    lv_bounds, now, t_dag, t_fault = clock
    vclock.refresh(lclk, lv_bounds, clk)
    t_min = vclock.earliest(lclk[0])
    dt = t_min - now
    best, why = t_dag - now, DAG
    if dt < best and stepkernel.ahead(t_min, t_dag):
        best, why = dt, FLOW
    if t_fault - now < best:
        best, why = t_fault - now, FAULT
    if thresholds.size and np.isfinite(dt):
        d = vclock.next_threshold(cclk, now)
        if d < best:
            best, why = d, THRESHOLD
    return max(best, 0.0), why, t_min


@njit(cache=True)
def _reshare(grp, eps, state, need, scratch, seen, incremental) -> None:
    """Rates of the groups after the levels from ``need`` on changed: incrementally
    (``groupalloc.reshare``: only the levels whose inputs changed) or every level again
    from ``need`` (``allocate``, the reference) but those still blocked; ``seen`` as
    ``allocate``'s, its flags written for every level re-shared."""
    lv_bounds, _ms, _mp, _r0, g_paths, g_rate, weight, _gc, _st, _hd, _sv = grp
    res_at, blocked, dirty, uses, index, rounds = state
    grp_lv = (lv_bounds, uses, index, rounds)
    if incremental:
        seen[2][need:] = True
        saved = (res_at, blocked, dirty)
        groupalloc.reshare(grp_lv, g_paths, weight, eps, g_rate, saved, need, scratch)
    else:
        allocate(grp_lv, g_paths, weight, eps, g_rate, res_at, need, scratch[3], seen)
        dirty[:] = False


@njit(cache=True)
def _rates_again(grp, clk, lclk, cclk, ctx, need, now) -> np.ndarray:
    """Re-share from level ``need`` (``ctx``: eps, state, scratch, incremental, what
    ``allocate`` saw, changed buffer, byte thresholds, sent); groups of the levels
    filled whose rate differs from their line's (of a restarted filling, only those it
    froze again can) get new lines (their levels' smallest instants are marked stale
    in ``lclk``) and their coflows' lines are redone; returns those groups.  The rate
    of each line is kept (``seen[1]``), so no level's rates are copied before it is
    filled."""
    eps, state, scratch, incremental, seen, changed, thresholds, sent = ctx
    lv_bounds, old, filled = grp[0], seen[1], seen[2]
    by_coflow = thresholds.size > 0
    _reshare(grp, eps, state, need, scratch, seen, incremental)
    n = 0
    rounds = state[5]
    for lv in range(need, lv_bounds.size - 1):
        if not filled[lv]:
            continue
        was = n
        every, ids = roundfill.refrozen(lv, lv_bounds, rounds)
        if every:
            lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
            n = vclock.rebase(grp, clk, cclk, old, lo, hi, now, changed, n, by_coflow)
        elif ids.size:
            n = vclock.rebase_some(grp, clk, cclk, old, ids, 0, 0, now, changed, n, by_coflow)
        vclock.near_add(lclk, lv, lv_bounds[lv], changed[was:n], clk[4])
        lclk[2][lv] |= n > was
    if by_coflow:
        vclock.recount_touched(cclk, sent, thresholds, now)
    return changed[:n]


@njit(cache=True)
def prepare(grp, capacity, thresholds, coflows, active, size, tol, now, incremental) -> tuple:
    """What a run of ``loop`` on the groups ``grp`` built at ``now`` carries: (eps,
    the filling state, scratch, ``incremental``, what ``allocate`` saw, a changed
    buffer, the group, level and coflow clocks).  ``incremental``: re-share only the
    levels whose inputs changed (``groupalloc``; else every level from the first that
    lost a member).  The rates the groups came with are only the old rates ``stamp``
    and the lines compare against: the first re-sharing is from scratch."""
    lv_bounds, _ms, _mp, _r0, g_paths, g_rate, weight, g_cof, _st, _hd, _sv = grp
    n_g, n_lv = g_rate.size, lv_bounds.size - 1
    links = capacity.size
    res_at = np.zeros((n_lv + 1, links))
    res_at[0] = capacity
    uses = np.zeros((n_lv, 0), np.bool_)  # which links a level crosses: incremental only
    if incremental:
        uses = groupalloc.level_links(lv_bounds, g_paths, links)
    index = groupfill.level_index(lv_bounds, g_paths, links)
    # Saved per level: free capacity handed to it, no rate at all, lost a member since.
    rounds = roundfill.slots(lv_bounds, links)  # the levels whose filling restarts mid-way
    state = (res_at, np.zeros(n_lv, np.bool_), np.ones(n_lv, np.bool_), uses, index, rounds)
    fscratch = (
        np.zeros(n_g, np.bool_),
        np.zeros(links, np.int64),
        np.zeros(links, np.int64),
        np.zeros(links, np.bool_),
    )
    scratch = (np.empty(links, np.int64), np.empty(links), np.empty(links), fscratch)
    seen = (blockers.state(n_lv, n_g, links), g_rate.copy(), np.zeros(n_lv, np.bool_))
    sent = coflows[0]
    clk = vclock.start(grp, active, size, tol, now)
    lclk = vclock.level_clock(lv_bounds)
    by_cof = g_cof if thresholds.size else g_cof[:0]  # coflow lines: thresholds only
    cclk = vclock.coflow_clock(by_cof, sent.size, g_rate, weight, sent, thresholds, now)
    eps = kernel.full_below(capacity)
    return eps, state, scratch, incremental, seen, np.empty(n_g, np.int64), clk, lclk, cclk


@njit(cache=True)
def loop(grp, kept, flows, coflows, thresholds, clock, budget, tol, need, valid) -> tuple:
    """Share the groups' rates from level ``need`` (every level unless ``valid``: the
    saved free capacities in ``kept``, ``prepare``'s, are those of the groups as they
    are), then flow-completion events until a coflow completes, a coflow reaches a
    byte threshold (that event taken: time moved to it, the flows due then finished),
    the next event is another kind, the horizon or ``budget`` events.  ``clock``:
    (now, next release or compute end, next fault, horizon).  Time runs on per-group
    lines (``vclock``); on return every counter is taken at the last instant.  Returns
    (BEFORE/AFTER/AT_THRESHOLD, now, events, flow visits, allocations, flows done at
    the last event, finished positions, completed coflows, coflows that started, after
    AFTER or AT_THRESHOLD the level to re-share from next (``need`` of a later ``loop``
    on the same groups), after BEFORE the seconds to the next event and its kind, as
    ``next_event`` found them)."""
    lv_bounds, _ms, _mp, _r0, _paths, _rate, weight, _gc, _st, _hd, _sv = grp
    active, cof, _rem, _size, start_s, _fin, _caps = flows
    now, t_dag, t_fault, horizon = clock
    eps, state, scratch, incremental, seen, changed, clk, lclk, cclk = kept
    n_lv, sent = lv_bounds.size - 1, coflows[0]
    ctx = (eps, state, scratch, incremental, seen, changed, thresholds, sent)
    rounds = state[5]
    out = (np.empty(active.size, np.int64), 0, np.full(active.size, -1, np.int64), state[2], rounds)
    fin, done_c = out[0], out[2]
    began, n_began = np.empty(active.size, np.int64), 0
    live, n_fin, events, visits, allocs, n_last = weight.sum(), 0, 0, 0, 0, 0
    status, dt, why = BEFORE, 0.0, FLOW
    while True:
        if need <= n_lv:
            need = need if valid else 0
            got = _rates_again(grp, clk, lclk, cclk, ctx, need, now)
            n_began = stamp(grp, got, active, cof, start_s, now, began, n_began)
            valid = True
            allocs += 1
        dt, why, t_flow = next_event(clk, lclk, cclk, thresholds, (lv_bounds, now, t_dag, t_fault))
        if why == DAG or why == FAULT or now + dt > horizon or events >= budget:
            break
        visits += live
        now = now + dt if why == THRESHOLD else max(t_flow, now)
        out = (fin, n_fin, done_c, state[2], rounds)
        n_last, n_fin, need = finish_due(grp, clk, lclk, cclk, flows, coflows, now, tol, out)
        # The coflows touched are recounted once, after the re-sharing at this same
        # instant (or settled on return): their lines are not read before.
        live -= n_last
        events += 1
        if why == THRESHOLD:  # the policy decides again; it may keep the groups
            status = AT_THRESHOLD
            break
        if done_c[0] >= 0:
            status = AFTER
            break
    vclock.settle(grp, clk, now)
    if thresholds.size:
        vclock.settle_coflows(cclk, sent, now)
    out_c = (fin[:n_fin], done_c, began[:n_began])
    return status, now, events, visits, allocs, n_last, *out_c, need, dt, why


@njit(cache=True)
def sync(grp, active, cof, remaining, rates, level, sent, moved, by_coflow) -> None:
    """Write the groups back to the engine's arrays: bytes left per flow, rate per
    position (finished: rate 0, level -1), ``moved`` and (unless ``by_coflow``, where
    ``advance`` kept it live) ``sent`` per coflow."""
    _lvb, m_start, m_pos, rem0, _paths, g_rate, _w, _gc, _st, head, served = grp
    for g in range(g_rate.size):
        for a in range(m_start[g], m_start[g + 1]):
            p = m_pos[a]
            if a < head[g]:
                rates[p], level[p] = 0.0, -1
                delta = rem0[p]
            else:
                remaining[active[p]] = rem0[p] - served[g]
                rates[p] = g_rate[g]
                delta = served[g]
            if delta > 0.0:
                moved[cof[p]] = True
                if not by_coflow:
                    sent[cof[p]] += delta


@njit(cache=True)
def sync_carry(grp, clk, active, cof, remaining, rates, level, sent, moved, by_coflow) -> tuple:
    """``sync``, then the groups as ``build`` would make them again from the engine's
    arrays once compacted (``level`` -1: retired), in one pass over the members:
    finished members dropped, the others' positions renumbered in order, each counter a
    new baseline (bytes left less served, served 0: the same lines and instants);
    groups left without members stay, empty.  Returns (the groups, the flow at each new
    position: what the compacted ``active`` must be)."""
    lv_bounds, m_start, m_pos, rem0, g_paths, g_rate, weight, g_cof, started, head, served = grp
    for g in range(g_rate.size):  # retired first: the renumbering counts them out
        for a in range(m_start[g], head[g]):
            level[m_pos[a]] = -1
    renum, n = np.empty(level.size, np.int64), 0
    for p in range(level.size):
        renum[p] = n
        n += level[p] >= 0
    starts, pos = np.zeros(g_rate.size + 1, np.int64), np.empty(n, np.int64)
    rem, flows, k = np.empty(n), np.empty(n, np.int64), 0
    h_left = clk[1]
    for g in range(g_rate.size):
        for a in range(m_start[g], m_start[g + 1]):
            p = m_pos[a]
            if a < head[g]:  # as sync, in the same order (bytes sent summed alike)
                rates[p] = 0.0
                delta = rem0[p]
            else:
                q, left = renum[p], rem0[p] - served[g]
                remaining[active[p]], rates[p] = left, g_rate[g]
                delta = served[g]
                pos[k], rem[q], flows[q] = q, left, active[p]
                k += 1
            if delta > 0.0:
                moved[cof[p]] = True
                if not by_coflow:
                    sent[cof[p]] += delta
        starts[g + 1] = k
        h_left[g] -= served[g]  # rem0 of the first member, as it was, less served
        served[g] = 0.0
    out = (lv_bounds, starts, pos, rem, g_paths, g_rate, weight, g_cof, started)
    return (*out, starts[:-1].copy(), served), flows


@njit(cache=True)
def same_levels(grp, level) -> bool:
    """Whether the levels ``level`` (per position) keep the groups as they are: every
    member left of a level's groups at one value, and the values increasing with the
    level (a relabelling, e.g. a queue left empty), so ``build`` would group alike.
    (Groups built or carried: no member finished, every one is looked at.)"""
    return same_coflow_levels(grp, np.arange(level.size), level)


@njit(cache=True)
def same_coflow_levels(grp, cof, level_of) -> bool:
    """``same_levels`` with the levels per coflow ``level_of`` (``cof`` per position),
    on the members left (from each group's ``head``): what a run that has not written
    its groups back can check."""
    lv_bounds, m_start, m_pos, head = grp[0], grp[1], grp[2], grp[9]
    last = -1
    for lv in range(lv_bounds.size - 1):
        val = -1
        for g in range(lv_bounds[lv], lv_bounds[lv + 1]):
            for a in range(head[g], m_start[g + 1]):
                if val < 0:
                    val = level_of[cof[m_pos[a]]]
                elif level_of[cof[m_pos[a]]] != val:
                    return False
        if val >= 0 and val <= last:
            return False
        last = max(last, val)
    return True


@njit(cache=True)
def live_rows(grp, cof, paths) -> tuple:
    """The live members as the compacted active arrays would list them, without
    writing the groups back: (their positions, coflow, first and last link, bytes
    left as ``sync`` would write them), by increasing position."""
    _lvb, m_start, m_pos, rem0, _paths, g_rate, _w, _gc, _st, head, served = grp
    left = np.full(cof.size, -1.0)
    for g in range(g_rate.size):
        for a in range(head[g], m_start[g + 1]):
            left[m_pos[a]] = rem0[m_pos[a]] - served[g]
    n = 0
    for p in range(left.size):
        n += left[p] >= 0.0
    at, row_cof = np.empty(n, np.int64), np.empty(n, np.int64)
    src, dst, bits = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    k, last = 0, paths.shape[1] - 1
    for p in range(left.size):
        if left[p] >= 0.0:
            at[k], row_cof[k], bits[k] = p, cof[p], left[p]
            src[k], dst[k] = paths[p, 0], paths[p, last]
            k += 1
    return at, row_cof, src, dst, bits


@njit(cache=True)
def sent_now(grp, cof, sent) -> np.ndarray:
    """Bytes sent per coflow as ``sync`` would leave them without byte thresholds
    (``sent`` plus what each member delivered since the groups were built), without
    writing the groups back."""
    _lvb, m_start, m_pos, rem0, _paths, g_rate, _w, _gc, _st, head, served = grp
    out = sent.copy()
    for g in range(g_rate.size):
        for a in range(m_start[g], m_start[g + 1]):
            p = m_pos[a]
            delta = rem0[p] if a < head[g] else served[g]
            if delta > 0.0:
                out[cof[p]] += delta
    return out
