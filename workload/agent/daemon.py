r"""Per-host traffic agent: sends and receives the flows of replayed coflows.

Run inside each Mininet host (its network namespace) by ``coflowbed.emulation.agents.client``::

    python -m workload.agent --host h11 --control /abs/run/agents/h11.sock \
        --data-port 5001 --ip 10.0.1.1

It accepts flows on TCP ``--data-port`` and takes orders over one JSON-lines connection
on the Unix socket ``--control`` (protocol in ``workload.agent.proto``).  When both
listeners are up it prints ``READY <host>`` on stdout — the only thing it ever prints
there.  It exits when told to (``shutdown``), on SIGTERM/SIGINT, when its controlling
connection closes (the orchestrator died), or when nobody attaches within
``--attach-timeout``: an agent never outlives its orchestrator for long.

All times are ``time.monotonic_ns()``: one kernel clock shared by every namespace.
The hot paths (``_on_writable`` in ``workload.agent.send``, ``FlowReceiver.buffer_updated``)
do one syscall per call into/out of shared preallocated buffers and nothing per byte.

A flow ends at both sides together: the receiver closes its end once the last byte
arrived, and the sender reports ``flow_sent`` when it sees that close (its ``t_ns``;
``written_ns`` is when the last write returned, which with large send buffers can be
long before the data left the host).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import stat
import sys
import time
from pathlib import Path
from typing import Any

from workload.agent.options import AgentOptions
from workload.agent.proto import (
    ANY_ADDRESS,
    DATA_PORT,
    MAX_LINE_BYTES,
    UNIX_PATH_MAX,
    CancelRequest,
    ConnectRequest,
    FlowReceiver,
    HelloRequest,
    ProtocolError,
    RecvRecord,
    Request,
    SendRequest,
    SetDscpRequest,
    SetLevelRequest,
    SetRateRequest,
    ShutdownRequest,
    StatsRequest,
    can_set_priority,
    encode_line,
    pacing_rate,
    parse_request,
)
from workload.agent.send import TX_CHUNK, Dest, FlowSender, Pool, SendFlow

RX_BUFFER = 1 << 20  # shared receive buffer; payload is discarded
WATCHDOG_TICK_S = 0.5


class Agent(FlowSender):
    """The asyncio agent: data listener, control server, senders, watchdog."""

    def __init__(self, opts: AgentOptions) -> None:
        """Preallocate the buffers and the bookkeeping."""
        self.opts = opts
        self.log = logging.getLogger(f"agent.{self.opts.host}")
        self.tx_view = memoryview(bytes(TX_CHUNK))
        self.rx_view = memoryview(bytearray(RX_BUFFER))
        self.send_flows: dict[str, SendFlow] = {}
        self.pools: dict[Dest, Pool] = {}
        self.slot_cursor: dict[tuple[int, int], int] = {}
        self.recv_flows: dict[str, RecvRecord] = {}
        self.receivers: set[FlowReceiver] = set()
        self.tasks: set[asyncio.Task] = set()
        self.writer: asyncio.StreamWriter | None = None
        self.pending: list[bytes] = []  # event lines not yet written
        self.priority_ok = can_set_priority()
        self.data_port = self.opts.data_port
        self.exit_code = 0
        self.stopped = asyncio.Event()  # shutdown, signal, or the orchestrator went away
        self.wake = asyncio.Event()  # attached or stopped, whichever comes first

    def stop(self) -> None:
        """Make ``run`` return (idempotent)."""
        self.stopped.set()
        self.wake.set()

    def emit(self, event: dict[str, Any]) -> None:
        """Queue an event line for the orchestrator; one write per loop iteration carries
        all of them (an incast emits hundreds at once: fewer syscalls and wake-ups)."""
        if not self.pending and self.writer is not None:
            asyncio.get_running_loop().call_soon(self._flush)
        self.pending.append(encode_line(event))

    def _flush(self) -> None:
        """Write the queued events (kept until the orchestrator is attached)."""
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(b"".join(self.pending))
            self.pending.clear()

    async def run(self) -> int:
        """Serve until shutdown; returns the exit code."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        data = await loop.create_server(
            lambda: FlowReceiver(self), sock=_listen(self.opts), backlog=1024
        )
        self.data_port = data.sockets[0].getsockname()[1]
        _remove_stale_socket(self.opts.control)
        ctl = await asyncio.start_unix_server(
            self._control, path=str(self.opts.control), limit=MAX_LINE_BYTES
        )
        print(f"READY {self.opts.host}", flush=True)
        watchdog = loop.create_task(self._watchdog())
        try:
            await self._serve()
        finally:
            watchdog.cancel()
            await self._close(data, ctl)
        return self.exit_code

    async def _serve(self) -> None:
        """Wait for the orchestrator to attach, then until something stops the agent."""
        try:
            async with asyncio.timeout(self.opts.attach_timeout_s):
                await self.wake.wait()
        except TimeoutError:
            self.log.error(
                "no orchestrator attached within %.0f s; exiting", self.opts.attach_timeout_s
            )
            self.exit_code = 1
            return
        await self.stopped.wait()

    async def _close(self, *servers: asyncio.AbstractServer) -> None:
        """Close listeners, flows and the control connection; remove the socket file."""
        for server in servers:
            server.close()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=1.0)  # let cancelled flows close their sockets
        self.close_pools()
        for rx in list(self.receivers):
            if rx.transport is not None:
                rx.transport.abort()
        self.opts.control.unlink(missing_ok=True)
        if self.writer is not None:
            self._flush()
            await _drain_quietly(self.writer, self.log)

    async def _control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve the one control connection: requests in, replies and events out."""
        if self.writer is not None:
            writer.write(
                encode_line({"id": None, "ok": False, "error": "another orchestrator is attached"})
            )
            writer.close()
            return
        self.writer = writer
        self._flush()
        self.wake.set()
        try:
            await self._read_requests(reader, writer)
        finally:
            if not self.stopped.is_set():
                self.log.warning("control connection closed by the orchestrator; exiting")
                self.exit_code = 1
            self.stop()

    async def _read_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Answer each request line until EOF or shutdown."""
        while not self.stopped.is_set():
            try:
                line = await reader.readline()
            except ValueError as exc:  # over-long line: answer it, keep the agent alive
                writer.write(encode_line({"id": None, "ok": False, "error": f"request: {exc}"}))
                continue
            except ConnectionError as exc:
                self.log.warning("control connection failed: %s", exc)
                return
            if not line:
                return
            if line.strip():
                self._answer(line, writer)

    def _answer(self, line: bytes, writer: asyncio.StreamWriter) -> None:
        """Reply to one request line: at once, or (``connect``) once its connections are
        up, from a task; replies carry the request's id, so they may come out of order."""
        reply = self._parse(line)
        if isinstance(reply, dict):
            writer.write(encode_line(reply))
            return
        req_id, req = reply
        task = asyncio.get_running_loop().create_task(self._answer_connect(req_id, req, writer))
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    async def _answer_connect(
        self, req_id: int | str, req: ConnectRequest, writer: asyncio.StreamWriter
    ) -> None:
        """Open the pool of ``req``, then reply (an error reply if a connect failed)."""
        try:
            reply = {"id": req_id, "ok": True, **await self._connect_pool(req)}
        except (OSError, TimeoutError) as exc:
            reply = {
                "id": req_id,
                "ok": False,
                "error": f"connect to {req.dst_ip}:{req.dst_port}: "
                f"{exc or f'timed out after {self.opts.connect_timeout_s:g} s'}",
            }
        if not writer.is_closing():
            writer.write(encode_line(reply))

    def _parse(self, line: bytes) -> dict[str, Any] | tuple[int | str, ConnectRequest]:
        """The reply (with the request's id) for a request answered at once, ``(id,
        request)`` for a ``connect``; bad requests get ok=false, never an exception."""
        req_id: int | str | None = None
        try:
            req_id, req = parse_request(line)
            if isinstance(req, ConnectRequest):
                return req_id, req
            return {"id": req_id, "ok": True, **self._execute(req)}
        except ProtocolError as exc:
            req_id = getattr(exc, "req_id", req_id)
            return {"id": req_id, "ok": False, "error": str(exc)}
        except OSError as exc:  # e.g. setsockopt on a socket that just closed
            return {"id": req_id, "ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def _execute(self, req: Request) -> dict[str, Any]:
        """Carry out a valid request; returns the reply fields."""
        if isinstance(req, SendRequest):
            return self._start_send(req)
        if isinstance(req, CancelRequest):
            return {"cancelled": self._cancel(req.flow_id)}
        if isinstance(req, SetLevelRequest):
            return {"sockets": self._set_level(req.tag, req.level), "priority": self.priority_ok}
        if isinstance(req, SetDscpRequest):
            return {"sockets": self._set_dscp(req.tag, req.dscp, req.unpace)}
        if isinstance(req, SetRateRequest):
            return {"sockets": self._set_rate(req.tag, req.dst_ip, req.rate_mbps)}
        if isinstance(req, StatsRequest):
            return self._stats()
        if isinstance(req, HelloRequest):
            return {
                "host": self.opts.host,
                "pid": os.getpid(),
                "data_port": self.data_port,
                "priority": self.priority_ok,
                "t_ns": time.monotonic_ns(),
            }
        assert isinstance(req, ShutdownRequest)
        self.stop()
        return {}

    def _stats(self) -> dict[str, Any]:
        """Acknowledged bytes per outgoing flow and per tag, received bytes per incoming flow,
        SO_PRIORITY, pacing cap (bytes/s, None = uncapped) and IP_TOS of the live outgoing
        sockets."""
        sent = {fid: flow.acked() for fid, flow in self.send_flows.items()}
        pools = {
            f"{ip}:{port}": {"total": p.total, "idle": len(p.idle), "on_demand": p.on_demand}
            for (ip, port), p in self.pools.items()
        }
        by_tag: dict[str, int] = {}
        for fid, flow in self.send_flows.items():
            key = str(flow.req.tag)
            by_tag[key] = by_tag.get(key, 0) + sent[fid]
        received = {fid: rx.received for fid, rx in self.recv_flows.items()}
        live = {fid: flow.sock for fid, flow in self.send_flows.items() if flow.sock is not None}
        priority = {
            fid: sock.getsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY)
            for fid, sock in live.items()
        }
        return {
            "t_ns": time.monotonic_ns(),
            "connections": pools,
            "sent": sent,
            "sent_by_tag": by_tag,
            "received": received,
            "priority": priority,
            "pacing": {fid: pacing_rate(sock) for fid, sock in live.items()},
            "tos": {
                fid: sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) for fid, sock in live.items()
            },
        }

    async def _watchdog(self) -> None:
        """Fail flows that made no progress for ``stall_timeout_s`` (a peer that vanished)."""
        limit = self.opts.stall_timeout_s
        while limit > 0:
            await asyncio.sleep(WATCHDOG_TICK_S)  # a periodic tick, not synchronisation
            for flow in self.send_flows.values():
                if (
                    flow.done is not None
                    and not flow.done.done()
                    and _stalled(flow, flow.acked(), limit)
                ):
                    flow.done.set_exception(TimeoutError(f"no progress for {limit:g} s"))
            for rx in list(self.receivers):
                if rx.busy and _stalled(rx, rx.seen, limit):
                    rx._fail(f"no progress for {limit:g} s")


def _stalled(item: SendFlow | FlowReceiver, progress: int, limit: float) -> bool:
    """Advance ``item``'s idle time by one tick unless ``progress`` moved; True past ``limit``."""
    if progress != item.watched:
        item.watched, item.idle_s = progress, 0.0
        return False
    item.idle_s += WATCHDOG_TICK_S
    return item.idle_s >= limit


def _listen(opts: AgentOptions) -> socket.socket:
    """The bound data socket (create_server calls listen with our backlog)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((opts.ip, opts.data_port))
    except OSError as exc:
        sock.close()
        raise SystemExit(
            f"agent {opts.host}: --data-port {opts.data_port} on {opts.ip}: {exc.strerror}"
        ) from exc
    return sock


def _remove_stale_socket(path: Path) -> None:
    """Remove a socket file left by a crashed agent; refuse to remove anything else."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SystemExit(f"agent: --control {path}: exists and is not a socket")
    path.unlink()


async def _drain_quietly(writer: asyncio.StreamWriter, log: logging.Logger) -> None:
    """Flush the last replies and close; a peer already gone is only worth a debug line."""
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), timeout=1.0)
    except (ConnectionError, TimeoutError) as exc:
        log.debug("control connection gone while flushing: %r", exc)


def parse_args(argv: list[str] | None = None) -> AgentOptions:
    """Options from the command line; bad values end with a one-line error (exit 2)."""
    p = argparse.ArgumentParser(
        prog="python -m workload.agent", description=__doc__.splitlines()[0]
    )
    p.add_argument("--host", required=True, help="host name (h11, ...)")
    p.add_argument(
        "--control", required=True, type=Path, help="absolute path of the control Unix socket"
    )
    p.add_argument(
        "--data-port", type=int, default=DATA_PORT, help="TCP port for incoming flows (0: any)"
    )
    p.add_argument("--ip", default=ANY_ADDRESS, help="address to accept flows on")
    p.add_argument("--connect-timeout", type=float, default=5.0, help="seconds per TCP connect")
    p.add_argument(
        "--stall-timeout", type=float, default=60.0, help="fail flows idle this long (0: never)"
    )
    p.add_argument(
        "--attach-timeout", type=float, default=60.0, help="exit if no orchestrator attaches"
    )
    a = p.parse_args(argv)
    if not a.control.is_absolute():
        p.error(f"--control {a.control}: must be an absolute path (agents run in other namespaces)")
    if len(os.fsencode(a.control)) > UNIX_PATH_MAX:
        p.error(f"--control {a.control}: longer than {UNIX_PATH_MAX} bytes (Unix socket limit)")
    if not a.control.parent.is_dir():
        p.error(f"--control {a.control}: directory {a.control.parent} does not exist")
    if not 0 <= a.data_port <= 65535:
        p.error(f"--data-port {a.data_port}: must be 0..65535")
    return AgentOptions(
        a.host, a.control, a.data_port, a.ip, a.connect_timeout, a.stall_timeout, a.attach_timeout
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: log to stderr (stdout carries only the READY line)."""
    opts = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname).1s %(name)s: %(message)s",
    )
    return asyncio.run(Agent(opts).run())
