"""Clients of the controller's control API (JSON lines on a Unix socket): the blocking
``ControllerClient`` (one request at a time, a hard timeout on every call) for the
orchestrator, tests and benchmarks, and the ``PipelinedClient`` the orchestrator's
scheduling requests go through (requests sent without waiting for earlier answers)."""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from controller.coflow_table import TagEntry
from controller.messages import Resume, Resumed
from controller.routing import FabricEvents
from controller.stats import (
    MeterRow,
    PortCount,
    Status,
    TagCount,
    meters_from_wire,
    ports_from_wire,
    tags_from_wire,
)


class ControllerError(RuntimeError):
    """The controller answered ``ok: false`` (the message is its error)."""


class ControllerClient:
    """One connection to the control API; reconnects lazily after errors."""

    def __init__(self, socket_path: Path, timeout: float = 10.0) -> None:
        """Client of the API at ``socket_path``; ``timeout`` bounds every call."""
        self.path, self.timeout = Path(socket_path), timeout
        self._sock: socket.socket | None = None
        self._buf = b""

    def __enter__(self) -> ControllerClient:
        """Context manager: closes on exit."""
        return self

    def __exit__(self, *exc) -> None:
        """Close the connection."""
        self.close()

    def close(self) -> None:
        """Close the connection (a later call reconnects)."""
        if self._sock is not None:
            self._sock.close()
        self._sock, self._buf = None, b""

    def _connect(self) -> socket.socket:
        """The open connection, connecting first if needed."""
        if self._sock is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(str(self.path))
            except OSError:
                s.close()
                raise
            self._sock = s
        return self._sock

    def call(self, request: dict, timeout: float | None = None) -> dict:
        """Send one request, return the reply; ControllerError when ``ok`` is false,
        OSError/TimeoutError when the controller cannot be reached in time.  A
        connection that a restarted controller's predecessor held is found dead at the
        first send: connected again once (every op of this client is idempotent)."""
        if self._sock is not None:
            try:
                return self._call(request, timeout)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                pass  # closed by _call; a new connection below
            except ConnectionError as exc:
                if "closed the connection" not in str(exc):
                    raise
        return self._call(request, timeout)

    def _call(self, request: dict, timeout: float | None) -> dict:
        """One request on the (new or open) connection."""
        try:
            sock = self._connect()
            sock.settimeout(timeout or self.timeout)
            sock.sendall(json.dumps(request).encode() + b"\n")
            while b"\n" not in self._buf:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError(f"{self.path}: controller closed the connection")
                self._buf += chunk
        except BaseException:
            self.close()  # a half-read reply would desynchronise the stream
            raise
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ControllerError(reply.get("error", "unknown error"))
        return reply

    def status(self) -> Status:
        """Connected switches, readiness, levels."""
        return Status.from_wire(_reply_body(self.call({"op": "status"})))

    def wait_ready(self, timeout: float) -> Status:
        """Block until the controller reports ready (every switch connected and
        installed); TimeoutError after ``timeout`` s.  The controller signals readiness
        itself (op ``wait_ready`` blocks on a condition there)."""
        reply = self.call({"op": "wait_ready", "timeout_s": timeout}, timeout + self.timeout)
        st = Status.from_wire(_reply_body(reply))
        if not st.ready:
            raise TimeoutError(
                f"controller not ready after {timeout:.0f} s (connected: {list(st.switches)})"
            )
        return st

    def set(self, entries: Sequence[TagEntry], timeout: float | None = None) -> dict:
        """Install/replace tag entries; ``{"applied_s": s, "written": n}``."""
        return self.call({"op": "set", "entries": [e.to_wire() for e in entries]}, timeout)

    def clear(self, tags: Sequence[int], timeout: float | None = None) -> dict:
        """Remove the entries and meters of ``tags``."""
        return self.call({"op": "clear", "tags": list(tags)}, timeout)

    def tag_stats(self) -> dict[int, TagCount]:
        """Bytes and packets of every active tag."""
        return tags_from_wire(self.call({"op": "tag_stats"}))

    def port_stats(self) -> dict[str, dict[int, PortCount]]:
        """Every port's counters, per switch."""
        return ports_from_wire(self.call({"op": "port_stats"}))

    def fabric_events(self) -> FabricEvents:
        """Every leaf-spine link change the controller saw and its reroute, and every
        switch (re)connection."""
        return FabricEvents.from_wire(self.call({"op": "fabric_events"}))

    def meter_stats(self) -> list[MeterRow]:
        """Every leaf meter's counters (retired ones with their last counters)."""
        return meters_from_wire(self.call({"op": "meter_stats"}))


def _reply_body(reply: dict) -> dict:
    """A reply without its ``ok`` flag (the message itself)."""
    return {k: v for k, v in reply.items() if k != "ok"}


class PipelinedClient:
    """One connection on which requests go out without waiting for the answers to
    earlier ones; the controller answers a connection's requests one by one, in order,
    and a reader thread settles each request's future with its reply (ControllerError
    when ``ok`` is false).  Any thread may ``submit``; the order of submission is the
    order of processing.  A lost connection fails every pending and later request."""

    def __init__(self, socket_path: Path, timeout: float = 10.0) -> None:
        """Connect to the API at ``socket_path`` (``timeout`` bounds the connect)."""
        self.path = Path(socket_path)
        self.error: BaseException | None = None
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(self.path))
        except OSError:
            self._sock.close()
            raise
        self._sock.settimeout(None)  # the reader blocks; callers bound their waits
        self._pending: deque[Future] = deque()
        self._send = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="api-reader", daemon=True)
        self._reader.start()

    def submit(self, request: dict) -> Future:
        """Send ``request`` now; the future settles with its reply."""
        done: Future = Future()
        with self._send:
            if self.error is not None:
                raise ConnectionError(f"{self.path}: connection lost: {self.error}")
            self._pending.append(done)
            self._sock.sendall(json.dumps(request).encode() + b"\n")
        return done

    def close(self) -> None:
        """Close the connection (pending requests fail) and stop the reader."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone
        self._reader.join(5.0)
        self._sock.close()

    def _read(self) -> None:
        """Settle pending futures in order until the connection ends."""
        try:
            with self._sock.makefile("rb") as rfile:
                for line in rfile:
                    self._settle(self._pending.popleft(), json.loads(line))
            raise ConnectionError("controller closed the connection")
        except (OSError, ValueError, IndexError) as exc:
            with self._send:
                self.error = exc
                pending, self._pending = list(self._pending), deque()
            for done in pending:
                done.set_exception(ConnectionError(f"{self.path}: connection lost: {exc}"))

    @staticmethod
    def _settle(done: Future, reply: dict) -> None:
        """One reply to its request's future."""
        if reply.get("ok"):
            done.set_result(reply)
        else:
            done.set_exception(ControllerError(reply.get("error", "unknown error")))


class ResumableClient:
    """The orchestrator's scheduling connection (a ``PipelinedClient``) made to survive a
    controller restart: every request is kept until it is answered.  ``hold`` (before
    the controller is restarted) keeps the lost connection from failing them;
    ``resume`` (once the new controller is ready) asks it for the answers the old one
    had decided (``Resume``: the journal of the requests it logged) and sends the
    requests after those again, in order."""

    def __init__(self, socket_path: Path, timeout: float = 10.0) -> None:
        """Connect to the API at ``socket_path``."""
        self.path, self.timeout = Path(socket_path), timeout
        self.answered = 0  # requests answered so far
        # re-entrant: a reply that came before its callback was added settles in ``submit``
        self._lock = threading.RLock()
        self._unanswered: deque[tuple[dict, Future]] = deque()
        self._unsent: deque[tuple[dict, Future]] = deque()  # held: to send on resume
        self._held = False
        self._failed: BaseException | None = None
        self._conn = PipelinedClient(self.path, timeout)

    def submit(self, request: dict) -> Future:
        """Send ``request`` (held: once resumed); the future settles with its reply."""
        done: Future = Future()
        with self._lock:
            if self._failed is not None:
                raise ConnectionError(f"{self.path}: no controller to resume: {self._failed}")
            self._unanswered.append((request, done))
            if self._held:
                self._unsent.append((request, done))
            else:
                try:
                    self._send(request, done)
                except ConnectionError:
                    self._unanswered.pop()
                    raise
        return done

    def _send(self, request: dict, done: Future) -> None:
        """On the current connection (lock held)."""
        conn = self._conn
        conn.submit(request).add_done_callback(partial(self._settled, conn, done))

    def _settled(self, conn: PipelinedClient, done: Future, raw: Future) -> None:
        """A reply (or a lost connection) for the oldest unanswered request."""
        with self._lock:
            if conn is not self._conn or (
                self._held and isinstance(raw.exception(), ConnectionError)
            ):
                return  # kept for ``resume``
            _request, head = self._unanswered.popleft()
            assert head is done, "replies arrive in request order"
            self.answered += 1
        exc = raw.exception()
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(raw.result())

    def hold(self) -> None:
        """The controller is about to go away: keep what is unanswered, send nothing."""
        with self._lock:
            self._held = True

    def resume(self) -> tuple[int, int]:
        """Connect to the restarted controller; settle the requests it had answered in
        its event log, send the others again.  (answers given back, requests resent)."""
        conn = PipelinedClient(self.path, self.timeout)
        reply = conn.submit({"op": "resume", **Resume(self.answered).to_wire()}).result(
            self.timeout
        )
        if not reply.get("ok"):
            raise ControllerError(reply.get("error", "resume failed"))
        replies = Resumed.from_wire(_reply_body(reply)).replies
        with self._lock:
            if len(replies) > len(self._unanswered):
                raise RuntimeError(
                    f"resume: the controller logged {len(replies)} requests, "
                    f"{len(self._unanswered)} were unanswered"
                )
            old, self._conn = self._conn, conn
            given = [self._unanswered.popleft()[1] for _ in replies]
            self.answered += len(given)
            for done, r in zip(given, replies, strict=True):  # before any later answer
                PipelinedClient._settle(done, r)
            # a reply can settle (and its callback submit more) inside ``_send``: send
            # from a queue of its own, which later submits join while still held
            self._unsent, resent = deque(self._unanswered), 0
            while self._unsent:
                self._send(*self._unsent.popleft())
                resent += 1
            self._held = False
        old.close()
        return len(given), resent

    def abandon(self, exc: BaseException) -> None:
        """The restart failed: every unanswered request (and any later one) fails."""
        with self._lock:
            self._failed, self._held = exc, False
            pending, self._unanswered = list(self._unanswered), deque()
            self._unsent.clear()
        for _request, done in pending:
            if not done.done():
                done.set_exception(
                    ConnectionError(f"{self.path}: controller restart failed: {exc}")
                )

    def close(self) -> None:
        """Close the connection (unanswered requests fail)."""
        self._conn.close()
