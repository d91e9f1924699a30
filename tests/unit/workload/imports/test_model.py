"""Rank groups of an imported layout (TP fastest, then DP, then PP; EP inside DP)."""

from __future__ import annotations

import pytest

from workload.imports.model import Layout, groups

LAY = Layout(tp=2, dp=4, pp=2, ep=2)  # 16 ranks; stage 1 holds ranks 8..15


def test_tp_groups_are_consecutive_ranks():
    # rank = t + tp·(d + dp·s): stage 1 starts at 2·4·1 = 8
    assert groups(LAY, "tp", 1) == [[8, 9], [10, 11], [12, 13], [14, 15]]


def test_dp_groups_stride_tp():
    assert groups(LAY, "dp", 0) == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_ep_groups_are_ep_consecutive_dp_ranks():
    # DP indices {0,1} and {2,3} for each TP index t: ranks t + 2d
    assert groups(LAY, "ep", 0) == [[0, 2], [4, 6], [1, 3], [5, 7]]


def test_expert_dp_groups_stride_ep():
    # DP indices {0,2} and {1,3}: ranks t + 2d
    assert groups(LAY, "dp_ep", 0) == [[0, 4], [2, 6], [1, 5], [3, 7]]


def test_world_and_unknown():
    assert groups(LAY, "world", 0) == [list(range(16))]
    with pytest.raises(ValueError, match="unknown group kind"):
        groups(LAY, "pp", 0)
