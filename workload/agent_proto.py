"""Protocols of the per-host traffic agent (``workload.agent``): what goes on the wire.

Shared by the agent and its orchestrator-side client (``coflowbed.agents``) so that
neither side redefines the other's:

- **data header**: every flow's TCP connection starts with ``HEADER`` (magic, flow-id
  length, payload bytes) followed by the UTF-8 flow id, then exactly ``bytes`` of payload.
- **control lines**: JSON objects, one per line, over the agent's Unix socket.  Requests
  carry an ``id`` and ``op``; replies echo the ``id`` with ``ok``; events carry ``event``
  and no ``id``.  Requests are strict: unknown keys and wrong types are rejected.
- **marking**: a flow's socket carries its tag in IP_TOS and its level in SO_PRIORITY
  (``open_flow_socket``).  Tags follow ``workload.marking``: ``1..55`` mark a coflow,
  ``0`` sends untagged (DSCP 0).
- **pacing**: a flow given ``rate_mbps`` (Mbit/s) has its socket's SO_MAX_PACING_RATE set
  to ``int(rate_mbps * 1e6 / 8)`` bytes/s before connect (``set_pacing``); the kernel's
  internal TCP pacing then throttles it at the sender, no fq qdisc needed.  Without a rate
  the socket keeps the kernel default ~0UL (``PACING_UNLIMITED``: no cap).
- **receiving end**: ``FlowReceiver`` parses the header and counts the payload of one
  incoming flow (an asyncio buffered protocol; the agent owns the listener).

Requests (reply fields after ``id``/``ok``; a refused request gets ``ok: false, error``):

- ``send`` flow_id, dst_ip, dst_port, bytes, tag, level, optional rate_mbps (number > 0
  or null = unpaced) -> {} at once; the flow runs on.
- ``set_level`` tag, level -> sockets (how many live sockets moved), priority (bool).
- ``set_rate`` tag, dst_ip, rate_mbps (number > 0, or null to lift the cap) -> sockets (how
  many live sockets of that tag to that address changed); flows not connected yet take it too.
- ``stats`` -> t_ns, sent {flow: acked bytes}, sent_by_tag {"tag": bytes},
  received {flow: bytes}, priority {flow: SO_PRIORITY of live sockets},
  pacing {flow: SO_MAX_PACING_RATE bytes/s of live sockets, null when uncapped}.
- ``hello`` -> host, pid, data_port, priority (may set SO_PRIORITY), t_ns.
- ``shutdown`` -> {}; then the agent closes everything and exits 0.

Events: ``flow_started`` flow_id, t_ns, tos, priority, pacing_bps (bytes/s, null when
unpaced; all read back from the socket just before connect);
``flow_sent`` flow_id, t_ns (receiver confirmed the last byte by closing), written_ns;
``flow_received`` flow_id, bytes, first_ns, last_ns, src (receiver);
``flow_failed`` flow_id (None if unknown), side, error (and src on the receiver side).
"""
from __future__ import annotations

import asyncio
import fcntl
import ipaddress
import json
import math
import socket
import struct
import sys
import termios
import time
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Protocol, Union

from workload import marking

HEADER_MAGIC = b"CFB1"
HEADER = struct.Struct("!4sHQ")  # magic, flow-id length, payload bytes
MAX_FLOW_ID_BYTES = 512
MAX_LINE_BYTES = 1 << 20  # one control line; far above any legal request
UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the terminating NUL

EVENTS = ("flow_started", "flow_sent", "flow_received", "flow_failed")

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)  # Python 3.11 lacks the name
_ULONG = struct.Struct("@L")  # given this size the kernel reads/writes the full unsigned long
PACING_UNLIMITED = (1 << (8 * _ULONG.size)) - 1  # ~0UL: the kernel default, no cap
MIN_RATE_MBPS = 8e-6  # 1 byte/s; anything lower would round to a cap of 0


class ProtocolError(ValueError):
    """A malformed header or control request; the text names the key and the reason."""


class RequestError(ProtocolError):
    """A control request that can be answered (its ``id`` was readable) with an error."""

    def __init__(self, req_id: int | str | None, reason: str) -> None:
        """``reason`` names the key; ``req_id`` goes into the error reply."""
        super().__init__(reason)
        self.req_id = req_id


def encode_header(flow_id: str, nbytes: int) -> bytes:
    """The bytes that open a flow's data connection."""
    raw = flow_id.encode()
    if not raw or len(raw) > MAX_FLOW_ID_BYTES:
        raise ProtocolError(f"flow_id: must be 1..{MAX_FLOW_ID_BYTES} UTF-8 bytes")
    return HEADER.pack(HEADER_MAGIC, len(raw), nbytes) + raw


def decode_header(buf: bytes) -> tuple[str, int, int] | None:
    """``(flow_id, payload bytes, header length)`` or None while ``buf`` is too short."""
    if len(buf) < HEADER.size:
        return None
    magic, id_len, nbytes = HEADER.unpack_from(buf)
    if magic != HEADER_MAGIC:
        raise ProtocolError(f"data header: bad magic {magic!r}")
    if not 0 < id_len <= MAX_FLOW_ID_BYTES:
        raise ProtocolError(f"data header: flow-id length {id_len} out of range")
    end = HEADER.size + id_len
    if len(buf) < end:
        return None
    try:
        flow_id = bytes(buf[HEADER.size:end]).decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"data header: flow id is not UTF-8 ({exc})") from exc
    return flow_id, nbytes, end


def _check_tag(tag: Any) -> int:
    """A tag (0 = untagged) or ProtocolError."""
    if type(tag) is not int or not (tag == marking.DSCP_UNTAGGED or marking.TAG_MIN <= tag <= marking.TAG_MAX):
        raise ProtocolError(f"tag: must be an int 0 or {marking.TAG_MIN}..{marking.TAG_MAX}, got {tag!r}")
    return tag


def _check_level(level: Any) -> int:
    """A priority level (0 = most urgent) or ProtocolError."""
    if type(level) is not int or not 0 <= level < marking.MAX_LEVELS:
        raise ProtocolError(f"level: must be an int 0..{marking.MAX_LEVELS - 1}, got {level!r}")
    return level


def _check_ip(dst_ip: Any) -> str:
    """An IPv4 address in dotted form or ProtocolError."""
    try:
        ipaddress.IPv4Address(dst_ip)
    except (ipaddress.AddressValueError, TypeError) as exc:
        raise ProtocolError(f"dst_ip: not an IPv4 address: {dst_ip!r}") from exc
    return dst_ip


def pacing_bytes(rate_mbps: float) -> int:
    """The SO_MAX_PACING_RATE value (bytes/s) of ``rate_mbps`` megabits per second."""
    return int(rate_mbps * 1e6 / 8)


def _check_rate(rate_mbps: Any) -> float | None:
    """A pacing rate in Mbit/s (None = unpaced) or ProtocolError.  JSON allows NaN and
    Infinity, and bool is an int in Python: both are refused explicitly."""
    if rate_mbps is None:
        return None
    if (type(rate_mbps) not in (int, float) or not math.isfinite(rate_mbps)
            or rate_mbps < MIN_RATE_MBPS or pacing_bytes(rate_mbps) >= PACING_UNLIMITED):
        raise ProtocolError(f"rate_mbps: must be null or a finite number of Mbit/s >= {MIN_RATE_MBPS:g}, "
                            f"got {rate_mbps!r}")
    return rate_mbps


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

    def __post_init__(self) -> None:
        """Reject bad values with the key's name (ProtocolError)."""
        if not isinstance(self.flow_id, str):
            raise ProtocolError(f"flow_id: must be a string, got {self.flow_id!r}")
        encode_header(self.flow_id, 0)  # checks the length
        _check_ip(self.dst_ip)
        if type(self.dst_port) is not int or not 1 <= self.dst_port <= 65535:
            raise ProtocolError(f"dst_port: must be an int 1..65535, got {self.dst_port!r}")
        if type(self.bytes) is not int or not 1 <= self.bytes < 1 << 63:
            raise ProtocolError(f"bytes: must be a positive int, got {self.bytes!r}")
        _check_tag(self.tag)
        _check_level(self.level)
        _check_rate(self.rate_mbps)


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
        _check_rate(self.rate_mbps)


@dataclass(frozen=True)
class StatsRequest:
    """Bytes sent/received so far, per flow and per tag."""


@dataclass(frozen=True)
class HelloRequest:
    """Who the agent is: host, pid, data port, whether SO_PRIORITY can be set."""


@dataclass(frozen=True)
class ShutdownRequest:
    """Close everything and exit 0."""


Request = Union[SendRequest, SetLevelRequest, SetRateRequest, StatsRequest, HelloRequest,
                ShutdownRequest]
OPS: dict[str, type] = {
    "send": SendRequest,
    "set_level": SetLevelRequest,
    "set_rate": SetRateRequest,
    "stats": StatsRequest,
    "hello": HelloRequest,
    "shutdown": ShutdownRequest,
}
_OP_NAMES = {cls: op for op, cls in OPS.items()}


def request_dict(req_id: int | str, req: Request) -> dict[str, Any]:
    """The JSON object of a request (client side)."""
    return {"id": req_id, "op": _OP_NAMES[type(req)], **asdict(req)}


def parse_request(line: bytes) -> tuple[int | str | None, Request]:
    """``(id, request)`` from one control line; ProtocolError names id, key and reason."""
    try:
        msg = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"request is not JSON: {exc}") from exc
    if not isinstance(msg, dict):
        raise ProtocolError("request must be a JSON object")
    req_id = msg.pop("id", None)
    if type(req_id) not in (int, str):
        raise RequestError(None, f"id: must be an int or string, got {req_id!r}")
    op = msg.pop("op", None)
    cls = OPS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise RequestError(req_id, f"op: unknown operation {op!r} (one of {', '.join(OPS)})")
    names = {f.name for f in fields(cls)}
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    unknown = sorted(set(msg) - names)
    missing = sorted(required - set(msg))
    if unknown or missing:
        what = f"unknown key {unknown[0]!r}" if unknown else f"missing key {missing[0]!r}"
        raise RequestError(req_id, f"{op}: {what}")
    try:
        return req_id, cls(**msg)
    except ProtocolError as exc:
        raise RequestError(req_id, f"{op}: {exc}") from exc


def encode_line(msg: dict[str, Any]) -> bytes:
    """One control line (compact JSON + newline)."""
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


# How a flow's socket is marked on the wire (tag -> IP_TOS, level -> SO_PRIORITY).


def open_flow_socket(tag: int, level: int, set_priority: bool = True,
                     rate_mbps: float | None = None, mark: bool = True) -> socket.socket:
    """A non-blocking TCP socket marked with ``tag`` (IP_TOS) and ``level`` (SO_PRIORITY)
    unless ``mark`` is False (then ``mark_flow_socket`` later), paced at ``rate_mbps`` if
    given (SO_MAX_PACING_RATE)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle wait on the tail
        if mark:
            mark_flow_socket(sock, tag, level, set_priority)
        if rate_mbps is not None:
            set_pacing(sock, rate_mbps)
    except OSError:
        sock.close()
        raise
    return sock


def mark_flow_socket(sock: socket.socket, tag: int, level: int, set_priority: bool = True) -> None:
    """Mark ``sock``'s packets with ``tag`` (IP_TOS) and ``level`` (SO_PRIORITY).  SO_PRIORITY
    is set after IP_TOS because Linux resets ``sk_priority`` from the TOS whenever IP_TOS
    is set."""
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, marking.tos_byte(tag))
    if set_priority:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, marking.skb_priority(level))


def set_pacing(sock: socket.socket, rate_mbps: float | None) -> None:
    """Cap ``sock``'s TCP pacing at ``rate_mbps`` Mbit/s, or lift the cap (None: ~0UL).

    Any cap below ~0UL also switches on the kernel's internal TCP pacing for the socket;
    lifting the cap leaves it on, at TCP's own rate (about cwnd/srtt).  The kernel leaves
    a connection's first 10 segments unpaced (as sch_fq does): ~15 KB at MTU 1500, but
    ~235 KB on loopback's 64 KB MTU.  The value goes as an unsigned long: a 32-bit int
    could not carry rates above ~17 Gbit/s.
    """
    value = PACING_UNLIMITED if rate_mbps is None else pacing_bytes(_check_rate(rate_mbps))
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, _ULONG.pack(value))


def pacing_rate(sock: socket.socket) -> int | None:
    """``sock``'s pacing cap in bytes/s read back from the kernel; None when uncapped."""
    (value,) = _ULONG.unpack(sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, _ULONG.size))
    return None if value == PACING_UNLIMITED else value


def can_set_priority() -> bool:
    """Whether this process may set SO_PRIORITY values above 6 (needs CAP_NET_ADMIN)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, marking.skb_priority(0))
        except PermissionError:
            return False
    return True


def unacked_bytes(sock: socket.socket) -> int:
    """Bytes handed to the kernel but not yet acknowledged by the receiver (SIOCOUTQ)."""
    buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    return int.from_bytes(buf, sys.byteorder, signed=True)


# The receiving end of the data protocol.


class ReceiverSink(Protocol):
    """What a FlowReceiver needs from its agent."""

    rx_view: memoryview  # shared receive buffer (payload is discarded)
    recv_flows: dict[str, "FlowReceiver"]  # by flow id, kept for stats
    receivers: set["FlowReceiver"]  # open connections

    def emit(self, event: dict[str, Any]) -> None:
        """Push an event to the orchestrator."""


class FlowReceiver(asyncio.BufferedProtocol):
    """The receiving end of one flow: header, then payload read into the sink's shared buffer."""

    def __init__(self, agent: ReceiverSink) -> None:
        """Bind to the agent that owns the shared buffer and the event sink."""
        self.agent = agent
        self.transport: asyncio.Transport | None = None
        self.src = ""
        self.head = bytearray()
        self.flow_id: str | None = None
        self.expected = -1
        self.received = 0
        self.seen = 0  # all bytes incl. header, for the stall watchdog
        self.first_ns = self.last_ns = 0
        self.finished = False
        self.watched, self.idle_s = -1, 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Remember the peer and register with the agent."""
        self.transport = transport  # type: ignore[assignment]
        self.src = transport.get_extra_info("peername")[0]
        self.agent.receivers.add(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        """Every connection reads into the same buffer: the payload is not kept."""
        return self.agent.rx_view

    def buffer_updated(self, nbytes: int) -> None:
        """Count ``nbytes`` just read; parse the header first."""
        self.last_ns = time.monotonic_ns()
        if not self.first_ns:
            self.first_ns = self.last_ns
        self.seen += nbytes
        if self.flow_id is None:
            self._header(nbytes)
        elif not self.finished:
            self._payload(nbytes)

    def _header(self, nbytes: int) -> None:
        """Accumulate header bytes until the flow id and size are known."""
        self.head += self.agent.rx_view[:nbytes]
        try:
            parsed = decode_header(self.head)
        except ProtocolError as exc:
            self._fail(str(exc))
            return
        if parsed is None:
            return
        flow_id, self.expected, hlen = parsed
        if flow_id in self.agent.recv_flows:
            self._fail(f"duplicate flow id {flow_id!r}")
            return
        self.flow_id = flow_id
        self.agent.recv_flows[flow_id] = self
        extra, self.head = len(self.head) - hlen, bytearray()
        self._payload(extra)

    def _payload(self, nbytes: int) -> None:
        """Count payload; report the flow when its last byte arrived."""
        self.received += nbytes
        if self.received < self.expected:
            return
        if self.received > self.expected:
            self._fail(f"got {self.received} bytes, header announced {self.expected}")
            return
        self.finished = True
        self.agent.emit({"event": "flow_received", "flow_id": self.flow_id, "bytes": self.received,
                         "first_ns": self.first_ns, "last_ns": self.last_ns, "src": self.src})
        self.transport.close()  # the FIN tells the sender that everything arrived

    def eof_received(self) -> bool:
        """Sender closed: complete flows end quietly, short ones fail."""
        if not self.finished:
            self._fail(f"closed after {self.received} of {self.expected} payload bytes")
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        """Reset or abort before the last byte is a failure."""
        if not self.finished:
            self._fail(f"connection lost after {self.received} bytes: {exc or 'closed'}")
        self.agent.receivers.discard(self)
        self.transport = None

    def _fail(self, error: str) -> None:
        """Report a failed incoming flow once and drop the connection."""
        if self.finished:
            return
        self.finished = True
        self.agent.emit({"event": "flow_failed", "flow_id": self.flow_id, "side": "receiver",
                         "src": self.src, "error": error})
        if self.transport is not None:
            self.transport.abort()
