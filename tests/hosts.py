"""Stand-in hosts for tests of the agents without Mininet (shared test helper)."""

from __future__ import annotations

import subprocess
from typing import Any


class LocalHost:
    """A host that is just this machine's loopback."""

    def __init__(self, name: str, argv: list[str] | None = None) -> None:
        self.name = name
        self.argv = argv  # replaces the agent command (to fake a broken agent)
        self.started: list[subprocess.Popen] = []

    def IP(self) -> str:  # noqa: N802 - Mininet's spelling
        return "127.0.0.1"

    def popen(self, args: list[str], **kw: Any) -> subprocess.Popen:
        proc = subprocess.Popen(self.argv or args, **kw)
        self.started.append(proc)
        return proc
