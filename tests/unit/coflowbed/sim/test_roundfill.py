"""Filling a level of path groups: ``groupfill.fill_level`` (link index built once per
run) against ``kernel.fill`` (index built per filling), and ``roundfill.refill``
(restarted at the round where a changed group froze, or filled on its candidates
only) against filling from scratch, bit for bit, on random big-switch levels losing
members and handed other capacity event after event."""

from __future__ import annotations

import numpy as np

from coflowbed.sim import groupfill, kernel, roundfill

LINKS_PER_SIDE = 12


def level(rng: np.random.Generator, n: int) -> tuple:
    """One level of ``n`` groups on a big switch (uplink src, downlink dst), weights
    1..6: (lv_bounds, g_paths, weight, capacity, eps, index)."""
    src = rng.integers(0, LINKS_PER_SIDE, n)
    dst = (src + rng.integers(1, LINKS_PER_SIDE, n)) % LINKS_PER_SIDE + LINKS_PER_SIDE
    g_paths = np.stack([src, dst], axis=1).astype(np.int32)
    weight = rng.integers(1, 7, n).astype(np.int64)
    capacity = rng.uniform(1e8, 1e9, 2 * LINKS_PER_SIDE)
    lv_bounds = np.array([0, n], dtype=np.int64)
    index = groupfill.level_index(lv_bounds, g_paths, capacity.size)
    return lv_bounds, g_paths, weight, capacity, kernel.full_below(capacity), index


def scratch(n: int, links: int) -> tuple:
    """Fill scratch: live flags, link counts, per-link zeros, per-link False flags."""
    return (
        np.zeros(n, np.bool_),
        np.zeros(links, np.int64),
        np.zeros(links, np.int64),
        np.zeros(links, np.bool_),
    )


def from_scratch(lv_bounds, g_paths, weight, capacity, eps, index) -> tuple:
    """(rates, residual) of filling the level from its first round."""
    rates, residual = np.zeros(weight.size), capacity.copy()
    sc = scratch(weight.size, capacity.size)
    groupfill.fill_level(0, lv_bounds, g_paths, weight, eps, rates, residual, index, sc)
    return rates, residual


def test_fill_level_is_kernel_fill_bit_for_bit():
    """Random levels of 300 groups: same rates and same free capacity left as
    ``kernel.fill`` on the same weighted rows (identical arithmetic, other index)."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        lv_bounds, g_paths, weight, capacity, eps, index = level(rng, 300)
        rates, residual = from_scratch(lv_bounds, g_paths, weight, capacity, eps, index)
        ref_res, empty = capacity.copy(), np.zeros(0)
        idx = np.arange(weight.size)
        ref = kernel.fill(g_paths, idx, weight, ref_res, eps, empty, empty, False)
        assert np.array_equal(rates, ref) and np.array_equal(residual, ref_res)


def three_groups() -> tuple:
    """The hand-worked level: A (link 0, 2 members), B (links 0 and 1), C (link 1, 3
    members), links of 10 (link 2: padding): (refill's leading arguments: lv_bounds,
    g_paths, weight, eps, rates; index, state, scratch, capacity)."""
    g_paths = np.array([[0, 2], [0, 1], [1, 2]], dtype=np.int32)
    capacity = np.array([10.0, 10.0, np.inf])
    weight = np.array([2, 1, 3], dtype=np.int64)
    lv_bounds = np.array([0, 3], dtype=np.int64)
    index, eps = groupfill.level_index(lv_bounds, g_paths, 3), kernel.full_below(capacity)
    args = (lv_bounds, g_paths, weight, eps, np.zeros(3))
    return args, index, roundfill.state(0, 3, 3), scratch(3, 3), capacity


def test_restart_from_a_late_round_by_hand():
    """Two links of 10: A (link 0, 2 members), B (links 0 and 1), C (link 1, 3
    members).  Round 0: shares 10/3 on link 0 and 10/4 = 2.5 on link 1, which fills: B
    and C at 2.5, link 0 left 10 - 3 x 2.5 = 2.5; round 1: A alone, 2.5 + 2.5/2 = 3.75.
    A loses a member (it froze in round 1): while that is not noted (``note_lost``) the
    filling does not see it; noted, round 0 is kept, link 0 replayed with 2 members
    growing (10 - 2 x 2.5 = 5), round 1: A at 2.5 + 5 = 7.5; links full."""
    args, index, rs, sc, capacity = three_groups()
    weight, rates = args[2], args[4]
    residual = capacity.copy()
    roundfill.refill(0, *args, residual, index, rs, sc)
    assert rates.tolist() == [3.75, 2.5, 2.5] and rs[9][0] == 2
    weight[0] = 1
    residual = capacity.copy()
    roundfill.refill(0, *args, residual, index, rs, sc)
    assert rates.tolist() == [3.75, 2.5, 2.5]  # not noted: not seen
    roundfill.note_lost(rs[12], rs[13], rs[9], 0)
    residual = capacity.copy()
    roundfill.refill(0, *args, residual, index, rs, sc)
    assert rates.tolist() == [7.5, 2.5, 2.5] and residual[:2].tolist() == [0.0, 0.0]


def test_a_restart_takes_over_a_round_that_freezes_the_same_groups_by_hand():
    """Three links of 10: A (link 0, 5 members), B (link 1, 4), C (link 2, 2); link 3
    is padding.  Round 0: link 0 fills at 10/5 = 2 (A); round 1: link 1 at
    2 + (10 - 4 x 2)/4 = 2.5 (B); round 2: link 2 at 2.5 + (10 - 2 x 2.5)/2 = 5 (C).
    B loses a member: the restart runs round 1 again (B at 2 + 4/3) and round 2 fills
    link 2 again with C alone, as last time: taken over (C at 5, not visited through
    the link's groups), the rates those of a filling from scratch."""
    g_paths = np.array([[0, 3], [1, 3], [2, 3]], dtype=np.int32)
    capacity = np.array([10.0, 10.0, 10.0, np.inf])
    weight = np.array([5, 4, 2], dtype=np.int64)
    lv_bounds = np.array([0, 3], dtype=np.int64)
    index, eps = groupfill.level_index(lv_bounds, g_paths, 4), kernel.full_below(capacity)
    rates, rs, sc = np.zeros(3), roundfill.state(0, 3, 4), scratch(3, 4)
    roundfill.refill(0, lv_bounds, g_paths, weight, eps, rates, capacity.copy(), index, rs, sc)
    assert rates.tolist() == [2.0, 2.5, 5.0] and rs[9][0] == 3 and rs[9][7] == 0
    weight[1] -= 1
    roundfill.note_lost(rs[12], rs[13], rs[9], 1)
    roundfill.refill(0, lv_bounds, g_paths, weight, eps, rates, capacity.copy(), index, rs, sc)
    ref_rates, _ = from_scratch(lv_bounds, g_paths, weight, capacity, eps, index)
    assert rs[9][2] == 1 and rs[9][7] == 1  # restarted at round 1, round 2 taken over
    assert np.array_equal(rates, ref_rates) and rates[1] == 2.0 + 4.0 / 3


def test_refill_equals_filling_from_scratch_as_members_leave():
    """Random levels of 400 groups; 40 events, each taking 1-3 members off random
    growing groups (as flow completions do, each noted: ``note_lost``): after each, the
    restarted filling gives exactly the rates and free capacity of filling from
    scratch, and some restarts take rounds over (``meta[7]``)."""
    rng = np.random.default_rng(11)
    taken = 0
    for _ in range(3):
        lv_bounds, g_paths, weight, capacity, eps, index = level(rng, 400)
        rs, sc, rates = roundfill.state(0, weight.size, capacity.size), None, None
        sc, rates = scratch(weight.size, capacity.size), np.zeros(weight.size)
        for _event in range(40):
            residual = capacity.copy()
            roundfill.refill(0, lv_bounds, g_paths, weight, eps, rates, residual, index, rs, sc)
            ref_rates, ref_res = from_scratch(lv_bounds, g_paths, weight, capacity, eps, index)
            assert np.array_equal(rates, ref_rates) and np.array_equal(residual, ref_res)
            taken += rs[9][7]
            alive = np.flatnonzero(weight > 0)
            for g in rng.choice(alive, size=min(rng.integers(1, 4), alive.size), replace=False):
                weight[g] -= 1
                roundfill.note_lost(rs[12], rs[13], rs[9], g)
    assert taken > 0


def test_restart_when_the_free_capacity_handed_changes_by_hand():
    """As above (A 2 members on link 0, B on links 0 and 1, C 3 members on link 1, both
    links 10): B and C freeze at 2.5 in round 0, A at 3.75 in round 1.  Link 0 is then
    handed 12 instead of 10: its share in round 0 (12/3 = 4) stays above the step 2.5
    and it does not fill, so round 0 is kept and link 0 replayed (12 - 3 x 2.5 = 4.5);
    round 1 runs again: A at 2.5 + 4.5/2 = 4.75.  Handed 6 instead, link 0's share
    (6/3 = 2) is below the step: run again from round 0 (restarted: no link went from
    full to free or back), A, B at 2, C at 8/3."""
    args, index, rs, sc, capacity = three_groups()
    rates = args[4]
    roundfill.refill(0, *args, capacity.copy(), index, rs, sc)
    assert rates.tolist() == [3.75, 2.5, 2.5]
    residual = np.array([12.0, 10.0, np.inf])
    roundfill.refill(0, *args, residual, index, rs, sc)
    assert rates.tolist() == [4.75, 2.5, 2.5] and residual[:2].tolist() == [0.0, 0.0]
    assert rs[9][2] == 1 and rs[0][1][0] == 4.5  # round 1 ran from the replayed link 0
    residual = np.array([6.0, 10.0, np.inf])
    roundfill.refill(0, *args, residual, index, rs, sc)
    assert rates[:2].tolist() == [2.0, 2.0] and rates[2] == (10.0 - 2.0) / 3
    assert rs[9][2] == 0 and rs[9][6] == 0


def test_refill_equals_filling_from_scratch_as_the_free_capacity_handed_changes():
    """Random levels of 400 groups; 60 events, each changing the free capacity handed on
    1-6 random links (up or down by up to 30 %, now and then to full or back to free,
    as the levels above re-sharing do) and, every other event, taking members off:
    after each, the restarted filling gives exactly the rates and free capacity of
    filling from scratch; some events restart mid-way, some change only the output."""
    rng = np.random.default_rng(5)
    first = []  # first round each filling ran, its rounds, and its candidates
    taken = 0  # groups that restarts took over from last time's rounds
    for _ in range(3):
        lv_bounds, g_paths, weight, capacity, eps, index = level(rng, 400)
        rounds = roundfill.slots(lv_bounds, capacity.size)
        sc, rates = scratch(weight.size, capacity.size), np.zeros(weight.size)
        handed = capacity.copy()
        for event in range(60):
            residual, before = handed.copy(), rates.copy()
            roundfill.fill(0, lv_bounds, g_paths, weight, eps, rates, residual, index, rounds, sc)
            ref_rates, ref_res = from_scratch(lv_bounds, g_paths, weight, handed, eps, index)
            assert np.array_equal(rates, ref_rates) and np.array_equal(residual, ref_res)
            every, ids = roundfill.refrozen(0, lv_bounds, rounds)
            moved = np.flatnonzero((rates != before) & (weight > 0))
            assert every or np.isin(moved, ids).all()  # no rate changes unseen
            meta = rounds[1][9][0]
            if meta[6] == 0:  # a restart names the groups it froze again, never all
                assert not every and ids.size == rounds[1][7][0][meta[0]] - rounds[1][7][0][meta[2]]
            first.append((meta[2], meta[0], meta[4], meta[6]))
            taken += meta[7]
            for k in rng.choice(capacity.size, size=rng.integers(1, 7), replace=False):
                u = rng.random()
                handed[k] = 0.0 if u < 0.1 else capacity[k] if u < 0.2 else handed[k]
                handed[k] *= rng.uniform(0.7, 1.3) if u >= 0.2 else 1.0
            if event % 2:
                alive = np.flatnonzero(weight > 0)
                for g in rng.choice(alive, size=min(2, alive.size), replace=False):
                    weight[g] -= 1
                    roundfill.note_lost(*roundfill.lost_of(rounds, 0, 0), g)
    assert any(0 < r < n for r, n, _, _ in first) and any(r == n for r, n, _, _ in first)
    assert any(r == 0 and f and 0 <= c < 300 for r, _, c, f in first)  # on candidates only
    assert any(r == 0 and not f for r, _, _, f in first)  # restarted from round 0
    assert taken > 0


def test_blocked_groups_stay_out_of_a_full_filling_while_their_cover_link_is_full():
    """The level above (A on link 0 with 2 members, B on links 0 and 1, C on link 1
    with 3), handed link 1 full: B and C cannot grow, A takes link 0 alone (10/2 = 5)
    and link 1 is noted as their cover.  Link 0 handed 8: its share 8/2 = 4 is below
    the step 5, so round 0 can differ, but no link went from full to free or back: a
    restart from round 0 (A at 4), not a filling from the first round.  Link 0 full
    too: filled from the first round on A alone, the one group that grew (blocked now,
    link 0 noted in the cover).  Both links free again (10): A, B and C, reached from
    the cover, are live again: 3.75, 2.5, 2.5 as with no cover."""
    args, index, rs, sc, _capacity = three_groups()
    rates, meta = args[4], rs[9]
    roundfill.refill(0, *args, np.array([10.0, 0.0, np.inf]), index, rs, sc)
    assert rates.tolist() == [5.0, 0.0, 0.0] and meta[3] == 1 and rs[10][0] == 1
    roundfill.refill(0, *args, np.array([8.0, 0.0, np.inf]), index, rs, sc)
    assert rates.tolist() == [4.0, 0.0, 0.0] and meta[2] == 0 and meta[6] == 0
    roundfill.refill(0, *args, np.array([0.0, 0.0, np.inf]), index, rs, sc)
    assert rates.tolist() == [0.0, 0.0, 0.0] and meta[6] == 1 and meta[4] == 1
    assert meta[3] == 2 and rs[10][:2].tolist() == [1, 0]
    roundfill.refill(0, *args, np.array([10.0, 10.0, np.inf]), index, rs, sc)
    assert rates.tolist() == [3.75, 2.5, 2.5] and meta[4] == 3 and meta[3] == 0


def test_a_restart_with_no_group_left_to_grow_is_blocked():
    """A, B and C all grow (3.75, 2.5, 2.5); then every member leaves (noted) and the
    same capacity is handed on: a restart from round 0 would have nothing to fill, so it
    is a filling from the first round, which reports the level blocked (True) and hands
    the capacity on as it came."""
    args, index, rs, sc, capacity = three_groups()
    weight, rates = args[2], args[4]
    assert not roundfill.refill(0, *args, capacity.copy(), index, rs, sc)
    for g in range(3):
        weight[g] = 0
        roundfill.note_lost(rs[12], rs[13], rs[9], g)
    residual = capacity.copy()
    assert roundfill.refill(0, *args, residual, index, rs, sc)
    assert rs[9][6] == 1 and residual.tolist() == capacity.tolist() and not rates.any()
