"""Progressive filling of one level restarted at the first round that can differ from
the last filling's (numba), instead of from the first round.

Two things change between two fillings of a level: its groups lose members (flow
completions; between two decisions a group never gains one) and the free capacity it
is handed (the levels above it re-shared).  Either way only a few links differ, and
the rounds before the first one they can affect are the same, bit for bit:

- *Members lost.*  Take the groups that lost some (``C``) and the first round ``r_m``
  in which one of them froze.  Before ``r_m`` every group of ``C`` was growing, so the
  links they cross did not fill: their shares (free capacity / growing members) are now
  only larger and never the smallest.
- *Capacity handed.*  A link whose free capacity went from full to free or back changes
  which groups can grow at all: filled from the first round (``_full``).  Otherwise the link's free
  capacity is replayed through the saved steps (the same subtractions, with its new
  count of growing members); ``r_i`` is the first round in which it would fill (as it
  would if its share were at most the step taken) or filled last time.

In the rounds before ``r* = min(r_m, r_i)`` no link that differs fills (so its share is
above the step taken), and every other link sees the same counts and
subtractions, so those rounds pick the same link, take the same step and freeze the
same groups at the same rates.  The links that differ are replayed up to ``r*`` (their
rows rewritten from the saved steps) and the rounds from ``r*`` on run again from the
saved state; if ``r*`` is the last round, only the output changes.  ``r* = 0`` is a
restart too: the same groups can grow (no link went from full to free or back), so the
saved row 0 with the counts replayed is what a filling from the first round would
build, without checking every group's links again.  The filling is
``groupfill.fill_level``'s.

A filling from the first round does not look at every group either.  A group that
could not grow (it crosses a full link) has no rate, so it loses no members; it stays
unable to grow while that link stays full.  Each filling notes a *cover*: one full
link for each such group crossing none noted yet.  The next filling from the first
round checks only its *candidates*: the groups that grew last time, and the groups
that could not but cross a cover link now free.  It finds the same growing groups
with the same counts, so the same rounds; only the candidates' rates can change.
Only the groups that grew can have lost members; the callers note each group that
lost some (``note_lost`` on ``lost_of``), so a filling looks at those alone.

A restart's rounds mostly freeze the same groups as last time, at another level (the
steps before moved it).  While the groups frozen so far are last time's (but for those
left without members), the live groups are too; a round whose full links are those
that filled then (row ``r + 1`` is still last time's) then freezes the same groups,
and is *taken over*: they get the new level in the order saved, and each other
growing link loses the members it lost then (its count less row ``r + 1``'s), without
visiting any link's groups.  A round one of whose groups lost members is run again.
The arithmetic is the same, so the rates are bit for bit a filling's from scratch.

State of one level (``rs``, as ``state`` builds it; R rows, at most links + 2):
``r_res`` [R, links] free capacity at each round's start (row 0: the cleaned input;
row ``n``: what the level hands on), ``r_cnt`` [R, links] growing members per link
then, ``r_step`` each round's step, ``r_level`` the water level at each round's start,
``r_in`` the raw input, ``fr`` each group's freeze round (-1: never grew), ``order``
the level's groups by freeze round with ``r_pos`` each round's first position,
``w_old`` the weights at the last filling, ``meta`` [rounds, valid, the first round
the last filling ran (0: all of them), cover links (-1: none noted), candidates of
the last filling from the first round (-1: every group), groups noted as having lost
members, whether the last filling was from the first round (1) or a restart (0),
groups taken over],
``cov`` the cover's links, ``cand`` the candidates (group ids), ``lost`` the groups
noted (offsets from the level's first group) and ``noted`` their flags; for a restart
per round [groups noted that froze then, of those the ones left empty, groups frozen
early that froze then last time] and per link its count at a round's start last
time.  On big fabrics fewer rows are kept than a filling can take (``ROWS_MIN``..links + 2, within
``SAVED_MAX``); a filling of more rounds is then not saved (the next one starts from
the first round).
``slots`` keeps such a state for every level of at least ``RESTART_MIN`` groups, within
``SAVED_MAX`` saved values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from coflowbed.sim import blockers, groupfill, kernel
from coflowbed.sim.kernel import ix

RESTART_MIN = 256  # levels with fewer groups are filled from the first round
ROWS_MIN = 64  # rounds saved per level at least (a filling has at most links + 1)
SAVED_MAX = 1 << 23  # saved free capacities over all restartable levels (x 16 B)
FLIP = -1  # _inputs: a link handed on went from full to free or back


@njit(cache=True)
def state(lo, hi, n_links) -> tuple:
    """Empty saved state of a level of groups ``lo..hi`` (not valid yet)."""
    return _view(_stack(1, hi - lo, _rows(n_links), n_links), 0, 0, hi - lo)


@njit(cache=True)
def _rows(n_links) -> int:
    """Rounds saved per level: every round a filling can take (links + 1, and the
    output) unless that passes ``SAVED_MAX``, and then at least ``ROWS_MIN``."""
    return min(n_links + 2, max(ROWS_MIN, SAVED_MAX // max(n_links, 1)))


@njit(cache=True)
def _stack(n_slots, n_groups, rows, n_links) -> tuple:
    """Saved states of ``n_slots`` levels: per slot the per-round arrays, per group
    (global ids) the freeze rounds, order and weights, then per slot a restart's
    per-round counts and per-link counts (``state``)."""
    return (
        np.empty((n_slots, rows, n_links)),
        np.empty((n_slots, rows, n_links), dtype=np.int64),
        np.empty((n_slots, rows)),
        np.empty((n_slots, rows)),
        np.empty((n_slots, n_links)),
        np.full(n_groups, -1, dtype=np.int64),
        np.empty(n_groups, dtype=np.int64),
        np.zeros((n_slots, rows), dtype=np.int64),
        np.zeros(n_groups, dtype=np.int64),
        _meta(n_slots),
        np.empty((n_slots, n_links), dtype=np.int64),
        np.empty(n_groups, dtype=np.int64),
        np.empty(n_groups, dtype=np.int64),
        np.zeros(n_groups, dtype=np.bool_),
        np.zeros((n_slots, 3, rows), dtype=np.int64),
        np.empty((n_slots, n_links), dtype=np.int64),
    )


@njit(cache=True)
def _meta(n_slots) -> np.ndarray:
    """Per slot [rounds, valid, first round run, cover links (-1: none), candidates
    (-1: every group), groups noted as having lost members, from the first round (1)
    or restarted (0), groups taken over]: nothing saved yet."""
    meta = np.zeros((n_slots, 8), dtype=np.int64)
    meta[:, 3:5] = -1
    return meta


@njit(cache=True)
def _view(st, slot, lo, hi) -> tuple:
    """Slot ``slot``'s state as ``state`` lays it out (groups ``lo..hi``)."""
    return (
        st[0][slot],
        st[1][slot],
        st[2][slot],
        st[3][slot],
        st[4][slot],
        st[5][lo:hi],
        st[6][lo:hi],
        st[7][slot],
        st[8][lo:hi],
        st[9][slot],
        st[10][slot],
        st[11][lo:hi],
        st[12][lo:hi],
        st[13][lo:hi],
        st[14][slot],
        st[15][slot],
    )


@njit(cache=True)
def slots(lv_bounds, n_links) -> tuple:
    """Restartable levels: (slot per level, -1 for none; their stacked states).  The
    levels of at least ``RESTART_MIN`` groups, biggest first, while their saved rows fit
    ``SAVED_MAX`` (the biggest always)."""
    n_lv = lv_bounds.size - 1
    sizes = np.diff(lv_bounds)
    rows = _rows(n_links)
    room = max(1, SAVED_MAX // (rows * max(n_links, 1)))
    slot = np.full(n_lv, -1, dtype=np.int64)
    n = 0
    for lv in np.argsort(-sizes, kind="mergesort"):
        if sizes[lv] < RESTART_MIN or n >= room:
            break
        slot[lv] = n
        n += 1
    return slot, _stack(n, lv_bounds[-1], rows, n_links)


@njit(cache=True)
def lost_of(rounds, lv, lo) -> tuple:
    """Where level ``lv``'s groups (the first is ``lo``) that lost members since its last
    filling are noted: (lost, noted, meta) for ``note_lost``; all empty for a level
    that does not restart.  Taken once per level: a view made per group would count
    references at every call."""
    slot, st = rounds
    if slot[lv] < 0:
        return st[12][:0], st[13][:0], np.zeros(6, dtype=np.int64)
    return st[12][lo:], st[13][lo:], st[9][slot[lv]]


@njit(cache=True)
def note_lost(lost, noted, meta, k) -> None:
    """Note the level's ``k``-th group (``lost_of``), once until its next filling."""
    if not noted[k]:
        noted[k] = True
        lost[meta[5]] = k
        meta[5] += 1


@njit(cache=True)
def _forget_lost(rs) -> None:
    """No group noted any more (the filling has seen them all)."""
    lost, noted, meta = rs[12], rs[13], rs[9]
    for q in range(meta[5]):
        noted[lost[q]] = False
    meta[5] = 0


@njit(cache=True)
def _changed(lo, g_paths, weight, rs, delta) -> tuple:
    """Members lost per link since the last filling into ``delta`` (zeros on entry), of
    the groups noted (``note_lost``, then forgotten; only groups that grew can lose
    members: one that did not has no rate), and per round how many of the groups it
    froze lost some and how many of those are left empty (``rs[14][0]`` and
    ``rs[14][1]``, zeros on entry).  Returns (the first freeze round of a group that
    lost some, n_rounds if none; how many are left empty, their offsets moved to the
    front of ``lost``)."""
    fr, w_old, meta, lost, noted, rt = rs[5], rs[8], rs[9], rs[12], rs[13], rs[14]
    first, n_empty = meta[0], 0
    for q in range(meta[5]):
        j = lost[q]
        noted[j] = False
        n_lost = w_old[j] - weight[lo + j]
        if n_lost and fr[j] >= 0:
            for k in range(g_paths.shape[1]):
                delta[g_paths[lo + j, k]] += n_lost
            first = min(first, fr[j])
            rt[0, fr[j]] += 1
            w_old[j] = weight[lo + j]
            if weight[lo + j] == 0:
                rt[1, fr[j]] += 1
                lost[n_empty] = j
                n_empty += 1
    meta[5] = 0
    return first, n_empty


@njit(cache=True)
def _input_round(k, x, rs, delta, eps, bound) -> int:
    """First round before ``bound`` whose choice link ``k``'s new cleaned input ``x``
    (> eps) could change: it fills now (a share at most the step taken is one) or did
    last time (``bound``: none)."""
    r_res, r_cnt, r_step = rs[0], rs[1], rs[2]
    res = x
    for i in range(bound):
        c = r_cnt[i, k] - delta[k]
        if c <= 0:
            continue
        res -= r_step[i] * c
        if res <= eps[k] or r_res[i + 1, k] <= eps[k]:
            return i
    return bound


@njit(cache=True)
def _inputs(residual, rs, eps, delta, moved, bound) -> int:
    """Links whose free capacity handed differs from the last filling's: raw input
    saved, cleaned input into row 0, marked ``moved``; returns the first round one can
    change (at most ``bound``), or ``FLIP`` if one went from full to free or back."""
    r_res, r_in = rs[0], rs[4]
    for k in range(residual.size):
        x = residual[k]
        if x == r_in[k]:
            continue
        if (x <= eps[k]) != (r_in[k] <= eps[k]):
            return FLIP
        r_in[k] = x
        if x <= eps[k]:
            continue
        r_res[0, k] = x
        moved[k] = True
        bound = _input_round(k, x, rs, delta, eps, bound)
    return bound


@njit(cache=True)
def _replay(rs, delta, moved, r_star) -> None:
    """Links that lost members or were handed another free capacity: their counts and
    free capacity at the start of rounds ``0..r_star`` recomputed with ``delta`` fewer
    growing members from row 0 (same subtractions); clears ``delta`` and ``moved``."""
    r_res, r_cnt, r_step = rs[0], rs[1], rs[2]
    for k in range(delta.size):
        if delta[k] == 0 and not moved[k]:
            continue
        res = r_res[0, k]
        for i in range(r_star + 1):
            r_res[i, k] = res
            r_cnt[i, k] -= delta[k]
            if i < r_star and r_cnt[i, k] > 0:
                res -= r_step[i] * r_cnt[i, k]
        delta[k], moved[k] = 0, False


@njit(cache=True)
def _rounds(lv, lo, index, g_paths, weight, eps, g_rate, rs, r0, live, n_live, out, again) -> None:
    """Rounds from ``r0`` on (state at its start in ``rs``), saving each round's start,
    step and the groups it freezes while the rows last (else the state is left invalid);
    the level's output goes to ``out`` (and ``r_res[rounds]``).  ``again``: a restart,
    whose rounds that freeze the same groups as last time take them over (``_again``)
    while the groups frozen so far are last time's (``_still_same``)."""
    r_res, r_cnt, r_step, r_level = rs[0], rs[1], rs[2], rs[3]
    order, r_pos, meta, n_lost_at = rs[6], rs[7], rs[9], rs[14][0]
    residual, count = r_res[r0].copy(), r_cnt[r0].copy()
    level, r, pos = r_level[r0], r0, r_pos[r0]
    rows, n_old, taken = r_step.size, meta[0], 0
    track = np.array([int(again), 0, 0])  # [same so far, froze early, left empty]
    act = np.empty(residual.size, np.int64)
    n_act = groupfill.growing(count, act)
    while n_live > 0:
        over = track[0] and r0 < r < n_old and n_lost_at[r] == 0
        old_lo = r_pos[r] if over else 0
        if over:  # row r is still last time's
            _take_counts(r_cnt[r], act, n_act, rs[15])
        if r + 1 < rows:
            r_res[r], r_cnt[r], r_level[r], r_pos[r] = residual, count, level, pos
        step, link = groupfill.min_share_on(residual, count, act, n_act)
        if link < 0:
            raise ValueError("a flow crosses no link of finite capacity")
        if r + 1 < rows:
            r_step[r] = step
        level += step
        groupfill.step_on(residual, count, act, n_act, step, link)
        if over and _same_full(residual, eps, act, n_act, rs, r):
            n = _again(lo, order, old_lo, r_pos[r + 1], pos, live, g_rate, level)
            _count_again(residual, count, act, n_act, eps, rs, r, r + 1 == n_old)
            pos, n_live, taken = pos + n, n_live - n, taken + n
        else:
            rnd = (residual, count, act, n_act, r, level, again, track)
            pos, n_live = _freeze(
                lv, lo, index, g_paths, weight, eps, g_rate, rs, live, pos, n_live, rnd
            )
        if again and r < n_old:  # (no group froze at a later round last time)
            _still_same(rs, r, pos, track)
        else:
            track[0] = 0
        n_act = groupfill.still_growing(count, act, n_act)
        r += 1
    meta[7] = taken
    out[:] = residual
    if r < rows:
        r_res[r], r_pos[r], meta[0] = residual, pos, r
    else:
        meta[1] = 0


@njit(cache=True)
def _freeze(lv, lo, index, g_paths, weight, eps, g_rate, rs, live, pos, n_live, rnd) -> tuple:
    """Freeze the live groups crossing the links this round fills (``rnd``: residual,
    count, act, n_act, round, its level, restart, ``track``) at that level, in order
    from ``pos`` (``n_live`` live before); a restart counts the groups that froze later
    last time (``track[1]`` and ``rs[14][2]`` at that round).  Returns (pos, n_live)."""
    residual, count, act, n_act, r, level, again, track = rnd
    fr, order, late = rs[5], rs[6], rs[14][2]
    start, groups = index
    base = lv * residual.size
    for j in range(n_act):
        k = act[j]
        if residual[k] > eps[k]:
            continue
        residual[k] = 0.0
        if count[k] == 0:
            continue
        for q in range(ix(start[base + k]), ix(start[base + k + 1])):
            g, i = ix(groups[q]), ix(groups[q] - lo)
            if live[i]:
                if again and fr[i] > r:  # froze later last time
                    late[fr[i]] += 1
                    track[1] += 1
                live[i], g_rate[g], fr[i] = False, level, r
                order[ix(pos)] = g
                pos += 1
                n_live -= 1
                for kk in range(g_paths.shape[1]):
                    if g_paths[g, kk] != k:  # k's own count is 0 once all froze
                        count[ix(g_paths[g, kk])] -= weight[g]
        count[k] = 0
    return pos, n_live


@njit(cache=True)
def _still_same(rs, r, pos, track) -> None:
    """After round ``r`` (< last time's rounds) of a restart: whether the groups frozen
    so far are those last time froze by then, but for those left without members
    (``rs[14][1]`` per round): none froze earlier than then (``track[1]``, less those
    whose round this was) and as many froze, so ``pos`` is where last time's next round
    began less those left empty.  Then the next round's live groups are last time's
    (``track[0]``)."""
    rt, r_pos = rs[14], rs[7]
    track[1] -= rt[2, r]
    track[2] += rt[1, r]
    rt[2, r] = 0
    track[0] = track[1] == 0 and pos == r_pos[r + 1] - track[2]


@njit(cache=True)
def _take_counts(row, act, n_act, prev) -> None:
    """Last filling's counts at this round's start (``row``, about to be rewritten) of
    the links growing now, into ``prev``."""
    for j in range(n_act):
        prev[act[j]] = row[act[j]]


@njit(cache=True)
def _same_full(residual, eps, act, n_act, rs, r) -> bool:
    """Whether the links this round fills are those round ``r`` filled last time: a
    growing link is full now iff it was growing then (``rs[15]``) and full after it
    (row ``r + 1``, still last time's).  A link growing then but not now had only
    groups left empty growing on it; had it filled then, one of them froze in that
    round, and such a round is not taken over (``rs[14][0]``)."""
    prev, r_res_next = rs[15], rs[0][r + 1]
    for j in range(n_act):
        k = act[j]
        if (residual[k] <= eps[k]) != (prev[k] > 0 and r_res_next[k] <= eps[k]):
            return False
    return True


@njit(cache=True)
def _again(lo, order, old_lo, old_hi, pos, live, g_rate, level) -> int:
    """Round taken over: the groups it froze last time (``order[old_lo:old_hi]``) freeze
    again at ``level``, moved to positions from ``pos`` (the rounds before may have had
    fewer: groups left without members); how many."""
    for q in range(old_lo, old_hi):
        g = ix(order[q])
        live[g - ix(lo)], g_rate[g] = False, level
        order[ix(pos + q - old_lo)] = g
    return old_hi - old_lo


@njit(cache=True)
def _count_again(residual, count, act, n_act, eps, rs, r, last) -> None:
    """Counts after a round taken over: its full links 0, every other growing link less
    what the same groups took off it last time (its count then, ``rs[15]``, less row
    ``r + 1``'s; all of them in the last round of last time, whose counts are not kept)."""
    prev, cnt_next = rs[15], rs[1][r + 1]
    for j in range(n_act):
        k = act[j]
        if residual[k] <= eps[k]:
            residual[k], count[k] = 0.0, 0
        elif last:
            count[k] = 0
        else:
            count[k] -= prev[k] - cnt_next[k]


@njit(cache=True)
def _candidates(lv, lo, index, rs, residual, eps) -> int:
    """Groups whose liveness can differ from the last filling's into ``cand``: those
    that grew then and the blocked ones crossing a cover link now free (marked in
    ``fr`` as -2); the cover keeps its links still full.  Returns how many."""
    fr, order, r_pos, meta, cov, cand = rs[5], rs[6], rs[7], rs[9], rs[10], rs[11]
    n = r_pos[meta[0]]
    cand[:n] = order[:n]
    start, groups = index
    base, kept = lv * residual.size, 0
    for j in range(meta[3]):
        k = cov[j]
        if residual[k] <= eps[k]:
            cov[kept] = k
            kept += 1
            continue
        for q in range(start[base + k], start[base + k + 1]):
            g = groups[q]
            if fr[g - lo] == -1:
                fr[g - lo] = -2
                cand[n] = g
                n += 1
    meta[3] = kept
    return n


@njit(cache=True)
def _live(lo, hi, ids, n, g_paths, weight, residual, eps, scratch, rs) -> int:
    """``groupfill._live`` on the groups ``ids[:n]`` (``n`` < 0: all of ``lo..hi``),
    noting in the cover a full link of each group it blocks that crosses none yet
    (``mark``: the cover's links, all False again on return); how many are live."""
    live, count, mark = scratch[0], scratch[1], scratch[3]
    cov, meta = rs[10], rs[9]
    n_cov = max(meta[3], 0)
    for j in range(n_cov):
        mark[cov[j]] = True
    n_live = 0
    for q in range(n if n >= 0 else hi - lo):
        g = ix(ids[q] if n >= 0 else lo + q)
        i = g - ix(lo)
        live[i] = False
        if weight[g] <= 0:
            continue
        full = blockers.full_link(g, g_paths, mark, residual, eps)
        if full == -1:
            live[i] = True
            n_live += 1
            for k in range(g_paths.shape[1]):
                count[ix(g_paths[g, k])] += weight[g]
        elif full >= 0:
            mark[full] = True
            cov[n_cov] = full
            n_cov += 1
    for j in range(n_cov):
        mark[cov[j]] = False
    meta[3] = n_cov
    return n_live


@njit(cache=True)
def _reset(lo, hi, ids, n, weight, g_rate, rs) -> None:
    """Before a filling from the first round: no rate and no freeze round for the
    groups ``ids[:n]``; ``n`` < 0 (no valid state): for all of ``lo..hi``, their weights
    saved too.  Every other group is already so: it did not grow in the last filling
    (rate 0, freeze round -1).  Saved weights stay right: a group without rate loses no
    member, and ``_changed`` (run first when a state is valid) saved the others'."""
    fr = rs[5]
    if n < 0:
        g_rate[lo:hi] = 0.0
        fr[:] = -1
        rs[8][:] = weight[lo:hi]
        return
    for q in range(n):
        g = ids[q]
        g_rate[g], fr[g - lo] = 0.0, -1


@njit(cache=True)
def _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch) -> bool:
    """Fill the level from its first round, saving the state; False if blocked.  After
    a saved filling only its candidates (``_candidates``) are checked for liveness:
    every other group is still blocked by a cover link still full."""
    lo, hi = lv_bounds[lv], lv_bounds[lv + 1]
    live, count = scratch[0], scratch[1]
    r_res, r_cnt, meta = rs[0], rs[1], rs[9]
    n_cand = -1
    if meta[1] and meta[3] >= 0:
        n_cand = _candidates(lv, lo, index, rs, residual, eps)
    else:
        meta[3] = -1
    rs[4][:] = residual
    _forget_lost(rs)
    _reset(lo, hi, rs[11], n_cand, weight, g_rate, rs)
    count[:] = 0
    n_live = _live(lo, hi, rs[11], n_cand, g_paths, weight, residual, eps, scratch, rs)
    meta[1], meta[2], meta[4], meta[6] = 1, 0, n_cand, 1
    if n_live == 0:
        meta[0] = 0
        r_res[0] = residual
        return True
    kernel._clean(residual, eps)
    r_res[0], r_cnt[0], rs[3][0], rs[7][0] = residual, count, 0.0, 0
    _rounds(lv, lo, index, g_paths, weight, eps, g_rate, rs, 0, live, n_live, residual, False)
    return False


@njit(cache=True)
def refill(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch) -> bool:
    """Level ``lv``'s rates from ``residual`` (consumed: left as the level hands it on),
    restarted at the first round that can differ from the last filling's; returns
    whether the level is blocked (as ``groupfill.fill_level``).  ``scratch``: (live
    flags per group, link counts, per-link zeros, per-link False flags)."""
    lo = lv_bounds[lv]
    meta = rs[9]
    if not meta[1] or meta[0] == 0:
        return _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch)
    delta, live, moved = scratch[2], scratch[0], scratch[3]
    n_rounds = meta[0]
    rs[14][:, : n_rounds + 1] = 0
    meta[7] = 0
    r_star, n_empty = _changed(lo, g_paths, weight, rs, delta)
    r_star = _inputs(residual, rs, eps, delta, moved, r_star)
    if r_star == FLIP:
        delta[:] = 0
        moved[:] = False
        return _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch)
    _replay(rs, delta, moved, r_star)
    meta[2], meta[6] = r_star, 0
    if r_star < n_rounds:
        n_live = _relive(lo, g_rate, rs, r_star, n_rounds, live, n_empty)
        if n_live == 0 and r_star == 0:  # nothing can grow: blocked, as _full says
            return _full(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch)
        _rounds(
            lv, lo, index, g_paths, weight, eps, g_rate, rs, r_star, live, n_live, residual, True
        )
    else:
        residual[:] = rs[0][n_rounds]
    return False


@njit(cache=True)
def _relive(lo, g_rate, rs, r_star, n_rounds, live, n_empty) -> int:
    """Before a restart at ``r_star``: the groups last time froze from then on are live
    again, but for the ``n_empty`` left without members (``_changed``: no rate, no
    freeze round); how many are live."""
    fr, order, r_pos, lost = rs[5], rs[6], rs[7], rs[12]
    for q in range(r_pos[r_star], r_pos[n_rounds]):
        live[ix(order[q] - lo)] = True  # rate and freeze round: written when it freezes
    for q in range(n_empty):
        j = lost[q]
        live[j], g_rate[lo + j], fr[j] = False, 0.0, -1
    return r_pos[n_rounds] - r_pos[r_star] - n_empty


@njit(cache=True)
def refrozen(lv, lv_bounds, rounds) -> tuple:
    """The groups of level ``lv`` whose rate its last filling may have changed, as
    (whether that is all of them, else the ids of those it froze again: none when only
    its output changed)."""
    slot, st = rounds
    lo = lv_bounds[lv]
    if slot[lv] < 0 or not st[9][slot[lv], 1]:
        return True, st[6][lo:lo]
    meta, r_pos = st[9][slot[lv]], st[7][slot[lv]]
    if meta[6]:  # from the first round: its candidates, if it had any
        return meta[4] < 0, st[11][lo : lo + max(meta[4], 0)]
    return False, st[6][lo + r_pos[meta[2]] : lo + r_pos[meta[0]]]


@njit(cache=True)
def fill(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rounds, scratch) -> bool:
    """Fill level ``lv``: restartable (``refill``) if ``rounds`` (``slots``) saves it,
    else from the first round (``groupfill.fill_level``); returns whether it is
    blocked."""
    slot, st = rounds
    if slot[lv] >= 0:
        rs = _view(st, slot[lv], lv_bounds[lv], lv_bounds[lv + 1])
        return refill(lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, rs, scratch)
    return groupfill.fill_level(
        lv, lv_bounds, g_paths, weight, eps, g_rate, residual, index, scratch
    )
