"""Facebook coflow trace reader: totals computed independently from the raw text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data import FB_TRACE as FB
from workload.fbtrace import MB, TraceError, read_trace, to_dag


def _raw_totals(path: Path) -> tuple[int, float, int]:
    """(coflows, sum of reducer MB, mapper x reducer pairs) straight from the text."""
    lines = path.read_text().split("\n")[1:]
    n, mb, pairs = 0, 0.0, 0
    for line in filter(str.strip, lines):
        tok = line.split()
        nm = int(tok[2])
        reds = tok[4 + nm :]
        n += 1
        mb += sum(float(r.split(":")[1]) for r in reds)
        pairs += nm * len(reds)
    return n, mb, pairs


def test_reads_526_coflows_with_right_totals():
    trace = read_trace(FB)
    n, mb, pairs = _raw_totals(FB)
    assert len(trace) == n == 526 and trace.ports == 150
    assert sum(c.total_mb for c in trace) == pytest.approx(mb)
    assert sum(len(c.mappers) * len(c.reducers) for c in trace) == pairs
    first = trace[0]
    assert (first.coflow_id, first.arrival_ms, first.mappers, first.reducers) == (
        "1",
        0,
        (22,),
        ((65, 1.0),),
    )


def test_to_dag_full_form_keeps_every_byte_accounted():
    trace = read_trace(FB)
    dag = to_dag(trace[:60], None)
    pairs = 0
    for c in trace[:60]:
        pairs += len(c.mappers) * len(c.reducers)
    flows = sum(len(c.flows) for c in dag.coflows)
    assert flows + dag.meta["intra_host_flows_dropped"] == pairs
    # bytes per flow = MB * 2^20 / #mappers rounded: per coflow within #flows bytes
    for tc in trace[:60]:
        want = tc.total_mb * MB
        got = next((c.bytes for c in dag.coflows if c.coflow_id == f"fb{tc.coflow_id}"), 0)
        dropped = sum(
            max(1, round(mb * MB / len(tc.mappers)))
            for r, mb in tc.reducers
            for m in tc.mappers
            if m == r
        )
        assert abs(got + dropped - want) <= len(tc.mappers) * len(tc.reducers)
    assert all(f.src.startswith("p") for c in dag.coflows for f in c.flows)


def test_port_mapping_scales_and_drops_intra_host(tmp_path):
    p = tmp_path / "t.txt"
    # coflow 7: mappers 0 and 2 -> reducer 1 (3 MB) and 3 (1 MB); on 2 hosts p%2:
    # 0->a, 2->a, 1->b, 3->b: nothing local.  coflow 8: mapper 4 -> reducer 2, both on a.
    p.write_text("5 2\n7 1000 2 0 2 2 1:3.0 3:1.0\n8 3000 1 4 1 2:2.0\n")
    dag = to_dag(read_trace(p), ["a", "b"], time_scale=0.5, byte_scale=0.25)
    assert [c.coflow_id for c in dag.coflows] == ["fb7"]
    c = dag.coflows[0]
    assert c.release_s == 0.0 and c.ctype.value == "OTHER" and c.identity.job == "fb"
    assert sorted((f.src, f.dst, f.bytes) for f in c.flows) == sorted(
        [("a", "b", round(3 * MB / 2 * 0.25))] * 2 + [("a", "b", round(1 * MB / 2 * 0.25))] * 2
    )
    assert dag.meta["intra_host_flows_dropped"] == 1
    assert dag.meta["intra_host_coflows_dropped"] == 1
    skipped = to_dag(read_trace(p), None, skip=1, time_scale=2.0)
    assert skipped.coflows[0].release_s == 0.0  # counted from the first kept coflow
    assert to_dag(read_trace(p), None, limit=1).meta["coflows_read"] == 1


@pytest.mark.parametrize(
    "body,line,reason",
    [
        ("1 0 1 0 1 1:x\n", 2, "MB 'x' is not a number"),
        ("1 0 1 0 2 1:1.0\n", 2, "expected 7 fields for 1 mappers and 2 reducers, got 6"),
        ("1 0 2 0 1 1:1.0\n", 2, "#reducers '1:1.0' is not an integer"),
        ("1 0 1 9 1 1:1.0\n", 2, "port 9 outside 0..4"),
        ("1 0 1 0 1 1:1.0\n1 5 1 0 1 2:1.0\n", 3, "duplicate coflow id 1"),
        ("1 -3 1 0 1 1:1.0\n", 2, "arrival ms must be >= 0"),
        ("1 0 1 0 1 1-1.0\n", 2, "must be '<port>:<MB>'"),
        ("1 0 0 1 1:1.0\n", 2, "#mappers must be >= 1"),
    ],
)
def test_corrupted_line_names_file_line_and_reason(tmp_path, body, line, reason):
    p = tmp_path / "bad.txt"
    count = body.count("\n")
    p.write_text(f"5 {count}\n" + body)
    with pytest.raises(TraceError) as exc:
        read_trace(p)
    assert str(exc.value).startswith(f"{p}:{line}: ")
    assert reason in str(exc.value)


def test_header_count_mismatch_and_bad_header(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("5 3\n1 0 1 0 1 1:1.0\n")
    with pytest.raises(TraceError, match=r"t.txt:1: header says 3 coflows, file has 1"):
        read_trace(p)
    p.write_text("five 3\n")
    with pytest.raises(TraceError, match=r":1: ports 'five' is not an integer"):
        read_trace(p)
    assert issubclass(TraceError, ValueError)
