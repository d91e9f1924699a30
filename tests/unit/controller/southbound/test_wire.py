"""check_wire: what a switch driver can tell apart on the wire, checked before a write."""

from __future__ import annotations

import pytest

from controller.coflow_table import TagEntry
from controller.southbound.wire import check_wire
from tests.fakes import PLAN, FakeDriver
from workload.marking import TAG_MAX


def test_tags_sharing_a_dscp_on_different_senders_pass():
    """Tags 3 and 58 both go out as DSCP 3, from h11 and from h12."""
    a = TagEntry(3, 0, senders=frozenset({"h11"}))
    b = TagEntry(58, 1, senders=frozenset({"h12"}))
    check_wire({3: a, 58: b}, [b], PLAN, FakeDriver())


def test_a_remap_moves_the_clash():
    """Tag 58 remapped to DSCP 31 on h11 no longer meets tag 3 there, but meets 31."""
    a, c = TagEntry(3, 0), TagEntry(31, 0, senders=frozenset({"h11"}))
    b = TagEntry(58, 1, senders=frozenset({"h11"}), dscps=(("h11", 31),))
    check_wire({3: a, 58: b}, [b], PLAN, FakeDriver())
    with pytest.raises(ValueError, match="^entries: tags 31 and 58 share DSCP 31 on host h11$"):
        check_wire({3: a, 31: c, 58: b}, [c], PLAN, FakeDriver())


def test_a_dscp_only_driver_takes_neither_tags_above_55_nor_remaps():
    """BMv2's driver (max_tag 55): tag 56 and a remapped tag 5 are refused, tag 55 passes."""
    drv = FakeDriver(max_tag=TAG_MAX)
    check_wire({55: TagEntry(55, 0)}, [TagEntry(55, 0)], PLAN, drv)
    for e in (TagEntry(56, 0), TagEntry(5, 0, dscps=(("h11", 9),))):
        with pytest.raises(ValueError, match=f"^entries: tag {e.tag}: FakeDriver takes tags 1..55"):
            check_wire({e.tag: e}, [e], PLAN, drv)
