"""Result records and summary statistics."""

from __future__ import annotations

import json

import pytest

from coflowbed.results.files import read_coflows_csv, write_results
from coflowbed.results.records import (
    CoflowRecord,
    FlowRecord,
    IterationRecord,
    RunSummary,
    mean,
    percentile,
    summarize,
)


def rec(cid, ctype, arrival, finish):
    r = CoflowRecord(cid, ctype, "j", 0, 0, 0, "", 0, 1, 10, arrival_s=arrival)
    r.finish_s = finish
    return r


def test_a_summary_with_an_unknown_key_is_refused_naming_file_and_key(tmp_path):
    s = write_results(tmp_path, [], [rec("a", "PP", 0.5, 2.0)], [], partial=False)
    data = {**s.to_json(), "colour": "red"}
    (tmp_path / "summary.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"summary.json: colour: unknown key"):
        RunSummary.read(tmp_path)
    with pytest.raises(TypeError):
        summarize([], [], False, {"colour": "red"})  # a writer's unknown fact is a bug


def test_percentile_is_nearest_rank():
    assert percentile([5, 1, 4, 2, 3], 50) == 3
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([], 95) is None and mean([]) is None


def test_summary_counts_only_finished_coflows_and_splits_by_type():
    cfs = [rec("a", "EP", 0.0, 1.0), rec("b", "EP", 1.0, 4.0), rec("c", "DP", 0.0, None)]
    s = summarize(cfs, [IterationRecord(0, 0.0, 4.0), IterationRecord(1, 4.0, None)], partial=True)
    assert s.coflows == 2 and s.coflows_total == 3 and s.partial is True
    assert s.avg_cct_s == 2.0 and s.p95_cct_s == 3.0
    assert s.cct_by_type["EP"].count == 2 and s.cct_by_type["DP"].count == 0
    assert s.iterations == 1 and s.iteration_time_s == 4.0


def test_written_files_round_trip(tmp_path):
    s = write_results(
        tmp_path,
        [],
        [rec("a", "PP", 0.5, 2.0)],
        [],
        partial=False,
        extra={"policy": "fifo", "calibration": {"pairs": 2}},
    )
    assert RunSummary.read(tmp_path) == s and s.policy == "fifo"
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["cct_by_type"]["PP"] == {"count": 1, "avg_s": 1.5, "p95_s": 1.5, "max_s": 1.5}
    assert on_disk["error"] is None and "switch" not in on_disk  # unset optional: omitted
    row = read_coflows_csv(tmp_path / "coflows.csv")[0]
    assert row["coflow_id"] == "a" and row["cct_s"] == 1.5 and row["level"] is None


def test_flows_csv_has_the_fields_in_order_and_none_as_empty(tmp_path):
    """One row per record, the dataclass's fields as columns in declaration order, an
    unset value (a flow that never finished) as an empty cell."""
    flows = [FlowRecord("f0", "a", "h1", "h2", 10, 0.5, None, 0, None)]
    write_results(tmp_path, flows, [rec("a", "PP", 0.5, None)], [], partial=True)
    lines = (tmp_path / "flows.csv").read_text().splitlines()
    assert lines == [
        "flow_id,coflow_id,src,dst,bytes,start_s,finish_s,bytes_received,retrans_bytes",
        "f0,a,h1,h2,10,0.5,,0,",
    ]
