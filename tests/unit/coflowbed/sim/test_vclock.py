"""Per-group virtual time (``coflowbed.sim.vclock``): a group's counter is a line rebased
only when its rate changes, its instants follow from the line, and a coflow's bytes
sent are a line summed over its groups (byte thresholds).  Whole runs against the
per-flow loop are in ``test_sim_groupkernel.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from coflowbed.sim import groupkernel, vclock

TOL = 1e-9  # the engine's FINISH_TOL


def one_path(rates: list[float], by_coflow: bool = False) -> tuple:
    """Groups at level 0 (one path, or with ``by_coflow`` one path per flow): flow i
    has ``(i + 1) * 1000`` bytes left and rate ``rates[i]`` bit/s; coflow i // 2."""
    n = len(rates)
    pid = np.arange(n) if by_coflow else np.zeros(n, dtype=np.int64)
    paths = np.zeros((n, 2), dtype=np.int32)
    cof = (np.arange(n) // 2).astype(np.int32)
    remaining = (np.arange(n) + 1) * 1000.0
    args = (np.arange(n), np.zeros(n, dtype=np.int64), pid, cof, paths, remaining)
    return groupkernel.build(*args, np.array(rates), np.full(n, math.nan), by_coflow)


def test_instants_from_the_line():
    """One group of two flows (1000 and 2000 B) at 8000 bit/s = 1000 B/s each, from
    t = 10 s: the first is done at 10 + 1000 / 1000 = 11 s, due (within 1e-6 B, its
    tolerance, as 1e-9 x 1000 B is less) 1e-6 / 1000 s earlier."""
    grp = one_path([8000.0, 8000.0])
    size = np.array([1000.0, 2000.0])
    clk = vclock.start(grp, np.arange(2), size, TOL, 10.0)
    assert clk[3][0] == pytest.approx(11.0, rel=1e-15)
    assert clk[3][0] - clk[4][0] == pytest.approx(1e-6 / 1000, rel=1e-6)
    assert vclock.earliest(clk[3]) == clk[3][0]


def test_rebase_keeps_the_bytes_served_and_moves_the_instants():
    """At 10.5 s the rate doubles to 2000 B/s: 500 B were served on the old line, so the
    first flow's last 500 B take 0.25 s more (done at 10.75 s); a group whose rate did
    not change is not rebased (its ``t0`` stays)."""
    grp = one_path([8000.0, 8000.0])
    clk = vclock.start(grp, np.arange(2), np.array([1000.0, 2000.0]), TOL, 10.0)
    cclk = vclock.coflow_clock(grp[7], 1, grp[5], grp[6], np.zeros(1), np.zeros(0), 10.0)
    old, changed = grp[5].copy(), np.empty(1, dtype=np.int64)
    args = (0, grp[5].size, 10.5, changed, 0, False)
    assert vclock.rebase(grp, clk, cclk, old, *args) == 0
    assert clk[0][0] == 10.0  # unchanged rate: the same line
    grp[5][0] = 16000.0
    assert vclock.rebase(grp, clk, cclk, old, *args) == 1 and changed[0] == 0
    assert old[0] == 16000.0  # the line's rate now
    assert grp[10][0] == pytest.approx(500.0, rel=1e-15)
    assert clk[0][0] == 10.5
    assert clk[3][0] == pytest.approx(10.75, rel=1e-15)
    vclock.settle(grp, clk, 10.6)
    assert grp[10][0] == pytest.approx(500.0 + 0.1 * 2000.0, rel=1e-12)


def test_no_rate_never_ends():
    """A group without rate has no instants (inf): it is never next nor due."""
    grp = one_path([0.0, 0.0])
    clk = vclock.start(grp, np.arange(2), np.array([1000.0, 2000.0]), TOL, 0.0)
    assert clk[3][0] == math.inf and clk[4][0] == math.inf
    assert vclock.earliest(clk[3]) == math.inf


def test_coflow_line_and_its_next_threshold():
    """Coflow 0 (two groups with byte thresholds: 1000 B and 2000 B left, 8000 and
    16000 bit/s) sends 1000 + 2000 = 3000 B/s from 0 B: it reaches the 1500 B threshold
    at 0.5 s; at 0.2 s the first group stops: 600 B were sent, the rest at 2000 B/s
    reaches 1500 B at 0.2 + 900 / 2000 = 0.65 s."""
    grp = one_path([8000.0, 16000.0], by_coflow=True)
    g_rate, weight = grp[5], grp[6]
    sent, thresholds = np.zeros(1), np.array([1500.0, 1e9])
    cclk = vclock.coflow_clock(grp[7], 1, g_rate, weight, sent, thresholds, 0.0)
    assert cclk[0][0] == pytest.approx(3000.0, rel=1e-15)
    assert vclock.next_threshold(cclk, 0.0) == pytest.approx(0.5, rel=1e-15)
    clk = vclock.start(grp, np.arange(2), np.array([1000.0, 2000.0]), TOL, 0.0)
    old, changed = g_rate.copy(), np.empty(2, dtype=np.int64)
    g_rate[0] = 0.0
    ids = np.array([0, 1])
    assert vclock.rebase_some(grp, clk, cclk, old, ids, 0, 0, 0.2, changed, 0, True) == 1
    vclock.recount_touched(cclk, sent, thresholds, 0.2)
    assert sent[0] == pytest.approx(600.0, rel=1e-15)
    assert vclock.next_threshold(cclk, 0.2) == pytest.approx(0.45, rel=1e-12)
    vclock.settle_coflows(cclk, sent, 0.3)
    assert sent[0] == pytest.approx(800.0, rel=1e-12)


def test_rethreshold_takes_again_only_the_coflows_moved_or_at_a_threshold():
    """Coflows 0 and 1 (two groups each, 1000 + 2000 B/s: 3000 B/s) at thresholds 1500
    B and 6000 B, both from 0 B at 0 s: both reach 1500 B at 0.5 s.  At 0.5 s coflow 0
    was put exactly at 1500 B (its ``sent`` moved), coflow 1's stays: both get their
    next instant, the 6000 B threshold at 0.5 + 4500 / 3000 = 2.0 s (coflow 1's from
    its own bytes sent).  A coflow neither moved nor at its threshold keeps its
    instant, as ``recount_touched`` left it."""
    grp = one_path([8000.0, 16000.0, 8000.0, 16000.0], by_coflow=True)
    sent, thresholds = np.zeros(2), np.array([1500.0, 6000.0])
    cclk = vclock.coflow_clock(grp[7], 2, grp[5], grp[6], sent, thresholds, 0.0)
    assert cclk[2].tolist() == pytest.approx([0.5, 0.5], rel=1e-15)
    vclock.settle_coflows(cclk, sent, 0.5)
    before = sent.copy()
    sent[0] = 1500.0
    vclock.rethreshold(cclk, sent, before, thresholds, 0.5)
    assert cclk[2][0] == pytest.approx(2.0, rel=1e-12)
    assert cclk[2][1] == pytest.approx(0.5 + (6000.0 - sent[1]) / 3000.0, rel=1e-12)
    cclk[2][1] = 1.7  # neither moved nor due: left alone
    vclock.rethreshold(cclk, sent, sent.copy(), thresholds, 0.6)
    assert cclk[2][1] == 1.7


def test_coflow_clock_sums_each_coflows_groups_in_runs_or_apart():
    """Groups of coflows 2, 2, 0, 2, 1 (rates 8, 16, 80, 24, 800 bit/s, weights 1, 1,
    1, 2, 0): coflow 2 sends (8 + 16 + 2 * 24) / 8 = 9 B/s, coflow 0 10 B/s, coflow 1
    none (no unfinished member) but is of the run; coflow 3 is not."""
    g_cof = np.array([2, 2, 0, 2, 1])
    g_rate = np.array([8.0, 16.0, 80.0, 24.0, 800.0])
    weight = np.array([1, 1, 1, 2, 0])
    cclk = vclock.coflow_clock(g_cof, 4, g_rate, weight, np.zeros(4), np.array([1e9]), 0.0)
    assert cclk[0].tolist() == [10.0, 0.0, 9.0, 0.0]
    assert cclk[3].tolist() == [0, 1, 2]


def test_level_clock_takes_only_stale_levels_again():
    """Two levels of one group each: instants 11 s (level 0) and 12 s (level 1).  Both
    are stale at first; refreshed, each level holds its own; a level not marked stale
    keeps its old value even when its group's instants change (the callers mark it)."""
    t_end = np.array([11.0, 12.0])
    clk = (np.zeros(2), np.zeros(2), np.zeros(2), t_end, t_end - 0.5)
    lv_bounds = np.array([0, 1, 2])
    lclk = vclock.level_clock(lv_bounds)
    vclock.refresh(lclk, lv_bounds, clk)
    assert lclk[0].tolist() == [11.0, 12.0] and lclk[1].tolist() == [10.5, 11.5]
    assert not lclk[2].any()
    t_end[:] = [13.0, 9.0]
    lclk[2][1] = True
    vclock.refresh(lclk, lv_bounds, clk)
    assert lclk[0].tolist() == [11.0, 9.0] and vclock.earliest(lclk[0]) == 9.0


@pytest.mark.parametrize("n", [0, 3, 4, 9])
def test_smallest_is_the_minimum_of_each_array(n: int):
    """``smallest`` over ``n`` values (on its four running minima and the tail), in a
    window of a longer array, is numpy's minimum of each, inf for none; a NaN never
    counts as smallest."""
    rng = np.random.default_rng(n)
    t_end, t_due = rng.random(n + 4), rng.random(n + 4)
    t_end[2] = math.nan
    end, due = vclock.smallest(t_end, t_due, 2, 2 + n)
    window = t_end[2 : 2 + n]
    assert end == (np.nanmin(window) if n > 1 else math.inf)
    assert due == (t_due[2 : 2 + n].min() if n else math.inf)


def _level_of(t_end: np.ndarray) -> tuple:
    """A clock of one level whose groups have these ``t_end`` (``t_due`` 0.5 s earlier)."""
    n = t_end.size
    return (np.zeros(n), np.zeros(n), np.zeros(n), t_end, t_end - 0.5), np.array([0, n])


def test_near_list_answers_as_a_pass_over_every_group():
    """A level of 2,000 groups (inf: no rate among them) whose instants change in random
    batches, each batch put on the near list (``near_add``): after every refresh the
    level's smallest instants, and the groups due at its next completion or at any
    instant, are numpy's over all groups, by increasing id; the list stays far shorter
    than the level between full passes, so those are taken from it."""
    rng = np.random.default_rng(7)
    t_end = rng.uniform(10.0, 20.0, 2000)
    t_end[rng.choice(2000, 100, replace=False)] = math.inf
    clk, lv_bounds = _level_of(t_end)
    lclk = vclock.level_clock(lv_bounds)
    short = 0
    for step in range(60):
        vclock.refresh(lclk, lv_bounds, clk)
        assert lclk[0][0] == t_end.min() and lclk[1][0] == clk[4].min()
        for now in (lclk[0][0], rng.uniform(10.0, 20.0)):
            ids = vclock.due(lclk, 0, 0, 2000, clk[4], now)
            assert ids.tolist() == np.nonzero(clk[4] <= now)[0].tolist()
        short += lclk[4][0] < 1000
        ids = rng.choice(2000, 50, replace=False)
        t_end[ids] = rng.uniform(10.0 + step / 10, 20.0, 50)
        clk[4][ids] = t_end[ids] - 0.5
        vclock.near_add(lclk, 0, 0, ids, clk[4])
        lclk[2][0] = True
    assert short > 50


def test_near_list_bound_passes_ties():
    """300 groups ending at the same instant (more than ``NEAR``): the bound goes above
    them (the next instant, inf if none), so every one is due at that instant."""
    t_end = np.full(300, 5.0)
    t_end[:10] = 7.0
    clk, lv_bounds = _level_of(t_end)
    lclk = vclock.level_clock(lv_bounds)
    vclock.refresh(lclk, lv_bounds, clk)
    assert lclk[3][0] == 7.0 and lclk[0][0] == 5.0
    assert vclock.due(lclk, 0, 0, 300, clk[4], 5.0).tolist() == list(range(10, 300))


def test_groups_due_past_the_bound_send_the_level_to_a_full_pass():
    """Asked for the groups due at an instant past the level's bound, ``due`` takes them
    from all groups; their new instants are not noted (as ``finish_due`` does), and
    the next refresh still finds them: the level is taken in full again."""
    t_end = np.linspace(10.0, 20.0, 1000)
    clk, lv_bounds = _level_of(t_end)
    lclk = vclock.level_clock(lv_bounds)
    vclock.refresh(lclk, lv_bounds, clk)
    now = lclk[3][0] + 1.0
    ids = vclock.due(lclk, 0, 0, 1000, clk[4], now)
    assert ids.tolist() == np.nonzero(clk[4] <= now)[0].tolist()
    t_end[ids[-1]], clk[4][ids[-1]] = 1.0, 0.5
    lclk[2][0] = True
    vclock.refresh(lclk, lv_bounds, clk)
    assert lclk[0][0] == 1.0 and lclk[1][0] == 0.5


def test_a_big_levels_bound_from_a_sample_keeps_a_short_list_and_exact_answers():
    """A level of 20,000 groups (more than ``SAMPLE * NEAR``): its bound comes from every
    stride-th group, so the near list holds about ``NEAR`` groups (not one, not the
    level), and the groups due at instants below and past the bound are numpy's."""
    rng = np.random.default_rng(3)
    t_end = rng.uniform(10.0, 20.0, 20_000)
    clk, lv_bounds = _level_of(t_end)
    clk[4][:] = t_end - 1e-4  # due just before the end: the list is about the bound's rank
    lclk = vclock.level_clock(lv_bounds)
    vclock.refresh(lclk, lv_bounds, clk)
    assert vclock.NEAR / 2 < lclk[4][0] < 2 * vclock.NEAR
    assert lclk[0][0] == t_end.min() < lclk[3][0]
    for now in (lclk[0][0], lclk[3][0] - 1e-9, lclk[3][0] + 0.5):
        ids = vclock.due(lclk, 0, 0, 20_000, clk[4], now)
        assert ids.tolist() == np.nonzero(clk[4] <= now)[0].tolist()
