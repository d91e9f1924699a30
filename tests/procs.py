"""Child processes in tests: reading the line a started process prints when it is ready
(shared test helper)."""

from __future__ import annotations

import selectors
import subprocess


def first_line(proc: subprocess.Popen, timeout: float) -> str:
    """First line of ``proc``'s stdout within ``timeout`` s (RuntimeError otherwise)."""
    assert proc.stdout is not None, "started without a stdout pipe"
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise RuntimeError(f"pid {proc.pid} printed nothing in {timeout} s")
        return proc.stdout.readline().strip()
    finally:
        sel.close()
