"""Reader for coflow-benchmark traces (the Facebook 2010 trace, FB2010-1Hr-150-0.txt).

Format (one coflow a line after the header)::

    <ports> <coflows>
    <id> <arrival ms> <#mappers> <mapper port>... <#reducers> <port:MB>...

The common model of the trace (Varys, Aalo, Sincronia): each mapper sends each reducer
an equal share of the reducer's MB, MB = 2^20 bytes.

``to_dag`` maps trace ports onto hosts by the rule ``port p -> hosts[p % len(hosts)]``.
A flow whose mapper and reducer land on the same host never crosses the network: it is
dropped and counted in ``dag.meta`` (``intra_host_flows_dropped`` / ``_bytes_dropped``); a
coflow left with no flow is dropped too (``intra_host_coflows_dropped``).  With
``hosts=None`` every port is its own host ``p0..p<ports-1>`` (the trace's own big
switch), so only flows from a port to itself are dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from workload.dag import Coflow, CoflowIdentity, CoflowType, Dag, Flow

log = logging.getLogger("workload.fbtrace")

MB = 2**20  # bytes in a trace MB


class TraceError(ValueError):
    """Malformed trace; the message is ``"<path>:<line>: <reason>"``."""


@dataclass(frozen=True)
class TraceCoflow:
    """One coflow of the trace as written: ports and reducer sizes in MB."""

    coflow_id: str
    arrival_ms: int
    mappers: tuple[int, ...]
    reducers: tuple[tuple[int, float], ...]  # (port, MB)
    line: int = 0  # line number in the file (1-based), for messages

    @property
    def total_mb(self) -> float:
        """Total MB the coflow's reducers receive."""
        return sum(mb for _, mb in self.reducers)


class Trace(list):
    """A list of TraceCoflow that also remembers the file and its port count."""

    def __init__(self, coflows=(), ports: int = 0, path: str = "") -> None:
        super().__init__(coflows)
        self.ports = ports
        self.path = path


def read_trace(path: Path | str) -> Trace:
    """Parse a coflow-benchmark trace; TraceError naming file and line on bad input."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise TraceError(f"{path}:0: cannot read: {exc.strerror}") from None
    if not lines:
        raise TraceError(f"{path}:1: empty file (expected '<ports> <coflows>')")
    ports, count = _parse_header(path, lines[0])
    trace, seen = Trace(ports=ports, path=str(path)), set()
    for no, text in enumerate(lines[1:], start=2):
        if not text.strip():
            continue
        cf = _parse_coflow(path, no, text, ports)
        if cf.coflow_id in seen:
            raise TraceError(f"{path}:{no}: duplicate coflow id {cf.coflow_id}")
        seen.add(cf.coflow_id)
        trace.append(cf)
    if len(trace) != count:
        raise TraceError(f"{path}:1: header says {count} coflows, file has {len(trace)}")
    return trace


def _parse_header(path: Path, text: str) -> tuple[int, int]:
    """The header's port and coflow counts."""
    parts = text.split()
    if len(parts) != 2:
        raise TraceError(f"{path}:1: header must be '<ports> <coflows>', got {text!r}")
    ports, count = (_int(path, 1, p, what) for p, what in zip(parts, ("ports", "coflows")))
    if ports < 1:
        raise TraceError(f"{path}:1: ports must be >= 1, got {ports}")
    return ports, count


def _parse_coflow(path: Path, no: int, text: str, ports: int) -> TraceCoflow:
    """One coflow line; every field checked, token count exact."""
    tok = text.split()
    if len(tok) < 5:
        raise TraceError(f"{path}:{no}: too few fields ({len(tok)}) for a coflow line")
    cid, arrival = tok[0], _int(path, no, tok[1], "arrival ms")
    if arrival < 0:
        raise TraceError(f"{path}:{no}: arrival ms must be >= 0, got {arrival}")
    nm = _count(path, no, tok, 2, "#mappers")
    mappers = tuple(_port(path, no, t, ports) for t in tok[3 : 3 + nm])
    nr = _count(path, no, tok, 3 + nm, "#reducers")
    if len(tok) != 4 + nm + nr:
        raise TraceError(
            f"{path}:{no}: expected {4 + nm + nr} fields for {nm} mappers and "
            f"{nr} reducers, got {len(tok)}"
        )
    reducers = tuple(_reducer(path, no, t, ports) for t in tok[4 + nm :])
    for what, seq in (("mapper", mappers), ("reducer", [p for p, _ in reducers])):
        if len(set(seq)) != len(seq):
            raise TraceError(f"{path}:{no}: a {what} port appears twice")
    return TraceCoflow(cid, arrival, mappers, reducers, no)


def _count(path: Path, no: int, tok: list[str], i: int, what: str) -> int:
    """A positive count at token ``i``."""
    if i >= len(tok):
        raise TraceError(f"{path}:{no}: line ends before {what}")
    n = _int(path, no, tok[i], what)
    if n < 1:
        raise TraceError(f"{path}:{no}: {what} must be >= 1, got {n}")
    return n


def _reducer(path: Path, no: int, text: str, ports: int) -> tuple[int, float]:
    """``port:MB`` of one reducer."""
    port, sep, mb = text.partition(":")
    if not sep:
        raise TraceError(f"{path}:{no}: reducer {text!r} must be '<port>:<MB>'")
    try:
        size = float(mb)
    except ValueError:
        raise TraceError(f"{path}:{no}: reducer {text!r}: MB {mb!r} is not a number") from None
    if not size >= 0 or size == float("inf"):
        raise TraceError(f"{path}:{no}: reducer {text!r}: MB must be a finite number >= 0")
    return _port(path, no, port, ports), size


def _port(path: Path, no: int, text: str, ports: int) -> int:
    """A port number in 0..ports-1."""
    p = _int(path, no, text, "port")
    if not 0 <= p < ports:
        raise TraceError(f"{path}:{no}: port {p} outside 0..{ports - 1}")
    return p


def _int(path: Path, no: int, text: str, what: str) -> int:
    """An integer field."""
    try:
        return int(text)
    except ValueError:
        raise TraceError(f"{path}:{no}: {what} {text!r} is not an integer") from None


def to_dag(
    trace: list[TraceCoflow],
    hosts: list[str] | None,
    *,
    limit: int | None = None,
    skip: int = 0,
    time_scale: float = 1.0,
    byte_scale: float = 1.0,
) -> Dag:
    """Coflows of ``trace[skip:skip+limit]`` as a Dag (see the module doc for the port
    rule).  ``release_s`` counts from the first kept coflow's arrival (so skipping
    coflows does not leave the run idle at its start)."""
    if not time_scale > 0 or not byte_scale > 0:
        raise ValueError(f"time_scale and byte_scale must be > 0, got {time_scale}, {byte_scale}")
    ports = getattr(trace, "ports", 0) or 1 + max(
        max(max(c.mappers), max(p for p, _ in c.reducers)) for c in trace
    )
    names = list(hosts) if hosts is not None else [f"p{p}" for p in range(ports)]
    if not names:
        raise ValueError("hosts must not be empty")
    kept = trace[skip : skip + limit if limit is not None else None]
    t0 = kept[0].arrival_ms if kept else 0
    dropped = {"flows": 0, "bytes": 0, "coflows": 0}
    coflows = []
    for tc in kept:
        flows = _flows(tc, names, byte_scale, dropped)
        if not flows:
            dropped["coflows"] += 1
            continue
        ident = CoflowIdentity(ctype=CoflowType.OTHER, job="fb", collective="shuffle")
        coflows.append(
            Coflow(
                f"fb{tc.coflow_id}",
                tuple(flows),
                ident,
                release_s=(tc.arrival_ms - t0) / 1000 * time_scale,
            )
        )
    meta = {
        "workload": "trace",
        "trace": getattr(trace, "path", ""),
        "ports": ports,
        "port_map": "port p -> hosts[p % len(hosts)]",
        "coflows_read": len(kept),
        "skip": skip,
        "time_scale": time_scale,
        "byte_scale": byte_scale,
        "intra_host_flows_dropped": dropped["flows"],
        "intra_host_bytes_dropped": dropped["bytes"],
        "intra_host_coflows_dropped": dropped["coflows"],
    }
    return Dag(coflows=coflows, meta=meta)


def _flows(tc: TraceCoflow, names: list[str], byte_scale: float, dropped: dict) -> list[Flow]:
    """Mapper -> reducer flows of one coflow; intra-host ones counted in ``dropped``."""
    flows, nm, n = [], len(tc.mappers), len(names)
    for r, mb in tc.reducers:
        nbytes = max(1, round(mb * MB / nm * byte_scale))
        for m in tc.mappers:
            src, dst = names[m % n], names[r % n]
            if src == dst:
                dropped["flows"] += 1
                dropped["bytes"] += nbytes
                continue
            flows.append(Flow(f"fb{tc.coflow_id}.{m}-{r}", src, dst, nbytes))
    return flows
