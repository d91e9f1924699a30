"""Priority compression: order-preserving onto K <= 8 levels, MID-first for Hermod."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from controller.compress import compress, compress_decisions, describe_mapping, keep_levels
from controller.policies import Decision

SCHEMES = ["top", "quantile", "lexicographic", "mid-first"]


def _random_ranks(rng: random.Random, n: int) -> dict[str, tuple]:
    """``n`` random rank tuples (length 1..4, small fields so that ties occur)."""
    width = rng.randint(1, 4)
    return {
        f"c{i}": tuple(rng.randint(0, rng.choice([1, 3, 10])) for _ in range(width))
        for i in range(n)
    }


@pytest.mark.parametrize("how", SCHEMES)
def test_never_inverts_and_uses_levels_without_gaps(how):
    rng = random.Random(SCHEMES.index(how))
    for _ in range(300):
        ranks = _random_ranks(rng, rng.randint(1, 40))
        k = rng.randint(1, 8)
        levels = compress(ranks, k, how)
        assert set(levels) == set(ranks)
        for a, b in itertools.combinations(ranks, 2):
            if ranks[a] < ranks[b]:
                assert levels[a] <= levels[b], (ranks[a], ranks[b], levels[a], levels[b])
            elif ranks[a] == ranks[b]:
                assert levels[a] == levels[b]
            else:
                assert levels[a] >= levels[b]
        distinct = len(set(ranks.values()))
        assert set(levels.values()) == set(range(min(k, distinct)))


@pytest.mark.parametrize("how", SCHEMES)
def test_at_most_k_distinct_ranks_get_one_level_each_in_order(how):
    ranks = {"x": (3, 1), "y": (0, 9), "z": (3, 0), "w": (0, 9)}
    assert compress(ranks, 3, how) == {"y": 0, "w": 0, "z": 1, "x": 2}


def test_top_gives_the_most_urgent_their_own_levels():
    ranks = {f"c{i}": (i,) for i in range(20)}
    levels = compress(ranks, 4, "top")
    assert [levels[f"c{i}"] for i in range(5)] == [0, 1, 2, 3, 3]
    assert {levels[f"c{i}"] for i in range(3, 20)} == {3}


def test_quantile_cuts_near_equal_runs():
    levels = compress({f"c{i}": (i,) for i in range(16)}, 4, "quantile")
    assert [sum(1 for v in levels.values() if v == q) for q in range(4)] == [4, 4, 4, 4]


def test_mid_first_separates_mid_buckets_then_ctype_then_lid():
    # Hermod ranks (MID, CType, LID, arrival): MIDs 0..2, several coflows each.
    ranks = {
        "m0_ep_l1": (0, 0, 1, 0),
        "m0_ep_l4": (0, 0, 4, 1),
        "m0_dp_l0": (0, 1, 0, 2),
        "m1_pp_l2": (1, 0, 2, 3),
        "m1_dp_l1": (1, 1, 1, 4),
        "m2_ep_l0": (2, 0, 0, 5),
    }
    assert compress(ranks, 3, "mid-first") == {
        "m0_ep_l1": 0,
        "m0_ep_l4": 0,
        "m0_dp_l0": 0,
        "m1_pp_l2": 1,
        "m1_dp_l1": 1,
        "m2_ep_l0": 2,
    }
    # Two spare levels go to MID 0 first: its CType split, then its LID split.
    assert compress(ranks, 5, "mid-first") == {
        "m0_ep_l1": 0,
        "m0_ep_l4": 1,
        "m0_dp_l0": 2,
        "m1_pp_l2": 3,
        "m1_dp_l1": 3,
        "m2_ep_l0": 4,
    }
    # "top" would instead merge MID 1 and MID 2 at K=5.
    top = compress(ranks, 5, "top")
    assert top["m1_dp_l1"] == top["m2_ep_l0"]


def test_lexicographic_keeps_first_fields_apart_while_they_fit():
    rng = random.Random(2)
    for _ in range(200):
        k = rng.randint(1, 8)
        ranks = {f"c{i}": (rng.randint(0, k - 1), rng.random(), i) for i in range(30)}
        levels = compress(ranks, k, "lexicographic")
        for a, b in itertools.combinations(ranks, 2):
            if ranks[a][0] != ranks[b][0]:
                assert levels[a] != levels[b]


def test_scalar_and_numpy_ranks_and_describe_mapping_is_json():
    ranks = {"a": np.float64(2.5), "b": (np.int64(1), 0.5), "c": (1, 0.5), "d": 7}
    levels = compress(ranks, 2)
    assert levels == {"b": 0, "c": 0, "a": 1, "d": 1}
    desc = json.loads(json.dumps(describe_mapping(ranks, 2)))
    assert desc["scheme"] == "top" and desc["levels"] == 2
    assert desc["table"] == [
        {"rank": [1, 0.5], "level": 0, "coflows": ["b", "c"]},
        {"rank": [2.5], "level": 1, "coflows": ["a"]},
        {"rank": [7], "level": 1, "coflows": ["d"]},
    ]
    assert describe_mapping(ranks, 2, "mid-first")["scheme"] == "lexicographic"


def test_compress_decisions_uses_the_ranks():
    dec = {"a": Decision(rank=(1,)), "b": Decision(rank=(0,), flow_rates_bps={"f": 1.0})}
    assert compress_decisions(dec, 8) == {"a": 1, "b": 0}


@pytest.mark.parametrize("levels", [0, 9, -1, 2.0, True, "8"])
def test_bad_level_counts_are_rejected(levels):
    with pytest.raises(ValueError, match=r"compress: levels must be an integer in 1\.\.8"):
        compress({"a": (0,)}, levels)


def test_bad_scheme_and_ranks_are_rejected_with_one_line():
    with pytest.raises(ValueError, match="unknown scheme 'best'; valid: top, quantile"):
        compress({"a": (0,)}, 4, "best")
    with pytest.raises(ValueError, match="not mutually comparable"):
        compress({"a": (0,), "b": ("x",)}, 4)
    with pytest.raises(ValueError, match="coflow 'b' contains NaN"):
        compress({"a": (0,), "b": (float("nan"),)}, 4)


def test_empty_input_gives_empty_mapping():
    assert compress({}, 8) == {}


def _groups(levels: dict[str, int]) -> list[set[str]]:
    """The coflows of each level, most urgent first (what strict priority sees)."""
    return [{c for c, lv in levels.items() if lv == v} for v in sorted(set(levels.values()))]


def test_keep_levels_keeps_groups_and_order_and_promotes_no_more_than_needed():
    """Random rank sets, each a random change of the last (arrivals, completions,
    re-ranks): the relabelled levels have the compressed levels' groups in their order,
    stay within K, and a coflow moves up only when the levels below its group ran out
    (its group's most urgent allowed level is then below what it had)."""
    rng = random.Random(7)
    for k in (1, 2, 3, 8):
        held: dict[str, int] = {}
        for step in range(300):
            ranks = {c: (rng.randint(0, 12),) for c in held if rng.random() < 0.85}
            ranks.update({f"n{step}.{i}": (rng.randint(0, 12),) for i in range(rng.randint(0, 3))})
            levels = compress(ranks, k)
            kept = keep_levels(levels, held, k)
            assert _groups(kept) == _groups(levels)
            assert all(0 <= lv < k for lv in kept.values())
            order = sorted(set(levels.values()))
            for c, lv in kept.items():
                if c in held and lv < held[c]:
                    below = len(order) - 1 - order.index(levels[c])
                    assert lv == k - 1 - below, (c, held[c], lv)  # pushed up by the bottom
            held = kept


def test_keep_levels_leaves_a_fifo_queue_where_it_is_when_its_head_leaves():
    """FIFO over 3 coflows at levels 0, 1, 2: the head completes, so compression alone
    would move both others up one level (new packets overtaking their own queued ones);
    kept, they stay at 1 and 2, and a new last one goes to 3.  With K = 4 full, the next
    arrival has nowhere below: then everyone moves up one level, once."""
    held = {"b": 1, "c": 2}
    assert keep_levels({"b": 0, "c": 1}, held, 8) == held
    held = keep_levels({"b": 0, "c": 1, "d": 2}, held, 4)
    assert held == {"b": 1, "c": 2, "d": 3}
    assert keep_levels({"b": 0, "c": 1, "d": 2, "e": 3}, held, 4) == {
        "b": 0,
        "c": 1,
        "d": 2,
        "e": 3,
    }


def test_keep_levels_with_room_packs_only_when_the_lowest_level_is_used():
    """After a completion (``room``): with the lowest level in use the next arrival
    would have to move everyone up on its own release path, so everyone moves up now,
    as far as they can; with a level free below, nobody moves."""
    assert keep_levels({"c": 0, "d": 1}, {"c": 2, "d": 3}, 4, room=True) == {"c": 0, "d": 1}
    assert keep_levels({"c": 0, "d": 1}, {"c": 1, "d": 2}, 4, room=True) == {"c": 1, "d": 2}
    assert keep_levels({"c": 0, "d": 1}, {"c": 2, "d": 3}, 4) == {"c": 2, "d": 3}


def test_keep_levels_moves_others_down_for_a_more_urgent_newcomer():
    """A newcomer ranked first takes level 0; those it overtakes move down (their old
    packets, queued at the more urgent level, still leave first)."""
    assert keep_levels({"x": 0, "b": 1, "c": 2}, {"b": 0, "c": 1}, 8) == {"x": 0, "b": 1, "c": 2}
    # a group whose members held different levels sits at the lowest of them
    assert keep_levels({"b": 0, "c": 0}, {"b": 2, "c": 5}, 8) == {"b": 5, "c": 5}
