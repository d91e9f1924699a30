"""Priority compression: order-preserving onto K <= 8 levels, MID-first for Hermod."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from controller.compress import compress, compress_decisions, describe_mapping
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
