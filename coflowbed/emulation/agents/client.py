"""Orchestrator side of the per-host traffic agents (``workload.agent``).

``AgentSet(hosts, run_dir, data_port)`` starts one agent per host (``start``), waits for
each ``READY`` line, attaches to every agent's control socket and then offers blocking,
thread-safe calls (``send``, ``send_many``, ``set_level``, ``set_rate``, ``stats``) and one
``queue.Queue`` of ``AgentEvent`` s (``events``, ``next_event``, ``event_queue``).

Threading model: one daemon reader thread per agent connection routes replies to the
waiting caller's future and events to the queue.  Any thread may call the methods (an
asyncio orchestrator: ``asyncio.to_thread``).

A host is anything with ``.name``, ``.IP()`` and ``.popen(args, **kw)`` returning a
``subprocess.Popen`` — a Mininet host (the agent then runs in its network namespace)
or, in unit tests, a local stand-in whose ``popen`` is ``subprocess.Popen``.

The data types live in ``coflowbed.emulation.agents.types`` and the process lifecycle (spawn, READY,
end by PID) in ``coflowbed.emulation.agents.process``; both are re-exported here.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import json
import logging
import queue
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from coflowbed.emulation.agents.process import (
    HOST_NAME,
    REPO_ROOT,
    close_agent,
    end_process,
    spawn_agent,
    wait_ready,
)
from coflowbed.emulation.agents.types import (
    AgentError,
    AgentEvent,
    AgentHandle,
    AgentHost,
    AgentStats,
    PoolOrder,
    PoolReport,
    SendOrder,
)
from workload.agent.proto import (
    DATA_PORT,
    CancelRequest,
    ConnectRequest,
    HelloRequest,
    Request,
    SendRequest,
    SetDscpRequest,
    SetLevelRequest,
    SetRateRequest,
    ShutdownRequest,
    StatsRequest,
    encode_line,
    request_dict,
)

__all__ = [
    "AgentError",
    "AgentEvent",
    "AgentHost",
    "AgentSet",
    "AgentStats",
    "CONNECT_TIMEOUT_S",
    "HOST_NAME",
    "PoolOrder",
    "PoolReport",
    "REPO_ROOT",
    "SendOrder",
]

log = logging.getLogger("coflowbed.emulation.agents.client")

# A TCP connect may wait this long (as long as the stall timeout).  Agents connect unmarked,
# so the handshake is not starved by strict priority; the margin is for a loaded machine,
# where 5 s connects timed out on the busy FB window before that change.
CONNECT_TIMEOUT_S = 60.0


class AgentSet:
    """The traffic agents of one run (see the module docstring for the threading model)."""

    def __init__(
        self,
        hosts: Iterable[AgentHost],
        run_dir: Path,
        data_port: int = DATA_PORT,
        *,
        log_dir: Path | None = None,
        data_ports: Mapping[str, int] | None = None,
        request_timeout_s: float = 5.0,
        stop_timeout_s: float = 5.0,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        stall_timeout_s: float = 60.0,
        event_queue: queue.Queue | None = None,
        python: str = sys.executable,
    ) -> None:
        """Configure; nothing starts before ``start``.

        Control sockets go to ``run_dir/agents/<host>.sock`` (keep ``run_dir`` short: a
        socket path has at most 107 bytes), agent logs to ``log_dir/<host>.log`` (default
        ``run_dir/agents``).  ``data_ports`` overrides ``data_port`` per host (0: the
        kernel picks one; ``address`` tells which).  Events go to ``event_queue`` if
        given (to merge them with other sources), else to a private queue.
        """
        self._hosts = list(hosts)
        self.sock_dir = (
            Path(run_dir).resolve() / "agents"
        )  # absolute: agents run in other namespaces
        self.log_dir = Path(log_dir).resolve() if log_dir is not None else self.sock_dir
        self.ports = {h.name: (data_ports or {}).get(h.name, data_port) for h in self._hosts}
        self.request_timeout_s, self.stop_timeout_s = request_timeout_s, stop_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.agent_args = [
            "--connect-timeout",
            str(connect_timeout_s),
            "--stall-timeout",
            str(stall_timeout_s),
        ]
        self.event_queue: queue.Queue[AgentEvent] = (
            event_queue if event_queue is not None else queue.Queue()
        )
        self.python = python
        self._agents: dict[str, AgentHandle] = {}
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()
        self._stopping = False
        self.lost: dict[str, str] = {}  # host -> why its agent went away during the run
        self._any_lost = threading.Event()

    def __enter__(self) -> AgentSet:
        """Use as a context manager: ``stop`` on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop every agent, whatever happened."""
        self.stop()

    # -- start -------------------------------------------------------------------------

    def start(self, ready_timeout_s: float = 15.0) -> None:
        """Start one agent per host and attach to all within ``ready_timeout_s``;
        AgentError (and every agent stopped) on failure."""
        self.sock_dir.mkdir(parents=True, exist_ok=True)
        self.sock_dir.chmod(0o700)  # the control sockets: owner only
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # an agent exits if nobody attaches in time: give it longer than we wait for all
        attach = ["--attach-timeout", str(ready_timeout_s + 30.0)]
        try:
            started = [self._spawn(h, self.ports[h.name], attach) for h in self._hosts]
            wait_ready(started, ready_timeout_s)
            for agent in started:
                self._attach(agent)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, host: AgentHost, port: int, extra: list[str]) -> AgentHandle:
        """Launch the agent process of ``host`` (argument list: no shell) and register it."""
        agent = spawn_agent(
            host,
            port,
            [*self.agent_args, *extra],
            taken=self._agents,
            sock_dir=self.sock_dir,
            log_dir=self.log_dir,
            python=self.python,
        )
        self._agents[agent.name] = agent
        return agent

    def _attach(self, agent: AgentHandle) -> None:
        """Connect to the agent's control socket, start its reader, ask who it is."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.request_timeout_s)  # bounds connect and every sendall
        try:
            sock.connect(str(agent.control))
        except OSError as exc:
            sock.close()
            raise AgentError(f"agent {agent.name}: control socket {agent.control}: {exc}") from exc
        agent.sock, agent.alive = sock, True
        agent.reader = threading.Thread(
            target=self._read_loop, args=(agent, sock), name=f"agent-{agent.name}", daemon=True
        )
        agent.reader.start()
        hello = self._request(agent.name, HelloRequest())
        if hello.get("host") != agent.name:
            raise AgentError(f"agent {agent.name}: socket answered as {hello.get('host')!r}")
        agent.data_port = hello["data_port"]
        if not hello["priority"]:
            log.warning(
                "agent %s may not set SO_PRIORITY (needs CAP_NET_ADMIN): host NIC "
                "priorities stay at level 0",
                agent.name,
            )

    # -- reading -----------------------------------------------------------------------

    def _read_loop(self, agent: AgentHandle, sock: socket.socket) -> None:
        """Reader thread of ``agent`` (control socket ``sock``): route replies to their
        futures and events to the queue."""
        buf, error = b"", "control connection closed"
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                continue  # idle; the timeout only bounds sendall
            except OSError as exc:
                error = f"control connection: {exc}"
                break
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                self._dispatch(agent, line)
        self._lost(agent, error)

    def _dispatch(self, agent: AgentHandle, line: bytes) -> None:
        """Handle one line from ``agent``."""
        try:
            msg = json.loads(line)
        except ValueError:
            log.error("agent %s sent a line that is not JSON: %r", agent.name, line[:200])
            return
        if "event" in msg and "id" not in msg:
            kind = msg.pop("event")
            self.event_queue.put(AgentEvent(agent.name, kind, msg.pop("flow_id", None), msg))
            return
        fut = agent.pending.pop(msg.get("id"), None)
        if fut is None:
            log.error("agent %s: reply to no pending request: %s", agent.name, msg)
        else:
            _settle(agent, fut, msg)

    def _lost(self, agent: AgentHandle, error: str) -> None:
        """The connection ended: fail waiting requests; report it unless we are stopping."""
        agent.alive = False
        for fut in list(agent.pending.values()):
            _settle(agent, fut, AgentError(f"agent {agent.name}: {error}"))
        agent.pending.clear()
        if not self._stopping:
            log.error("agent %s: %s", agent.name, error)
            self.lost[agent.name] = error
            self._any_lost.set()
            self.event_queue.put(AgentEvent(agent.name, "agent_lost", None, {"error": error}))

    def wait_lost(self, timeout_s: float) -> dict[str, str]:
        """The agents lost during the run (host -> why), waiting up to ``timeout_s`` for
        the first when none is yet (a flow failing at a killed agent's peer may be
        reported before the killed agent's own connection is seen closed)."""
        self._any_lost.wait(timeout_s)
        return dict(self.lost)

    # -- requests ----------------------------------------------------------------------

    def _request(self, host: str, req: Request, timeout_s: float | None = None) -> dict[str, Any]:
        """Send ``req`` to ``host``'s agent and wait for its reply (AgentError if not ok)."""
        (fut,) = self._submit(host, req)
        return self._reply(host, req, fut, time.monotonic() + (timeout_s or self.request_timeout_s))

    def _submit(self, host: str, *reqs: Request) -> list[concurrent.futures.Future]:
        """Write ``reqs`` to ``host``'s agent in one write; each future gets its reply."""
        agent = self._agent(host)
        futs, lines = [], []
        for req in reqs:
            with self._ids_lock:
                req_id = next(self._ids)
            fut: concurrent.futures.Future = concurrent.futures.Future()
            agent.pending[req_id] = fut
            fut.add_done_callback(functools.partial(_forget_request, agent.pending, req_id))
            futs.append(fut)
            lines.append(encode_line(request_dict(req_id, req)))
        if agent.sock is None:  # alive agents are attached: not reached
            raise AgentError(f"agent {host}: no control connection")
        try:
            with agent.write_lock:
                agent.sock.sendall(b"".join(lines))
        except OSError as exc:
            for fut in futs:
                fut.cancel()
            raise AgentError(f"agent {host}: control connection: {exc}") from exc
        return futs

    @staticmethod
    def _reply(
        host: str, req: Request, fut: concurrent.futures.Future, deadline: float
    ) -> dict[str, Any]:
        """The reply in ``fut`` by ``deadline`` (monotonic s); AgentError if late or not ok."""
        try:
            reply = fut.result(max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError as exc:
            fut.cancel()  # its done-callback forgets the request
            raise AgentError(f"agent {host}: no reply to {type(req).__name__} in time") from exc
        if not reply["ok"]:
            raise AgentError(f"agent {host}: {reply['error']}")
        return reply

    def _agent(self, host: str) -> AgentHandle:
        """The live agent of ``host`` or AgentError."""
        agent = self._agents.get(host)
        if agent is None:
            raise AgentError(
                f"host {host!r}: no agent (started: {', '.join(self._agents) or 'none'})"
            )
        if not agent.alive:
            raise AgentError(f"agent {host}: not connected (exited or stopped)")
        return agent

    @property
    def hosts(self) -> list[str]:
        """Names of the hosts with an agent."""
        return list(self._agents)

    def address(self, host: str) -> tuple[str, int]:
        """``(ip, data port)`` where ``host``'s agent accepts flows."""
        agent = self._agent(host)
        return agent.ip, agent.data_port

    def pid(self, host: str) -> int:
        """PID of ``host``'s agent process."""
        return self._agents[host].proc.pid

    def send(
        self,
        host: str,
        flow_id: str,
        dst_ip: str,
        dst_port: int,
        nbytes: int,
        tag: int,
        level: int,
        rate_mbps: float | None = None,
    ) -> None:
        """Have ``host`` send ``nbytes`` to ``dst_ip:dst_port``, paced at ``rate_mbps``
        Mbit/s if given; returns once the agent took the order (progress arrives as
        events). ValueError for bad arguments."""
        self._request(host, SendRequest(flow_id, dst_ip, dst_port, nbytes, tag, level, rate_mbps))

    def send_many(self, orders: Iterable[SendOrder]) -> None:
        """Several ``send`` s at once.  Every agent gets its orders in one write and all
        are written before any reply is awaited, so flows released together start
        together; raises on the first order an agent refused (the others still run)."""
        by_host: dict[str, list[SendRequest]] = {}
        for o in orders:  # validate every order before sending any
            if not isinstance(o, SendOrder):
                raise TypeError(f"send_many: {o!r} is not a SendOrder")
            by_host.setdefault(o.host, []).append(
                SendRequest(
                    o.flow_id,
                    o.dst_ip,
                    o.dst_port,
                    o.nbytes,
                    o.tag,
                    o.level,
                    o.rate_mbps,
                    o.dscp,
                    o.slot,
                    o.slots,
                )
            )
        for host in by_host:
            self._agent(host)
        submitted = [(host, reqs, self._submit(host, *reqs)) for host, reqs in by_host.items()]
        deadline = time.monotonic() + self.request_timeout_s
        for host, reqs, futs in submitted:
            for req, fut in zip(reqs, futs):
                self._reply(host, req, fut, deadline)

    def connect(self, orders: Iterable[PoolOrder], timeout_s: float | None = None) -> PoolReport:
        """Set the connection pools up before the iteration (as NCCL does at communicator
        init): every agent gets its orders in one write, the pools open in parallel, and
        this returns once all are up (AgentError naming the first that failed)."""
        by_host: dict[str, list[ConnectRequest]] = {}
        for o in orders:  # validate every order before sending any
            req = ConnectRequest(o.dst_ip, o.dst_port, o.count, o.slot, o.slots)
            by_host.setdefault(o.src, []).append(req)
        for host in by_host:
            self._agent(host)
        t0 = time.monotonic()
        submitted = [(host, reqs, self._submit(host, *reqs)) for host, reqs in by_host.items()]
        deadline = t0 + (timeout_s or self.connect_timeout_s)
        total = sum(
            int(self._reply(host, req, fut, deadline)["connections"])
            for host, reqs, futs in submitted
            for req, fut in zip(reqs, futs)
        )
        pairs = sum(len(reqs) for reqs in by_host.values())
        return PoolReport(pairs, total, time.monotonic() - t0)

    def send_to(
        self,
        src: str,
        dst: str,
        flow_id: str,
        nbytes: int,
        tag: int,
        level: int,
        rate_mbps: float | None = None,
    ) -> None:
        """``send`` from host ``src`` to host ``dst``'s agent."""
        self.send(src, flow_id, *self.address(dst), nbytes, tag, level, rate_mbps)

    def cancel(self, host: str, flow_id: str) -> bool:
        """Stop ``host``'s outgoing flow ``flow_id``; True if it was under way (both ends
        then report it failed)."""
        return bool(self._request(host, CancelRequest(flow_id))["cancelled"])

    def cancel_many(self, flows: Iterable[tuple[str, str]]) -> int:
        """``cancel`` for every ``(host, flow_id)``, one write per agent and all written
        before any reply is awaited; returns how many were under way."""
        by_host: dict[str, list[CancelRequest]] = {}
        for host, flow_id in flows:
            by_host.setdefault(host, []).append(CancelRequest(flow_id))
        submitted = [(host, reqs, self._submit(host, *reqs)) for host, reqs in by_host.items()]
        deadline = time.monotonic() + self.request_timeout_s
        return sum(
            bool(self._reply(host, req, fut, deadline)["cancelled"])
            for host, reqs, futs in submitted
            for req, fut in zip(reqs, futs)
        )

    def set_level(self, host: str, tag: int, level: int) -> int:
        """Move ``host``'s live sockets of ``tag`` to ``level``; returns how many moved."""
        return int(self._request(host, SetLevelRequest(tag, level))["sockets"])

    def set_dscp(self, host: str, tag: int, dscp: int, unpace: bool = False) -> int:
        """Mark ``host``'s flows of ``tag`` with ``dscp`` from now on (and lift their
        pacing if ``unpace``); returns how many live sockets were re-marked."""
        return int(self._request(host, SetDscpRequest(tag, dscp, unpace))["sockets"])

    def set_rate(self, host: str, tag: int, dst_ip: str, rate_mbps: float | None) -> int:
        """Cap the pacing of ``host``'s flows of ``tag`` to ``dst_ip`` at ``rate_mbps`` Mbit/s
        (None lifts the cap); returns how many live sockets changed.  Flows ordered but not
        connected yet start at the new rate.  ValueError for bad arguments."""
        return int(self._request(host, SetRateRequest(tag, dst_ip, rate_mbps))["sockets"])

    def stats(self, host: str) -> AgentStats:
        """Bytes acknowledged/received so far on ``host``."""
        r = self._request(host, StatsRequest())
        by_tag = {int(tag): n for tag, n in r["sent_by_tag"].items()}
        return AgentStats(
            host,
            r["t_ns"],
            r["sent"],
            by_tag,
            r["received"],
            r["priority"],
            r["pacing"],
            r["connections"],
            r["tos"],
        )

    def next_event(self, timeout_s: float) -> AgentEvent:
        """The next event, waiting at most ``timeout_s`` (AgentError when none came)."""
        try:
            return self.event_queue.get(timeout=timeout_s)
        except queue.Empty:
            raise AgentError(f"no agent event within {timeout_s:g} s") from None

    def events(self, timeout_s: float) -> list[AgentEvent]:
        """Every event already queued, or else the first one within ``timeout_s``
        (an empty list when none came)."""
        try:
            out = [self.event_queue.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while True:
            try:
                out.append(self.event_queue.get_nowait())
            except queue.Empty:
                return out

    # -- stop --------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask every agent to shut down, then end stragglers by PID; idempotent."""
        self._stopping = True
        asked = set()
        for agent in self._agents.values():
            if agent.alive:
                try:
                    self._request(agent.name, ShutdownRequest(), timeout_s=self.stop_timeout_s)
                    asked.add(agent.name)
                except AgentError as exc:
                    log.warning(
                        "agent %s: shutdown request failed (%s); terminating it", agent.name, exc
                    )
        for agent in self._agents.values():
            end_process(agent, agent.name in asked, self.stop_timeout_s)
            close_agent(agent)
        self._agents.clear()


def _settle(agent: AgentHandle, fut: concurrent.futures.Future, outcome: Any) -> None:
    """Complete ``fut`` with a reply or an exception, unless its caller gave up (timed out)."""
    try:
        if isinstance(outcome, BaseException):
            fut.set_exception(outcome)
        else:
            fut.set_result(outcome)
    except concurrent.futures.InvalidStateError:
        log.warning("agent %s: answer came after the request timed out: %s", agent.name, outcome)


def _forget_request(
    pending: dict[int, concurrent.futures.Future], req_id: int, _fut: concurrent.futures.Future
) -> None:
    """Done callback of a request's future: it no longer waits for a reply."""
    pending.pop(req_id, None)
