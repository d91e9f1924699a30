"""The command-line options of one traffic agent (``python -m workload.agent``), read by
its daemon (``workload.agent.daemon``) and its senders (``workload.agent.send``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workload.agent.proto import ANY_ADDRESS, DATA_PORT


@dataclass
class AgentOptions:
    """Command-line options of one agent."""

    host: str
    control: Path
    data_port: int = DATA_PORT
    ip: str = ANY_ADDRESS
    connect_timeout_s: float = 5.0
    stall_timeout_s: float = 60.0  # 0 disables; strict priority may starve a flow a while
    attach_timeout_s: float = 60.0
