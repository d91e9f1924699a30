"""The receiving end of the agent's data protocol (documented in ``workload.agent.proto``):
one ``FlowReceiver`` per incoming connection, which carries one message (flow) after
another; each complete message is answered with ``MESSAGE_ACK`` on the same connection."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol, cast

from workload.agent.wire import MESSAGE_ACK, ProtocolError, decode_header


@dataclass
class RecvRecord:
    """One incoming flow (message), kept for stats after it ended."""

    flow_id: str
    expected: int
    received: int = 0
    first_ns: int = 0
    last_ns: int = 0


class ReceiverSink(Protocol):
    """What a FlowReceiver needs from its agent."""

    rx_view: memoryview  # shared receive buffer (payload is discarded)
    recv_flows: dict[str, RecvRecord]  # by flow id, kept for stats
    receivers: set[FlowReceiver]  # open connections

    def emit(self, event: dict[str, Any]) -> None:
        """Push an event to the orchestrator."""


class FlowReceiver(asyncio.BufferedProtocol):
    """One incoming connection: header, payload (read into the sink's shared buffer),
    acknowledgement; then the next message's header."""

    def __init__(self, agent: ReceiverSink) -> None:
        """Bind to the agent that owns the shared buffer and the event sink."""
        self.agent = agent
        self.transport: asyncio.Transport | None = None
        self.src = ""
        self.head = bytearray()
        self.current: RecvRecord | None = None  # the message being received
        self.seen = 0  # all bytes incl. headers, for the stall watchdog
        self.finished = False  # the connection failed or closed: nothing more is counted
        self.watched, self.idle_s = -1, 0.0

    @property
    def flow_id(self) -> str | None:
        """Id of the message being received (None between messages)."""
        return self.current.flow_id if self.current is not None else None

    @property
    def busy(self) -> bool:
        """A message is under way (an idle pooled connection is not stalled)."""
        return not self.finished and (self.current is not None or bool(self.head))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Remember the peer and register with the agent."""
        # a stream server's transport (BaseTransport is what the protocol API declares)
        self.transport = cast(asyncio.Transport, transport)
        self.src = transport.get_extra_info("peername")[0]
        self.agent.receivers.add(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        """Every connection reads into the same buffer: the payload is not kept."""
        return self.agent.rx_view

    def buffer_updated(self, nbytes: int) -> None:
        """Count ``nbytes`` just read; parse a header first."""
        self.seen += nbytes
        if self.finished:
            return
        if self.current is None:
            self._header(nbytes)
        else:
            self._payload(self.current, nbytes, time.monotonic_ns())

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
        flow_id, expected, hlen = parsed
        if flow_id in self.agent.recv_flows:
            self._fail(f"duplicate flow id {flow_id!r}")
            return
        self.current = rec = RecvRecord(flow_id, expected)
        self.agent.recv_flows[flow_id] = rec
        extra, self.head = len(self.head) - hlen, bytearray()
        self._payload(rec, extra, time.monotonic_ns())

    def _payload(self, rec: RecvRecord, nbytes: int, now_ns: int) -> None:
        """Count payload of ``rec`` (the current message); report and acknowledge the
        message when its last byte arrived."""
        rec.received += nbytes
        if nbytes:
            rec.last_ns = now_ns
            rec.first_ns = rec.first_ns or now_ns
        if rec.received < rec.expected:
            return
        if rec.received > rec.expected:
            self._fail(f"got {rec.received} bytes, header announced {rec.expected}")
            return
        self.current = None
        self.agent.emit(
            {
                "event": "flow_received",
                "flow_id": rec.flow_id,
                "bytes": rec.received,
                "first_ns": rec.first_ns,
                "last_ns": rec.last_ns,
                "src": self.src,
            }
        )
        assert self.transport is not None  # data arrives only while connected
        self.transport.write(MESSAGE_ACK)  # tells the sender that everything arrived

    def eof_received(self) -> bool:
        """Sender closed: between messages that is the end of a pooled connection; in
        the middle of one, the flow failed."""
        if self.busy:
            self._fail(self._short())
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        """Reset or abort in the middle of a message is a failure."""
        if self.busy:
            self._fail(f"connection lost: {exc or 'closed'} ({self._short()})")
        self.finished = True
        self.agent.receivers.discard(self)
        self.transport = None

    def _short(self) -> str:
        """How far the message under way got."""
        rec = self.current
        if rec is None:
            return f"closed inside a header ({len(self.head)} bytes)"
        return f"closed after {rec.received} of {rec.expected} payload bytes"

    def _fail(self, error: str) -> None:
        """Report a failed incoming flow once and drop the connection."""
        if self.finished:
            return
        self.finished = True
        self.agent.emit(
            {
                "event": "flow_failed",
                "flow_id": self.flow_id,
                "side": "receiver",
                "src": self.src,
                "error": error,
            }
        )
        if self.transport is not None:
            self.transport.abort()
