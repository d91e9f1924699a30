"""Protocols of the per-host traffic agent (``workload.agent``): what goes on the wire.

Shared by the agent and its orchestrator-side client (``coflowbed.emulation.agents.client``) so that
neither side redefines the other's:

- **data messages**: connections are opened ahead (``connect``) and carry one flow after
  another.  Every flow is a message: ``HEADER`` (magic, flow-id length, payload bytes),
  the UTF-8 flow id, then exactly ``bytes`` of payload; the receiver answers its last
  byte with the one byte ``MESSAGE_ACK``, after which the connection is free again.  A
  connection carries one message at a time.
- **control lines**: JSON objects, one per line, over the agent's Unix socket.  Requests
  carry an ``id`` and ``op``; replies echo the ``id`` with ``ok``; events carry ``event``
  and no ``id``.  Requests are strict: unknown keys and wrong types are rejected.
- **marking**: at send time a flow's connection is marked with its tag in IP_TOS and its
  level in SO_PRIORITY (``mark_flow_socket``); handshakes go unmarked.  Tags follow
  ``workload.marking``: ``1..3520`` mark a coflow (on the wire as DSCP ``tag_dscp(tag)``,
  1..55), ``0`` sends untagged (DSCP 0).
- **pacing**: a flow given ``rate_mbps`` (Mbit/s) has its socket's SO_MAX_PACING_RATE set
  to ``int(rate_mbps * 1e6 / 8)`` bytes/s before its first byte (``set_pacing``); the
  kernel's internal TCP pacing then throttles it at the sender, no fq qdisc needed.
  Without a rate the cap is ~0UL (``PACING_UNLIMITED``: no cap).
- **receiving end**: ``FlowReceiver`` parses the header and counts the payload of one
  incoming flow (an asyncio buffered protocol; the agent owns the listener).

Requests (reply fields after ``id``/``ok``; a refused request gets ``ok: false, error``):

- ``connect`` dst_ip, dst_port, count, optional slot and slots -> connections (now in
  the pool: of that slot, if given), opened, setup_ns, once the pool to that
  destination holds ``count``
  connections (of that ECMP slot, if given: from TCP source ports ``p`` with
  ``p % slots == slot``, which the leaves forward to the slot's spine,
  ``workload.ecmp``; replies may overtake earlier ones: match them by ``id``).
- ``send`` flow_id, dst_ip, dst_port, bytes, tag, level, optional dscp (1..55: the
  DSCP to mark with when the controller remapped this sender, 56..63: a level's code
  while the tag's entry is not yet in the switches; else ``tag_dscp(tag)``),
  optional rate_mbps (number > 0
  or null = unpaced), optional slot and slots -> {} at once; the flow runs on, on an idle
  pooled connection (of its ECMP slot, if given), or a new one when none is idle.
- ``cancel`` flow_id -> cancelled (bool: it was under way); its connection is closed (the
  receiver reports the flow failed) and the sender reports ``flow_failed`` "cancelled".
- ``set_level`` tag, level -> sockets (how many live sockets moved), priority (bool).
- ``set_dscp`` tag, dscp (as ``send``'s), optional unpace (bool: lift the tag's pacing
  too) -> sockets (how many live sockets were re-marked); flows of the tag not started
  yet are marked (and paced) so when they start.
- ``set_rate`` tag, dst_ip, rate_mbps (number > 0, or null to lift the cap) -> sockets (how
  many live sockets of that tag to that address changed); flows not connected yet take it too.
- ``stats`` -> t_ns, connections {"ip:port": {total, idle, on_demand}},
  sent {flow: acked bytes}, sent_by_tag {"tag": bytes},
  received {flow: bytes}, priority {flow: SO_PRIORITY of live sockets},
  pacing {flow: SO_MAX_PACING_RATE bytes/s of live sockets, null when uncapped},
  tos {flow: IP_TOS byte of live sockets}.
- ``hello`` -> host, pid, data_port, priority (may set SO_PRIORITY), t_ns.
- ``shutdown`` -> {}; then the agent closes everything and exits 0.

Events: ``flow_started`` flow_id, t_ns, tos, priority, pacing_bps (bytes/s, null when
unpaced; all read back from the socket before its first byte), new_connection (no idle
pooled connection: one was opened for it), src_port (its connection's TCP source port);
``flow_sent`` flow_id, t_ns (receiver acknowledged the last byte), written_ns,
retrans_bytes (bytes TCP sent again for it: ``tcpi_bytes_retrans``, null where the
kernel does not say);
``flow_received`` flow_id, bytes, first_ns, last_ns, src (receiver);
``flow_failed`` flow_id (None if unknown), side, error (and src on the receiver side).

This module holds the control requests; the header, line encoding and errors live in
``workload.agent.wire``, the flow sockets in ``workload.agent.sockets`` and the receiving
end in ``workload.agent.receiver``, all re-exported here.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

from workload import marking
from workload.agent.receiver import FlowReceiver, ReceiverSink, RecvRecord
from workload.agent.sockets import (
    MIN_RATE_MBPS,
    PACING_UNLIMITED,
    SO_MAX_PACING_RATE,
    can_set_priority,
    check_rate,
    mark_flow_socket,
    open_flow_socket,
    pacing_bytes,
    pacing_rate,
    set_pacing,
    unacked_bytes,
)
from workload.agent.wire import (
    EVENTS,
    HEADER,
    HEADER_MAGIC,
    MAX_FLOW_ID_BYTES,
    MAX_LINE_BYTES,
    MESSAGE_ACK,
    UNIX_PATH_MAX,
    ProtocolError,
    RequestError,
    decode_header,
    encode_header,
    encode_line,
)

__all__ = [
    # re-exported from workload.agent.wire
    "EVENTS",
    "HEADER",
    "HEADER_MAGIC",
    "MAX_FLOW_ID_BYTES",
    "MAX_LINE_BYTES",
    "MESSAGE_ACK",
    "UNIX_PATH_MAX",
    "ProtocolError",
    "RequestError",
    "decode_header",
    "encode_header",
    "encode_line",
    # re-exported from workload.agent.sockets
    "MIN_RATE_MBPS",
    "PACING_UNLIMITED",
    "SO_MAX_PACING_RATE",
    "can_set_priority",
    "check_rate",
    "mark_flow_socket",
    "open_flow_socket",
    "pacing_bytes",
    "pacing_rate",
    "set_pacing",
    "unacked_bytes",
    # re-exported from workload.agent.receiver
    "FlowReceiver",
    "ReceiverSink",
    "RecvRecord",
    # defined here: the control requests
    "ConnectRequest",
    "SendRequest",
    "CancelRequest",
    "SetLevelRequest",
    "SetRateRequest",
    "StatsRequest",
    "HelloRequest",
    "ShutdownRequest",
    "MAX_POOL",
    "Request",
    "OPS",
    "request_dict",
    "parse_request",
]


def _check_tag(tag: Any) -> int:
    """A tag (0 = untagged) or ProtocolError."""
    if type(tag) is not int or not (
        tag == marking.DSCP_UNTAGGED or marking.TAG_MIN <= tag <= marking.TAG_ID_MAX
    ):
        raise ProtocolError(
            f"tag: must be an int 0 or {marking.TAG_MIN}..{marking.TAG_ID_MAX}, got {tag!r}"
        )
    return tag


def _check_level(level: Any) -> int:
    """A priority level (0 = most urgent) or ProtocolError."""
    if type(level) is not int or not 0 <= level < marking.MAX_LEVELS:
        raise ProtocolError(f"level: must be an int 0..{marking.MAX_LEVELS - 1}, got {level!r}")
    return level


def _check_dscp(dscp: Any) -> int:
    """A DSCP a sender may mark with: a tag's (1..55) or a level's code (56..63), or
    ProtocolError."""
    top = marking.LEVEL_CODE_BASE + marking.MAX_LEVELS - 1
    if type(dscp) is not int or not marking.TAG_MIN <= dscp <= top:
        raise ProtocolError(
            f"dscp: must be an int {marking.TAG_MIN}..{marking.TAG_MAX} (a tag's) or "
            f"{marking.LEVEL_CODE_BASE}..{top} (a level's code), got {dscp!r}"
        )
    return dscp


def _check_ip(dst_ip: Any) -> str:
    """An IPv4 address in dotted form or ProtocolError."""
    try:
        ipaddress.IPv4Address(dst_ip)
    except (ipaddress.AddressValueError, TypeError) as exc:
        raise ProtocolError(f"dst_ip: not an IPv4 address: {dst_ip!r}") from exc
    return dst_ip


def _check_port(port: Any) -> int:
    """A TCP port 1..65535 or ProtocolError."""
    if type(port) is not int or not 1 <= port <= 65535:
        raise ProtocolError(f"dst_port: must be an int 1..65535, got {port!r}")
    return port


MAX_POOL = 64  # connections one agent holds to one destination (and ECMP slot)
DATA_PORT = 5001  # TCP port every agent listens on for incoming flows (data messages)
ANY_ADDRESS = "0.0.0.0"  # an agent given no --ip accepts on every address, sends from any


def check_slot(slot: Any, slots: Any) -> None:
    """An ECMP slot (``workload.ecmp``) and the slot count, both or neither given:
    ``slots`` a power of two, ``0 <= slot < slots``; else ProtocolError."""
    if slot is None and slots is None:
        return
    if type(slots) is not int or slots < 1 or slots & (slots - 1) or slots > 1 << 12:
        raise ProtocolError(f"slots: must be a power of two 1..4096 with slot, got {slots!r}")
    if type(slot) is not int or not 0 <= slot < slots:
        raise ProtocolError(f"slot: must be an int 0..{slots - 1}, got {slot!r}")


@dataclass(frozen=True)
class ConnectRequest:
    """Hold ``count`` open connections to ``dst_ip:dst_port`` (set up before the
    iteration); with ``slot``/``slots``, that many from source ports of that ECMP slot
    (``workload.ecmp``), apart from the connections of other slots."""

    dst_ip: str
    dst_port: int
    count: int
    slot: int | None = None
    slots: int | None = None

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        _check_ip(self.dst_ip)
        _check_port(self.dst_port)
        if type(self.count) is not int or not 1 <= self.count <= MAX_POOL:
            raise ProtocolError(f"count: must be an int 1..{MAX_POOL}, got {self.count!r}")
        check_slot(self.slot, self.slots)


@dataclass(frozen=True)
class SendRequest:
    """Open a TCP flow of ``bytes`` to ``dst_ip:dst_port`` marked with ``tag``/``level``."""

    flow_id: str
    dst_ip: str
    dst_port: int
    bytes: int
    tag: int
    level: int
    rate_mbps: float | None = None  # sender-side pacing cap; optional on the wire
    dscp: int | None = None  # the DSCP to mark with; optional (None: tag_dscp(tag))
    slot: int | None = None  # the ECMP slot of its connection (optional, with slots)
    slots: int | None = None

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        if not isinstance(self.flow_id, str):
            raise ProtocolError(f"flow_id: must be a string, got {self.flow_id!r}")
        encode_header(self.flow_id, 0)  # checks the length
        if self.dscp is not None:
            _check_dscp(self.dscp)
        _check_ip(self.dst_ip)
        _check_port(self.dst_port)
        if type(self.bytes) is not int or not 1 <= self.bytes < 1 << 63:
            raise ProtocolError(f"bytes: must be a positive int, got {self.bytes!r}")
        _check_tag(self.tag)
        _check_level(self.level)
        check_rate(self.rate_mbps)
        check_slot(self.slot, self.slots)


@dataclass(frozen=True)
class CancelRequest:
    """Stop the outgoing flow ``flow_id`` if it is under way (the calibration's bound)."""

    flow_id: str

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        if not isinstance(self.flow_id, str):
            raise ProtocolError(f"flow_id: must be a string, got {self.flow_id!r}")


@dataclass(frozen=True)
class SetLevelRequest:
    """Move the live sockets of ``tag`` to the host NIC class of ``level``."""

    tag: int
    level: int

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        _check_tag(self.tag)
        _check_level(self.level)


@dataclass(frozen=True)
class SetDscpRequest:
    """Mark the flows of ``tag`` with ``dscp`` from now on: its live sockets and the
    flows not started yet (the tag's entry reached the switches, or its level moved
    while it had not)."""

    tag: int
    dscp: int
    unpace: bool = False  # and lift the tag's pacing (a switch meter took it over)

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        _check_tag(self.tag)
        _check_dscp(self.dscp)
        if not isinstance(self.unpace, bool):
            raise ProtocolError(f"unpace: must be true or false, got {self.unpace!r}")


@dataclass(frozen=True)
class SetRateRequest:
    """Cap the pacing of the live sockets of ``tag`` to ``dst_ip`` at ``rate_mbps``
    (None lifts the cap); the key is required on the wire, null included."""

    tag: int
    dst_ip: str
    rate_mbps: float | None

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        _check_tag(self.tag)
        _check_ip(self.dst_ip)
        check_rate(self.rate_mbps)


@dataclass(frozen=True)
class StatsRequest:
    """Bytes sent/received so far, per flow and per tag."""


@dataclass(frozen=True)
class HelloRequest:
    """Who the agent is: host, pid, data port, whether SO_PRIORITY can be set."""


@dataclass(frozen=True)
class ShutdownRequest:
    """Close everything and exit 0."""


Request = (
    ConnectRequest
    | SendRequest
    | CancelRequest
    | SetLevelRequest
    | SetDscpRequest
    | SetRateRequest
    | StatsRequest
    | HelloRequest
    | ShutdownRequest
)
OPS: dict[str, type] = {
    "connect": ConnectRequest,
    "send": SendRequest,
    "cancel": CancelRequest,
    "set_level": SetLevelRequest,
    "set_dscp": SetDscpRequest,
    "set_rate": SetRateRequest,
    "stats": StatsRequest,
    "hello": HelloRequest,
    "shutdown": ShutdownRequest,
}
_OP_NAMES = {cls: op for op, cls in OPS.items()}


def request_dict(req_id: int | str, req: Request) -> dict[str, Any]:
    """The JSON object of a request (client side)."""
    return {"id": req_id, "op": _OP_NAMES[type(req)], **asdict(req)}


def parse_request(line: bytes) -> tuple[int | str, Request]:
    """``(id, request)`` from one control line; ProtocolError names id, key and reason."""
    try:
        msg = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"request is not JSON: {exc}") from exc
    if not isinstance(msg, dict):
        raise ProtocolError("request must be a JSON object")
    req_id = msg.pop("id", None)
    if isinstance(req_id, bool) or not isinstance(req_id, (int, str)):
        raise RequestError(None, f"id: must be an int or string, got {req_id!r}")
    op = msg.pop("op", None)
    cls = OPS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise RequestError(req_id, f"op: unknown operation {op!r} (one of {', '.join(OPS)})")
    names = {f.name for f in fields(cls)}
    required = {
        f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
    }
    unknown = sorted(set(msg) - names)
    missing = sorted(required - set(msg))
    if unknown or missing:
        what = f"unknown key {unknown[0]!r}" if unknown else f"missing key {missing[0]!r}"
        raise RequestError(req_id, f"{op}: {what}")
    try:
        return req_id, cls(**msg)
    except ProtocolError as exc:
        raise RequestError(req_id, f"{op}: {exc}") from exc
