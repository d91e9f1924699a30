"""An ordered work lane: one worker thread applying queued items in order, each item's
``Future`` settled when it is done.  With a ``merge`` function, what queued up while the
worker was busy is merged and applied as one (switch and host writes); without, items
are applied one by one (requests whose order and answers matter).  ``apply_if_idle``
applies an item in the caller's thread when nothing is queued or being applied (no
hand-over to the worker and back on a latency-critical path), in the same order."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

T = TypeVar("T")
STOP_TIMEOUT_S = 30.0


class Lane(Generic[T]):
    """Applies ``apply(item)`` for queued items on its own thread; the first failure is
    kept in ``error`` and fails that item's future (later items still run)."""

    def __init__(
        self, name: str, apply: Callable[[T], Any], merge: Callable[[Sequence[T]], T] | None = None
    ) -> None:
        """Start the worker thread ``name``."""
        self.apply, self.merge = apply, merge
        self.error: BaseException | None = None
        self._queue: queue.Queue = queue.Queue()
        self._state = threading.Lock()  # guards _pending
        self._pending = 0  # items queued or being applied
        self._applying = threading.Lock()  # held by whichever thread applies
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T, last: bool = False) -> Future:
        """Queue ``item``; the future settles with ``apply``'s result once it is applied.
        ``last``: nothing queued after it is merged with it (whoever waits for it does
        not wait for later items too)."""
        done: Future = Future()
        with self._state:
            self._pending += 1
            self._queue.put((item, done, last))
        return done

    def apply_if_idle(self, item: T) -> tuple[bool, Any]:
        """Apply ``item`` now in this thread if the lane is idle: (True, result);
        (False, None) when something is queued or being applied (``put`` it instead).
        A failure is raised here and kept in ``error``."""
        with self._state:
            if self._pending:
                return False, None
            self._pending += 1
        try:
            with self._applying:
                return True, self.apply(item)
        except Exception as exc:
            self.error = self.error or exc
            raise
        finally:
            with self._state:
                self._pending -= 1

    def close(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Finish what is queued and stop."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _loop(self) -> None:
        """Take what is queued (everything waiting, when merging) until told to stop."""
        while (item := self._queue.get()) is not None:
            batch, stop = [item], False
            while self.merge is not None and not batch[-1][2] and not self._queue.empty():
                nxt = self._queue.get()
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            with self._applying:
                if self.merge is None:
                    self._run(item[0], [item[1]])
                else:
                    self._run(self.merge([it for it, _, _ in batch]), [d for _, d, _ in batch])
            with self._state:
                self._pending -= len(batch)
            if stop:
                return

    def _run(self, item: T, futures: list[Future]) -> None:
        """Apply one (merged) item and settle its futures."""
        try:
            result = self.apply(item)
        except Exception as exc:  # handed to whoever waits, and kept for later submitters
            self.error = self.error or exc
            for done in futures:
                done.set_exception(exc)
            return
        for done in futures:
            done.set_result(result)
