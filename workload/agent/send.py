"""Sending side of the per-host traffic agent (``workload.agent``).

Connections are set up before the iteration, as NCCL does at communicator init: a
``connect`` request opens a pool of connections to one destination, and a flow is then a
*message* on an idle connection of that pool.  Each message has a connection of its own
for as long as it runs (a flow never queues behind another flow of the same pair, whatever
their levels); a send that finds no idle connection opens a new one, which joins the pool
afterwards (``new_connection`` in its ``flow_started`` event says so).  At send time the
connection is marked with the flow's tag (IP_TOS) and level (SO_PRIORITY) and paced at its
rate (or unpaced); handshakes always travel unmarked at level 0.

One task per flow writes header and payload from one shared buffer, waits for the
receiver's acknowledgement and reports ``flow_started``/``flow_sent``/``flow_failed``;
``set_level``, ``set_dscp`` and ``set_rate`` re-mark and re-pace live flows and the ones
not started yet.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workload import ecmp, marking
from workload.agent.options import AgentOptions
from workload.agent.proto import (
    ANY_ADDRESS,
    ConnectRequest,
    ProtocolError,
    SendRequest,
    encode_header,
    mark_flow_socket,
    open_flow_socket,
    pacing_rate,
    set_pacing,
    unacked_bytes,
)
from workload.agent.sockets import bytes_retransmitted
from workload.agent.wire import MESSAGE_ACK

TX_CHUNK = 256 << 10  # bytes offered per send(): small enough to keep the loop responsive

Dest = tuple[str, int]  # (dst_ip, dst_port)
SLOT_PORTS = (10000, 32768)  # source ports bound for ECMP slots (below the ephemeral ones)


@dataclass(eq=False)
class Connection:
    """One established connection of a destination's pool."""

    sock: socket.socket
    opened_ns: int
    messages: int = 0
    slot: int | None = None  # its source port's ECMP slot, if it was bound for one


@dataclass
class Pool:
    """The connections of one destination: idle ones, and how many exist (in all and
    per ECMP slot, None: bound to no slot)."""

    idle: list[Connection] = field(default_factory=list)
    total: int = 0
    on_demand: int = 0  # opened by a send that found no idle connection
    per_slot: Counter[int | None] = field(default_factory=Counter)

    def add(self, conn: Connection) -> None:
        """A new connection, idle."""
        self.idle.append(conn)
        self.count(conn, 1)

    def count(self, conn: Connection, n: int) -> None:
        """``n`` more (or fewer) connections like ``conn``."""
        self.total += n
        self.per_slot[conn.slot] += n

    def pop_idle(self, slot: int | None) -> Connection | None:
        """The most recently idled connection of ``slot`` (None if there is none)."""
        for i in range(len(self.idle) - 1, -1, -1):
            if self.idle[i].slot == slot:
                return self.idle.pop(i)
        return None


def slot_ports(slot: int, slots: int, cursor: int) -> Iterator[int]:
    """The ``SLOT_PORTS`` of ``slot`` (``workload.ecmp.slot_ports``), from the
    ``cursor``-th on, once round."""
    ports = ecmp.slot_ports(slot, slots, *SLOT_PORTS)
    for i in range(len(ports)):
        yield ports[(cursor + i) % len(ports)]


@dataclass(eq=False)
class SendFlow:
    """State of one outgoing flow (message)."""

    req: SendRequest
    level: int
    rate_mbps: float | None = None  # pacing cap; set_rate may change it before it starts
    dscp: int | None = None  # the DSCP to mark with (None: the tag's); set_dscp changes it
    sock: socket.socket | None = None  # its connection's socket while it runs
    done: asyncio.Future | None = None  # pending while writing, then until acknowledged
    handed: int = 0  # payload bytes accepted by the kernel
    written_ns: int = 0  # last payload byte accepted by the kernel
    confirmed_ns: int = 0  # receiver acknowledged the last byte: everything arrived
    retrans_at_start: int | None = None  # its connection's tcpi_bytes_retrans before it
    watched: int = -1  # progress seen at the last watchdog tick
    idle_s: float = 0.0
    task: asyncio.Task | None = None

    def acked(self) -> int:
        """Payload bytes the receiver acknowledged (exact while the flow runs)."""
        if self.sock is None or self.sock.fileno() < 0:
            return self.handed
        return max(0, self.handed - unacked_bytes(self.sock))


class FlowSender:
    """The outgoing flows and connection pools of an agent; a mixin of
    ``workload.agent.daemon.Agent``, which owns the state annotated here."""

    opts: AgentOptions
    log: logging.Logger
    tx_view: memoryview  # shared payload buffer of TX_CHUNK bytes
    send_flows: dict[str, SendFlow]
    pools: dict[Dest, Pool]
    slot_cursor: dict[tuple[int, int], int]  # (slot, slots) -> next of its source ports
    tasks: set[asyncio.Task]
    priority_ok: bool
    emit: Callable[[dict[str, Any]], None]

    # -- connections -------------------------------------------------------------------

    async def _connect_pool(self, req: ConnectRequest) -> dict[str, Any]:
        """Open connections to ``req``'s destination (of its ECMP slot, if given) until
        that pool has ``count``; the reply says how many it holds and how long the set-up
        took."""
        t0 = time.monotonic_ns()
        dest = (req.dst_ip, req.dst_port)
        pool = self.pools.setdefault(dest, Pool())
        want = max(0, req.count - pool.per_slot[req.slot])
        slot = (req.slot, req.slots)
        conns = await asyncio.gather(*(self._open(dest, *slot) for _ in range(want)))
        for conn in conns:
            pool.add(conn)
        return {
            "connections": pool.per_slot[req.slot],
            "opened": len(conns),
            "setup_ns": time.monotonic_ns() - t0,
        }

    async def _open(
        self, dest: Dest, slot: int | None = None, slots: int | None = None
    ) -> Connection:
        """One new connection to ``dest``, unmarked (the handshake is never starved),
        from the address this agent accepts flows on (a rail server's NIC: its own) and,
        given an ECMP ``slot`` of ``slots``, from a source port of that slot."""
        sock = open_flow_socket(0, 0, self.priority_ok, None, mark=False)
        try:
            self._bind(sock, slot, slots)
            async with asyncio.timeout(self.opts.connect_timeout_s):
                await asyncio.get_running_loop().sock_connect(sock, dest)
        except BaseException:
            sock.close()
            raise
        return Connection(sock, time.monotonic_ns(), slot=slot)

    def _bind(self, sock: socket.socket, slot: int | None, slots: int | None) -> None:
        """Bind ``sock`` to this agent's address and, for a ``slot``, to the next free
        source port of it (``slot_ports``; OSError when every one is taken)."""
        if slot is None or slots is None:
            if self.opts.ip != ANY_ADDRESS:
                sock.bind((self.opts.ip, 0))
            return
        cursor = self.slot_cursor.get((slot, slots), 0)
        for port in slot_ports(slot, slots, cursor):
            cursor += 1
            try:
                sock.bind((self.opts.ip, port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                continue
            self.slot_cursor[slot, slots] = cursor
            return
        raise OSError(errno.EADDRNOTAVAIL, f"no free source port of ECMP slot {slot}/{slots}")

    async def _take(
        self, dest: Dest, slot: int | None = None, slots: int | None = None
    ) -> tuple[Connection, bool]:
        """An idle live connection to ``dest`` of ECMP ``slot`` (True: newly opened
        because none was)."""
        pool = self.pools.setdefault(dest, Pool())
        while (conn := pool.pop_idle(slot)) is not None:
            if _alive(conn.sock):
                return conn, False
            conn.sock.close()
            pool.count(conn, -1)
        conn = await self._open(dest, slot, slots)
        pool.count(conn, 1)
        pool.on_demand += 1
        return conn, True

    def _give_back(self, dest: Dest, conn: Connection) -> None:
        """A message ended well: its connection is idle again."""
        conn.messages += 1
        self.pools[dest].idle.append(conn)

    def _drop(self, dest: Dest, conn: Connection) -> None:
        """A message failed or was cancelled: its connection is reset (SO_LINGER 0: the
        unsent rest of the message is discarded, not drained behind a FIN) and leaves
        the pool."""
        try:
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError as exc:  # already closed by the peer: a plain close does
            self.log.debug("SO_LINGER on a failed connection: %s", exc)
        conn.sock.close()
        self.pools[dest].count(conn, -1)

    def close_pools(self) -> None:
        """Close every idle connection (shutdown)."""
        for pool in self.pools.values():
            for conn in pool.idle:
                conn.sock.close()
                pool.count(conn, -1)
            pool.idle.clear()

    # -- flows -------------------------------------------------------------------------

    def _start_send(self, req: SendRequest) -> dict[str, Any]:
        """Register the flow and start its task; the reply does not wait for the flow."""
        if req.flow_id in self.send_flows:
            raise ProtocolError(f"send: flow_id {req.flow_id!r} was already sent by this agent")
        flow = SendFlow(req, req.level, req.rate_mbps, req.dscp)
        self.send_flows[req.flow_id] = flow
        task = flow.task = asyncio.get_running_loop().create_task(self._send(flow))
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return {}

    def _cancel(self, flow_id: str) -> bool:
        """Stop ``flow_id`` if it is under way (its connection is closed, not reused)."""
        flow = self.send_flows.get(flow_id)
        if flow is None or flow.task is None or flow.task.done():
            return False
        flow.task.cancel()
        self.emit(
            {"event": "flow_failed", "flow_id": flow_id, "side": "sender", "error": "cancelled"}
        )
        return True

    def _task_done(self, task: asyncio.Task) -> None:
        """Forget a finished flow task; a crash there is a bug and is logged with its trace."""
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.error("flow task crashed", exc_info=task.exception())

    async def _send(self, flow: SendFlow) -> None:
        """Take a connection, mark it, send header and payload, wait for the receiver's
        acknowledgement; report started/sent or failed."""
        req, start_ns = flow.req, time.monotonic_ns()
        dest, conn = (req.dst_ip, req.dst_port), None
        try:
            conn, fresh = await self._take(dest, req.slot, req.slots)
            flow.sock = sock = conn.sock
            self._mark(flow, sock)
            self._started(flow, sock, start_ns, fresh)
            flow.retrans_at_start = bytes_retransmitted(sock)
            await self._transfer(flow, sock)
            self.emit(
                {
                    "event": "flow_sent",
                    "flow_id": req.flow_id,
                    "t_ns": flow.confirmed_ns,
                    "written_ns": flow.written_ns,
                    "retrans_bytes": _retransmitted(flow, sock),
                }
            )
            self._give_back(dest, conn)
        except (OSError, TimeoutError) as exc:
            flow.handed = flow.acked()  # what really arrived, for stats
            if conn is not None:
                self._drop(dest, conn)
            self.emit(
                {
                    "event": "flow_failed",
                    "flow_id": req.flow_id,
                    "side": "sender",
                    "error": _describe(exc, self.opts.connect_timeout_s),
                }
            )
        except asyncio.CancelledError:
            if conn is not None:
                self._drop(dest, conn)
            raise
        finally:
            flow.sock = None

    def _mark(self, flow: SendFlow, sock: socket.socket) -> None:
        """The flow's tag, level and pacing on its connection, before its first byte."""
        mark_flow_socket(sock, flow.req.tag, flow.level, self.priority_ok, flow.dscp)
        set_pacing(sock, flow.rate_mbps)

    def _started(self, flow: SendFlow, sock: socket.socket, start_ns: int, fresh: bool) -> None:
        """``flow_started`` with the marking read back from the socket."""
        self.emit(
            {
                "event": "flow_started",
                "flow_id": flow.req.flow_id,
                "t_ns": start_ns,
                "tos": sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS),
                "priority": sock.getsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY),
                "pacing_bps": pacing_rate(sock),
                "new_connection": fresh,
                "src_port": sock.getsockname()[1],
            }
        )

    async def _transfer(self, flow: SendFlow, sock: socket.socket) -> None:
        """Header and the first payload in one send (one segment, no loop round), the
        rest as the socket takes it, then the acknowledgement."""
        loop = asyncio.get_running_loop()
        head = encode_header(flow.req.flow_id, flow.req.bytes)
        first = self.tx_view[: min(flow.req.bytes, TX_CHUNK)]
        try:
            sent = sock.sendmsg([head, first])  # an idle connection takes it at once
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(head):
            await loop.sock_sendall(sock, head[sent:])
            sent = len(head)
        flow.handed = sent - len(head)
        if flow.handed < flow.req.bytes:
            await self._wait_fd(flow, sock, loop.add_writer, loop.remove_writer, self._on_writable)
        else:
            flow.written_ns = time.monotonic_ns()
        await self._wait_fd(flow, sock, loop.add_reader, loop.remove_reader, self._on_readable)

    @staticmethod
    async def _wait_fd(
        flow: SendFlow, sock: socket.socket, add: Any, remove: Any, callback: Any
    ) -> None:
        """Run ``callback(flow, sock, done)`` on every readiness of the flow's socket until
        it resolves ``done`` (``flow.done``; plain callbacks: no coroutine step per
        send/recv)."""
        flow.done = done = asyncio.get_running_loop().create_future()
        fd = sock.fileno()
        add(fd, callback, flow, sock, done)
        try:
            await done
        finally:
            remove(fd)

    def _on_writable(self, flow: SendFlow, sock: socket.socket, done: asyncio.Future) -> None:
        """One send() of as much payload as the kernel takes; resolve when all is handed."""
        if done.done():
            return
        try:
            n = sock.send(self.tx_view[: min(flow.req.bytes - flow.handed, TX_CHUNK)])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            done.set_exception(exc)
            return
        flow.handed += n
        if flow.handed >= flow.req.bytes:
            flow.written_ns = time.monotonic_ns()
            done.set_result(None)

    @staticmethod
    def _on_readable(flow: SendFlow, sock: socket.socket, done: asyncio.Future) -> None:
        """The receiver answers the last byte with MESSAGE_ACK: that confirms the flow."""
        if done.done():
            return
        try:
            data = sock.recv(len(MESSAGE_ACK))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            done.set_exception(exc)
            return
        if data == MESSAGE_ACK:
            flow.confirmed_ns = time.monotonic_ns()
            done.set_result(None)
        elif not data:
            done.set_exception(ConnectionError("receiver closed before acknowledging"))
        else:
            done.set_exception(ConnectionError(f"receiver sent {data!r} instead of an ack"))

    def _set_level(self, tag: int, level: int) -> int:
        """Re-prioritise the flows of ``tag``; returns how many live sockets were changed.
        Flows not started yet are marked with the new level when they start."""
        changed = 0
        for flow in self.send_flows.values():
            if flow.req.tag != tag:
                continue
            flow.level = level
            if flow.sock is not None and self.priority_ok:
                flow.sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_PRIORITY, marking.skb_priority(level)
                )
                changed += 1
        return changed

    def _set_dscp(self, tag: int, dscp: int, unpace: bool) -> int:
        """Mark the flows of ``tag`` with ``dscp`` (and lift their pacing if ``unpace``);
        returns how many live sockets were re-marked (their priority set again after:
        IP_TOS resets it).  Flows not started yet are marked so when they start."""
        changed = 0
        for flow in self.send_flows.values():
            if flow.req.tag != tag:
                continue
            flow.dscp = dscp
            if unpace:
                flow.rate_mbps = None
            if flow.sock is not None:
                mark_flow_socket(flow.sock, tag, flow.level, self.priority_ok, dscp)
                if unpace:
                    set_pacing(flow.sock, None)
                changed += 1
        return changed

    def _set_rate(self, tag: int, dst_ip: str, rate_mbps: float | None) -> int:
        """Cap (None: uncap) the pacing of ``tag``'s flows to ``dst_ip``; returns how many
        live sockets changed.  Flows not started yet take the new rate when they start
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


def _alive(sock: socket.socket) -> bool:
    """Whether an idle connection still stands (the peer neither closed nor reset it)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False


def _retransmitted(flow: SendFlow, sock: socket.socket) -> int | None:
    """Bytes TCP sent again while ``flow`` ran on ``sock`` (None: the kernel does not
    say); the connection is the flow's alone from its first byte to its acknowledgement."""
    now = bytes_retransmitted(sock)
    if now is None or flow.retrans_at_start is None:
        return None
    return now - flow.retrans_at_start


def _describe(exc: OSError | TimeoutError, connect_timeout_s: float) -> str:
    """A failed flow's error text: the errno's name first (asyncio hides it in the text)."""
    if exc.errno:
        return f"{os.strerror(exc.errno)}: {exc}"
    return str(exc) or f"connect timed out after {connect_timeout_s:g} s"
