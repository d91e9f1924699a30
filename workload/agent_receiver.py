"""The receiving end of the agent's data protocol (documented in ``workload.agent_proto``):
one ``FlowReceiver`` per incoming flow connection."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from workload.agent_wire import ProtocolError, decode_header


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
