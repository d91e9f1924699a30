"""Errors the user can fix: reported as one line, exit code 2, nothing started.

Defined here, in the lowest layer that raises it (``workload/`` imports nothing of
``coflowbed/``); ``coflowbed.core.errors`` re-exports it for the rest of the project."""

from __future__ import annotations


class UserError(Exception):
    """Bad input (scenario, topology, workload, trace, flags): one clear line."""

    def __init__(self, source: str, key: str | None, reason: str) -> None:
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {reason}")
        self.source, self.key, self.reason = source, key, reason
