"""The runner's result helpers: counters.json counts the iteration's own traffic
(``subtract_ports``); coflows.csv records the level each coflow ran at
(``_annotate_levels``)."""

from __future__ import annotations

from types import SimpleNamespace

from coflowbed.emulation.runner import _annotate_levels, subtract_ports
from coflowbed.results.records import CoflowRecord
from controller.messages import JobReport
from controller.stats import PortCount


def test_bring_up_and_calibration_traffic_is_subtracted_per_port():
    before = {"l1": {1: PortCount(10, 100, 1, 2)}}
    after = {"l1": {1: PortCount(50, 1100, 5, 12), 2: PortCount(0, 5, 0, 1)}}
    assert subtract_ports(after, before) == {
        "l1": {1: PortCount(40, 1000, 4, 10), 2: PortCount(0, 5, 0, 1)}
    }


def record(cid):
    return CoflowRecord(cid, "EP", "job0", 0, 0, 0, "all_to_all", 0, 1, 100)


def test_levels_are_the_controllers_report_over_the_levels_at_release():
    recs = [record("a"), record("b"), record("c")]
    report = JobReport(False, {"a": 3}, {"a": "(3,)"})  # a was re-ranked after its release
    _annotate_levels(recs, SimpleNamespace(report=report, levels={"a": 1, "b": 2}))
    assert [(r.level, r.rank) for r in recs] == [(3, "(3,)"), (2, ""), (None, "")]
    # levels fixed for the DAG: the controller re-ranked nothing, the release levels stand
    static = [record("a")]
    _annotate_levels(static, SimpleNamespace(report=JobReport(True, {}, {}), levels={"a": 5}))
    assert static[0].level == 5
