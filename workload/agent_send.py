"""Sending side of the per-host traffic agent (``workload.agent``): one task per outgoing
flow connects, marks and paces its socket, writes header and payload from one shared
buffer and reports ``flow_started``/``flow_sent``/``flow_failed``; ``set_level`` and
``set_rate`` re-mark and re-pace live flows and the ones not connected yet."""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from workload import marking
from workload.agent_proto import (ProtocolError, SendRequest, encode_header, mark_flow_socket,
                                  open_flow_socket, pacing_rate, set_pacing, unacked_bytes)

if TYPE_CHECKING:  # only for the annotation: workload.agent imports this module
    from workload.agent import AgentOptions

TX_CHUNK = 256 << 10  # bytes offered per send(): small enough to keep the loop responsive


@dataclass(eq=False)
class SendFlow:
    """State of one outgoing flow."""

    req: SendRequest
    level: int
    rate_mbps: float | None = None  # pacing cap; set_rate may change it before connect too
    sock: socket.socket | None = None
    done: asyncio.Future | None = None  # pending while writing, then until the receiver closes
    handed: int = 0  # payload bytes accepted by the kernel
    written_ns: int = 0  # last payload byte accepted by the kernel
    confirmed_ns: int = 0  # receiver closed after the last byte: everything arrived
    watched: int = -1  # progress seen at the last watchdog tick
    idle_s: float = 0.0

    def acked(self) -> int:
        """Payload bytes the receiver acknowledged (exact while the socket is open)."""
        if self.sock is None or self.sock.fileno() < 0:
            return self.handed
        return max(0, self.handed - unacked_bytes(self.sock))



class FlowSender:
    """The outgoing flows of an agent; a mixin of ``workload.agent.Agent``, which owns the
    state annotated here."""

    opts: AgentOptions
    log: logging.Logger
    tx_view: memoryview  # shared payload buffer of TX_CHUNK bytes
    send_flows: dict[str, SendFlow]
    tasks: set[asyncio.Task]
    priority_ok: bool
    emit: Callable[[dict[str, Any]], None]

    def _start_send(self, req: SendRequest) -> dict[str, Any]:
        """Register the flow and start its task; the reply does not wait for the flow."""
        if req.flow_id in self.send_flows:
            raise ProtocolError(f"send: flow_id {req.flow_id!r} was already sent by this agent")
        flow = SendFlow(req, req.level, req.rate_mbps)
        self.send_flows[req.flow_id] = flow
        task = asyncio.get_running_loop().create_task(self._send(flow))
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return {}

    def _task_done(self, task: asyncio.Task) -> None:
        """Forget a finished flow task; a crash there is a bug and is logged with its trace."""
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.error("flow task crashed", exc_info=task.exception())

    async def _send(self, flow: SendFlow) -> None:
        """Connect, send header and payload, report started/sent or failed, close."""
        req, loop = flow.req, asyncio.get_running_loop()
        try:
            start_ns = time.monotonic_ns()
            flow.sock = open_flow_socket(req.tag, flow.level, self.priority_ok, flow.rate_mbps,
                                         mark=False)
            async with asyncio.timeout(self.opts.connect_timeout_s):
                await loop.sock_connect(flow.sock, (req.dst_ip, req.dst_port))
            # Marked once connected: the handshake goes unmarked (level 0), because strict
            # priority would starve a low coflow's SYN like its data until the kernel gives
            # up on the connection; the data is what the policy orders.
            mark_flow_socket(flow.sock, req.tag, flow.level, self.priority_ok)
            self.emit({"event": "flow_started", "flow_id": req.flow_id, "t_ns": start_ns,
                       "tos": flow.sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS),
                       "priority": flow.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY),
                       "pacing_bps": pacing_rate(flow.sock)})
            await loop.sock_sendall(flow.sock, encode_header(req.flow_id, req.bytes))
            await self._wait_fd(flow, loop.add_writer, loop.remove_writer, self._on_writable)
            await self._wait_fd(flow, loop.add_reader, loop.remove_reader, self._on_readable)
            self.emit({"event": "flow_sent", "flow_id": req.flow_id, "t_ns": flow.confirmed_ns,
                       "written_ns": flow.written_ns})
        except (OSError, TimeoutError) as exc:
            if flow.sock is not None:
                flow.handed = flow.acked()  # what really arrived, for stats
            self.emit({"event": "flow_failed", "flow_id": req.flow_id, "side": "sender",
                       "error": _describe(exc, self.opts.connect_timeout_s)})
        finally:
            if flow.sock is not None:
                flow.sock.close()
                flow.sock = None

    @staticmethod
    async def _wait_fd(flow: SendFlow, add: Any, remove: Any, callback: Any) -> None:
        """Run ``callback(flow)`` on every readiness of the flow's socket until it resolves
        ``flow.done`` (plain callbacks: no coroutine step per send/recv)."""
        flow.done = asyncio.get_running_loop().create_future()
        fd = flow.sock.fileno()
        add(fd, callback, flow)
        try:
            await flow.done
        finally:
            remove(fd)

    def _on_writable(self, flow: SendFlow) -> None:
        """One send() of as much payload as the kernel takes; resolve when all is handed."""
        if flow.done.done():
            return
        try:
            n = flow.sock.send(self.tx_view[:min(flow.req.bytes - flow.handed, TX_CHUNK)])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            flow.done.set_exception(exc)
            return
        flow.handed += n
        if flow.handed >= flow.req.bytes:
            flow.written_ns = time.monotonic_ns()
            flow.done.set_result(None)

    @staticmethod
    def _on_readable(flow: SendFlow) -> None:
        """The receiver closes once it has the last byte: EOF confirms the flow."""
        if flow.done.done():
            return
        try:
            data = flow.sock.recv(1)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            flow.done.set_exception(exc)
            return
        if data:
            flow.done.set_exception(ConnectionError("receiver sent data instead of closing"))
        else:
            flow.confirmed_ns = time.monotonic_ns()
            flow.done.set_result(None)

    def _set_level(self, tag: int, level: int) -> int:
        """Re-prioritise the sockets of ``tag``; returns how many live ones were changed.
        Flows not connected yet open their socket at the new level."""
        changed = 0
        for flow in self.send_flows.values():
            if flow.req.tag != tag:
                continue
            flow.level = level
            if flow.sock is not None and self.priority_ok:
                flow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, marking.skb_priority(level))
                changed += 1
        return changed

    def _set_rate(self, tag: int, dst_ip: str, rate_mbps: float | None) -> int:
        """Cap (None: uncap) the pacing of ``tag``'s flows to ``dst_ip``; returns how many
        live sockets changed.  Flows not connected yet open their socket with the new rate
        (a ``send`` and a ``set_rate`` in one write reach the agent before the flow starts)."""
        changed = 0
        for flow in self.send_flows.values():
            if flow.req.tag != tag or flow.req.dst_ip != dst_ip:
                continue
            flow.rate_mbps = rate_mbps
            if flow.sock is not None:
                set_pacing(flow.sock, rate_mbps)
                changed += 1
        return changed


def _describe(exc: OSError, connect_timeout_s: float) -> str:
    """A failed flow's error text: the errno's name first (asyncio hides it in the text)."""
    if exc.errno:
        return f"{os.strerror(exc.errno)}: {exc}"
    return str(exc) or f"connect timed out after {connect_timeout_s:g} s"
