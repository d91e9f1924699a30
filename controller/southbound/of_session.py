"""One OpenFlow connection seen from threads that must wait for answers.

os-ken delivers replies to the app's event thread; API threads send requests and wait
here for the matching reply (by xid) with a hard timeout.  Writes are confirmed with a
barrier: OpenFlow processes messages in order, so a barrier reply means every earlier
message was applied, and an error for one of them has arrived before it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from controller.southbound.base import SouthboundError

log = logging.getLogger("controller.southbound")


@dataclass
class _Waiter:
    """A pending request: replies collected until the last part arrives."""

    done: threading.Event = field(default_factory=threading.Event)
    replies: list = field(default_factory=list)
    error: str | None = None


class OFSession:
    """Send/wait helper around one os-ken Datapath (thread-safe)."""

    def __init__(self, dp, name: str) -> None:
        """Wrap datapath ``dp`` of switch ``name``."""
        self.dp, self.name = dp, name
        self._lock = threading.Lock()
        self._waiters: dict[int, _Waiter] = {}
        self._errors: dict[int, str] = {}  # xid -> error of a write not yet checked
        self.closed = False

    def _send(self, msg) -> int:
        """Assign an xid and queue ``msg``; the caller holds the lock."""
        if self.closed:
            raise SouthboundError(f"{self.name}: not connected")
        self.dp.set_xid(msg)
        if not self.dp.send_msg(msg):
            raise SouthboundError(f"{self.name}: connection is closing")
        return msg.xid

    def send_writes(self, msgs) -> list[int]:
        """Queue write messages (no reply expected unless they fail); their xids."""
        with self._lock:
            return [self._send(m) for m in msgs]

    def start_request(self, msg) -> tuple[int, _Waiter]:
        """Queue a request whose reply (all parts) will be collected."""
        waiter = _Waiter()
        with self._lock:
            xid = self._send(msg)
            self._waiters[xid] = waiter
        return xid, waiter

    def finish(self, xid: int, waiter: _Waiter, timeout: float, what: str) -> list:
        """Wait for the reply of ``xid``; its parts, or SouthboundError."""
        ok = waiter.done.wait(timeout)
        with self._lock:
            self._waiters.pop(xid, None)
        if not ok:
            raise SouthboundError(f"{self.name}: no reply to {what} within {timeout:.1f} s")
        if waiter.error:
            raise SouthboundError(f"{self.name}: {what} failed: {waiter.error}")
        return waiter.replies

    def request(self, msg, timeout: float, what: str) -> list:
        """Send a request and wait for its (multipart) reply."""
        xid, waiter = self.start_request(msg)
        return self.finish(xid, waiter, timeout, what)

    def check_errors(self, xids) -> None:
        """Raise if the switch reported an error for any of ``xids`` (call after a
        barrier reply, when every error for them has arrived)."""
        with self._lock:
            errs = [self._errors.pop(x) for x in xids if x in self._errors]
        if errs:
            raise SouthboundError(f"{self.name}: {len(errs)} write(s) refused: {errs[0]}")

    def on_reply(self, msg, more: bool) -> None:
        """Event thread: a reply (or one part of it) arrived."""
        with self._lock:
            waiter = self._waiters.get(msg.xid)
        if waiter is None:
            return
        waiter.replies.append(msg)
        if not more:
            waiter.done.set()

    def on_error(self, msg) -> None:
        """Event thread: an OFPErrorMsg arrived for ``msg.xid``."""
        text = f"error type={msg.type} code={msg.code}"
        log.error("%s: switch reported %s for xid %d", self.name, text, msg.xid)
        with self._lock:
            waiter = self._waiters.get(msg.xid)
            if waiter is None:
                self._errors[msg.xid] = text
        if waiter is not None:
            waiter.error = text
            waiter.done.set()

    def close(self) -> None:
        """The connection is gone: fail every waiter now rather than at its timeout."""
        with self._lock:
            self.closed = True
            waiters = list(self._waiters.values())
        for w in waiters:
            w.error = "switch disconnected"
            w.done.set()
