"""The control plane's typed status and counter answers survive their wire form, and
the control plane builds them from its driver's counters."""

from __future__ import annotations

import json

import pytest

from controller import stats
from controller.stats import MeterRow, PortCount, Status, TagCount
from tests.fakes import PLAN, ready_plane


def wire(d):
    return json.loads(json.dumps(d))


def test_every_answer_survives_its_wire_form():
    st = Status(("l1", "s1"), True, 8)
    assert Status.from_wire(wire(st.to_wire())) == st
    tags = {3: TagCount(10, 1)}
    assert stats.tags_from_wire(wire(stats.tags_to_wire(tags))) == tags
    ports = {"l1": {2: PortCount(1, 2, 3, 4)}}
    assert stats.ports_from_wire(wire(stats.ports_to_wire(ports))) == ports
    rows = [MeterRow("l1", 1, 3, "h11", None, 5, 500, 1, 100, retired=True)]
    assert stats.meters_from_wire(wire(stats.meters_to_wire(rows))) == rows


def test_unknown_counter_keys_are_refused_by_name():
    with pytest.raises(ValueError, match=r"tags\.3\.colour: unknown key"):
        stats.tags_from_wire({"tags": {"3": {"bytes": 1, "packets": 1, "colour": 2}}})


def test_port_counters_subtract_field_by_field():
    assert PortCount(10, 20, 3, 4).minus(PortCount(1, 2, 1, 1)) == PortCount(9, 18, 2, 3)
    assert PortCount(1, 1, 1, 1).minus(None) == PortCount(1, 1, 1, 1)


def test_the_control_plane_answers_with_typed_rows():
    from controller.coflow_table import TagEntry

    plane, _ = ready_plane(PLAN)
    plane.set_entries([TagEntry(3, 1, 5.0)])
    st = Status.from_wire({k: v for k, v in plane.handle({"op": "status"}).items() if k != "ok"})
    assert st == Status(tuple(sorted(sw.name for sw in PLAN.switches)), True, 4)
    rows = stats.meters_from_wire(plane.handle({"op": "meter_stats"}))
    assert {(r.switch, r.tag) for r in rows} == {("l1", 3), ("l2", 3)} and not any(
        r.retired for r in rows
    )
    plane.clear_tags([3])
    retired = stats.meters_from_wire(plane.handle({"op": "meter_stats"}))
    assert retired and all(r.retired for r in retired)
