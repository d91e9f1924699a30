"""``trace.json``: a run in the Chrome trace-event format (Perfetto UI, chrome://tracing).

- one process (``pid``) per host, named by a metadata event; compute nodes and the
  host's outgoing flows are complete slices (``"ph": "X"``, microseconds) on lanes
  (``tid``) packed so that no two slices of a lane overlap (compute lanes from 1, flow
  lanes from ``FLOW_TID_BASE``);
- one process ``coflows`` (pid 0) holding every coflow as an async span (``"b"`` at its
  release, ``"e"`` at its finish, same ``id``), coloured by nothing but named with
  its type; levels, types and bytes are in ``args``.

Unfinished slices are left out (their records say so); times are run time (s) x 1e6.
"""

from __future__ import annotations

import heapq
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from coflowbed.results.records import CoflowRecord, ComputeRecord, FlowRecord

US = 1e6
COFLOW_PID = 0
FLOW_TID_BASE = 100


def _us(t: float) -> float:
    """Seconds -> microseconds (to the ns)."""
    return round(t * US, 3)


def pack_lanes(spans: Iterable[tuple[float, float]]) -> list[int]:
    """For spans (start, end) in order of start, the first lane (0, 1, ...) whose last
    span ended by this one's start: no two spans of a lane overlap.  Lanes whose span
    ended go from a heap by end time to a heap of free lane numbers (with starts in
    order, a lane once free stays free until reused): O(n log lanes)."""
    busy: list[tuple[float, int]] = []  # (end, lane)
    free: list[int] = []
    out = []
    for start, end in spans:
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy) + len(free)
        heapq.heappush(busy, (end, lane))
        out.append(lane)
    return out


def _meta(pid: int, tid: int, kind: str, name: str) -> dict:
    """A metadata event naming a process or thread."""
    return {"ph": "M", "pid": pid, "tid": tid, "ts": 0, "name": kind, "args": {"name": name}}


def _slices(items: Sequence[tuple[float, float, dict]], pid: int, base: int, what: str):
    """Complete events of (start, end, event fields) packed onto lanes from ``base``."""
    items = sorted(items, key=lambda x: x[0])
    lanes = pack_lanes((s, e) for s, e, _ in items)
    events, seen = [], set()
    for (s, e, fields), lane in zip(items, lanes):
        events.append({"ph": "X", "pid": pid, "tid": base + lane, "ts": _us(s), **fields})
        events[-1]["dur"] = round(_us(e) - _us(s), 3)
        if lane not in seen:
            seen.add(lane)
            events.append(_meta(pid, base + lane, "thread_name", f"{what} {lane}"))
    return events


def _host_events(host: str, pid: int, flows, computes, levels) -> list[dict]:
    """One host's process: its compute lanes and its outgoing flows' lanes."""
    comp = [
        (
            c.start_s,
            c.finish_s,
            {
                "name": c.label or c.node_id,
                "cat": "compute",
                "args": {"node": c.node_id, "iteration": c.iteration},
            },
        )
        for c in computes
        if c.start_s is not None and c.finish_s is not None
    ]
    out = [
        (
            f.start_s,
            f.finish_s,
            {
                "name": f.flow_id,
                "cat": "flow",
                "args": {
                    "coflow": f.coflow_id,
                    "dst": f.dst,
                    "bytes": f.bytes,
                    "level": levels.get(f.coflow_id),
                },
            },
        )
        for f in flows
        if f.start_s is not None and f.finish_s is not None
    ]
    return [
        _meta(pid, 0, "process_name", host),
        *_slices(comp, pid, 1, "compute"),
        *_slices(out, pid, FLOW_TID_BASE, "flows out"),
    ]


def _coflow_events(coflows: Sequence[CoflowRecord]) -> list[dict]:
    """Every finished coflow as an async span on the ``coflows`` process."""
    out = [_meta(COFLOW_PID, 0, "process_name", "coflows")]
    for i, c in enumerate(coflows, start=1):
        if c.arrival_s is None or c.finish_s is None:
            continue
        common = {
            "pid": COFLOW_PID,
            "tid": 0,
            "cat": c.ctype,
            "id": i,
            "name": f"{c.coflow_id} ({c.ctype})",
        }
        args = {
            "coflow": c.coflow_id,
            "type": c.ctype,
            "level": c.level,
            "rank": c.rank,
            "bytes": c.bytes,
            "flows": c.flows,
            "cct_s": c.cct_s,
        }
        out.append({**common, "ph": "b", "ts": _us(c.arrival_s), "args": args})
        out.append({**common, "ph": "e", "ts": _us(c.finish_s)})
    return out


def trace_events(
    flows: Sequence[FlowRecord],
    coflows: Sequence[CoflowRecord],
    computes: Sequence[ComputeRecord] = (),
) -> list[dict]:
    """Every event of the run's trace."""
    levels = {c.coflow_id: c.level for c in coflows}
    hosts = sorted({f.src for f in flows} | {f.dst for f in flows} | {c.host for c in computes})
    by_src, by_host = defaultdict(list), defaultdict(list)
    for f in flows:
        by_src[f.src].append(f)
    for c in computes:
        by_host[c.host].append(c)
    events = _coflow_events(coflows)
    for pid, host in enumerate(hosts, start=1):
        events += _host_events(host, pid, by_src[host], by_host[host], levels)
    return events


def write_trace(
    path: Path,
    flows: Sequence[FlowRecord],
    coflows: Sequence[CoflowRecord],
    computes: Sequence[ComputeRecord] = (),
) -> None:
    """Write ``trace.json`` (the JSON object form, times in microseconds)."""
    doc = {"traceEvents": trace_events(flows, coflows, computes), "displayTimeUnit": "ms"}
    Path(path).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
