"""Data types of the orchestrator side of the traffic agents
(``coflowbed.emulation.agents.client``): what a host must offer, the error, the events
and stats handed to callers, and one agent's handle."""

from __future__ import annotations

import concurrent.futures
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class SendOrder:
    """One flow for ``host``'s agent to send (``AgentSet.send_many``): ``nbytes`` to
    ``dst_ip:dst_port`` marked with ``tag``/``level``, paced at ``rate_mbps`` if given.
    Checked when sent (the agent protocol's SendRequest)."""

    host: str
    flow_id: str
    dst_ip: str
    dst_port: int
    nbytes: int
    tag: int
    level: int
    rate_mbps: float | None = None
    dscp: int | None = None  # the DSCP to mark with (None: the tag's own)
    slot: int | None = None  # its connection's ECMP slot of ``slots`` (workload.ecmp)
    slots: int | None = None


@dataclass(frozen=True)
class PoolOrder:
    """``src``'s agent is to hold ``count`` open connections to ``dst_ip:dst_port`` (of
    ECMP slot ``slot`` of ``slots``, if given: ``workload.ecmp``)."""

    src: str
    dst_ip: str
    dst_port: int
    count: int
    slot: int | None = None
    slots: int | None = None


@dataclass(frozen=True)
class PoolReport:
    """What setting the connection pools up took: connections opened in all, and the
    wall time from the first request to the last reply."""

    pairs: int
    connections: int
    setup_s: float


class AgentHost(Protocol):
    """What AgentSet needs from a host (Mininet's Host has all three)."""

    name: str

    def IP(self) -> str:  # noqa: N802 - Mininet's spelling
        """The host's data address."""

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen:
        """Start a process in the host (its network namespace)."""


class AgentError(RuntimeError):
    """An agent failed to start, answer, or carry out a request; names the host."""


@dataclass(frozen=True)
class AgentEvent(Mapping[str, Any]):
    """One event of ``host``'s agent, also readable as its wire message (``ev["event"]``,
    ``ev["t_ns"]``, ``ev.get(...)``; keys in ``workload.agent.proto``).  ``kind`` is
    flow_started|flow_sent|flow_received|flow_failed, or agent_lost (``error``) when
    the agent's connection ended unasked."""

    host: str
    kind: str
    flow_id: str | None
    fields: dict[str, Any]

    def _wire(self) -> dict[str, Any]:
        """The event as the agent sent it, plus the host."""
        return {"event": self.kind, "flow_id": self.flow_id, "host": self.host, **self.fields}

    def __getitem__(self, key: str) -> Any:
        """A key of the wire message."""
        return self._wire()[key]

    def __iter__(self) -> Iterator[str]:
        """Keys of the wire message."""
        return iter(self._wire())

    def __len__(self) -> int:
        """Number of keys of the wire message."""
        return len(self._wire())


@dataclass(frozen=True)
class AgentStats:
    """Progress of one agent at ``t_ns`` (monotonic clock): payload bytes acknowledged per
    outgoing flow and per tag, bytes received per incoming flow, and the SO_PRIORITY and
    pacing cap (bytes/s, None = uncapped) of each outgoing flow whose socket is still open."""

    host: str
    t_ns: int
    sent: dict[str, int]
    sent_by_tag: dict[int, int]
    received: dict[str, int]
    priority: dict[str, int]
    pacing: dict[str, int | None] = field(default_factory=dict)
    # per destination "ip:port": {"total", "idle", "on_demand"} connections
    connections: dict[str, dict[str, int]] = field(default_factory=dict)
    tos: dict[str, int] = field(default_factory=dict)  # IP_TOS byte of each live socket


@dataclass(eq=False)
class AgentHandle:
    """One agent process and its control connection."""

    name: str
    ip: str
    control: Path
    log_path: Path
    proc: subprocess.Popen
    log_file: Any
    sock: socket.socket | None = None
    reader: threading.Thread | None = None
    pending: dict[int, concurrent.futures.Future] = field(default_factory=dict)
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    data_port: int = 0
    alive: bool = False
