"""Tag ids and the DSCP each goes out as on the wire."""

from __future__ import annotations

import pytest

from workload import marking


@pytest.mark.parametrize(
    "tag, dscp", [(0, 0), (1, 1), (55, 55), (56, 1), (58, 3), (110, 55), (111, 1), (3520, 55)]
)
def test_tag_dscp_wraps_every_55_tags(tag, dscp):
    """DSCP = 1 + (tag - 1) % 55: 56 -> 1, 110 = 2 * 55 -> 55, 3520 = 64 * 55 -> 55;
    untagged 0 stays 0."""
    assert marking.tag_dscp(tag) == dscp


@pytest.mark.parametrize("bad", [-1, 3521, True, 2.0])
def test_tag_ids_outside_1_to_3520_are_refused(bad):
    """Negative, past 64 x 55, bool and float ids name the range."""
    with pytest.raises(ValueError, match="tag must be an int in 1..3520"):
        marking.tag_dscp(bad)


def test_a_lower_tag_max_is_enforced():
    """BMv2's bound: 55 passes, 56 does not."""
    assert marking.check_tag(55, marking.TAG_MAX) == 55
    with pytest.raises(ValueError, match="1..55, got 56"):
        marking.check_tag(56, marking.TAG_MAX)
