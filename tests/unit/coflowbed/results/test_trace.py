"""trace.json: Chrome trace events of a simulated run of the default scenario."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from coflowbed.experiment.binding import make_policy, plan_fabric
from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.files import read_csv_rows
from coflowbed.results.trace import FLOW_TID_BASE, pack_lanes
from coflowbed.sim import simulate
from tests.cli import SCENARIOS


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A simulated run folder of small-moe (compute nodes, three coflow types)."""
    scen = load_scenario(SCENARIOS / "small-moe.yaml")
    out = tmp_path_factory.mktemp("trace")
    result = simulate(scen.dag, plan_fabric(scen.plan), make_policy("fair", {}, "t"), scen.levels)
    result.write(out)
    return out, json.loads((out / "trace.json").read_text())["traceEvents"]


def test_every_event_has_the_required_fields(run):
    _, events = run
    for e in events:
        assert {"ph", "ts", "pid", "tid", "name"} <= set(e), e
        assert e["ph"] in {"X", "b", "e", "M"}
        if e["ph"] == "X":
            assert e["dur"] >= 0


def test_coflow_spans_are_balanced_and_match_coflows_csv(run):
    out, events = run
    begins = {e["id"]: e for e in events if e["ph"] == "b"}
    ends = {e["id"]: e for e in events if e["ph"] == "e"}
    assert begins.keys() == ends.keys() and begins
    rows = {r["coflow_id"]: r for r in read_csv_rows(out / "coflows.csv")}
    assert len(begins) == sum(1 for r in rows.values() if r["finish_s"] is not None)
    for i, b in begins.items():
        r = rows[b["args"]["coflow"]]
        assert b["ts"] == pytest.approx(r["arrival_s"] * 1e6, abs=1e-3)
        assert ends[i]["ts"] == pytest.approx(r["finish_s"] * 1e6, abs=1e-3)
        assert b["args"]["level"] == r["level"] and b["cat"] == r["ctype"]


def test_flow_slices_match_flows_csv_on_the_senders_track(run):
    out, events = run
    hosts = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    slices = {e["name"]: e for e in events if e["ph"] == "X" and e["cat"] == "flow"}
    flows = read_csv_rows(out / "flows.csv")
    assert len(slices) == len(flows)
    for f in flows:
        e = slices[f["flow_id"]]
        assert hosts[e["pid"]] == f["src"] and e["tid"] >= FLOW_TID_BASE
        assert e["ts"] == pytest.approx(f["start_s"] * 1e6, abs=1e-3)
        assert e["ts"] + e["dur"] == pytest.approx(f["finish_s"] * 1e6, abs=2e-3)


def test_compute_slices_match_compute_csv_and_no_lane_overlaps(run):
    out, events = run
    comp = [e for e in events if e["ph"] == "X" and e["cat"] == "compute"]
    assert len(comp) == len(read_csv_rows(out / "compute.csv")) > 0
    by_lane: dict = {}
    for e in (e for e in events if e["ph"] == "X"):
        by_lane.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_lane.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-3 for a, b in zip(spans, spans[1:]))
    assert Counter(e["ph"] for e in events)["M"] > len(by_lane)  # lanes and hosts named


def test_pack_lanes_reuses_a_lane_once_it_is_free():
    assert pack_lanes([(0, 2), (1, 3), (2, 4), (3.5, 5)]) == [0, 1, 0, 1]


def test_pack_lanes_takes_the_lowest_numbered_free_lane():
    """(0, 10) takes lane 0, (0, 1) lane 1, (0, 2) lane 2; at 3 lanes 1 and 2 are free
    (ended at 1 and 2) and lane 0 is not: (3, 4) takes lane 1, then (4, 6) finds lane 1
    free again (ended at 4, ends are inclusive) ahead of lane 2."""
    spans = [(0, 10), (0, 1), (0, 2), (3, 4), (4, 6), (5, 7)]
    assert pack_lanes(spans) == [0, 1, 2, 1, 1, 2]
