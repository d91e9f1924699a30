"""Process lifecycle of the traffic agents (``coflowbed.emulation.agents.client``): spawn
one agent in its host (argument list, no shell), wait for every ``READY`` line, end it
by PID (asked exit, then SIGTERM, then SIGKILL, each with a timeout) and release its
pipes and files."""

from __future__ import annotations

import logging
import os
import re
import selectors
import socket
import subprocess
import time
from collections.abc import Container
from pathlib import Path
from typing import IO

from coflowbed.emulation.agents.types import AgentError, AgentHandle, AgentHost
from workload.agent.proto import UNIX_PATH_MAX

log = logging.getLogger(
    "coflowbed.emulation.agents.client"
)  # the component's logger, as before the split

REPO_ROOT = Path(__file__).resolve().parents[3]
HOST_NAME = re.compile(r"[A-Za-z0-9_.-]{1,32}")  # also a file name in the run dir


def spawn_agent(
    host: AgentHost,
    port: int,
    agent_args: list[str],
    *,
    taken: Container[str],
    sock_dir: Path,
    log_dir: Path,
    python: str,
) -> AgentHandle:
    """Launch the agent process of ``host`` (argument list: no shell); ``taken`` holds the
    names of the agents already started."""
    name = host.name
    if not HOST_NAME.fullmatch(name) or name in taken:
        raise AgentError(f"host {name!r}: duplicate or not a plain name ([A-Za-z0-9_.-]{{1,32}})")
    control = sock_dir / f"{name}.sock"
    if len(os.fsencode(control)) > UNIX_PATH_MAX:
        raise AgentError(f"run dir {sock_dir}: socket path {control} is over {UNIX_PATH_MAX} bytes")
    log_path = log_dir / f"{name}.log"
    log_file = log_path.open("ab")
    args = [
        python,
        "-m",
        "workload.agent",
        "--host",
        name,
        "--control",
        str(control),
        "--data-port",
        str(port),
        "--ip",
        host.IP(),
        *agent_args,
    ]
    try:
        proc = host.popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=str(REPO_ROOT),
        )
    except BaseException:
        log_file.close()
        raise
    agent = AgentHandle(name, host.IP(), control, log_path, proc, log_file)
    log.debug("started agent %s (pid %d)", name, proc.pid)
    return agent


def _stdout(agent: AgentHandle) -> IO[bytes]:
    """The agent's stdout pipe (every agent is started with ``stdout=PIPE``)."""
    if agent.proc.stdout is None:
        raise AgentError(f"agent {agent.name}: started without a stdout pipe")
    return agent.proc.stdout


def wait_ready(agents: list[AgentHandle], timeout_s: float) -> None:
    """Read each agent's ``READY <host>`` line, all within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    waiting = {_stdout(a).fileno(): a for a in agents}
    lines = dict.fromkeys(waiting, b"")
    with selectors.DefaultSelector() as sel:
        for fd in waiting:
            sel.register(fd, selectors.EVENT_READ)
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                names = ", ".join(sorted(a.name for a in waiting.values()))
                raise AgentError(f"agents {names}: not READY within {timeout_s:g} s")
            for key, _ in sel.select(left):
                agent, chunk = waiting[key.fd], os.read(key.fd, 4096)
                if not chunk:
                    raise AgentError(_died(agent, "before READY"))
                lines[key.fd] += chunk
                if b"\n" in lines[key.fd]:
                    _check_ready(agent, lines[key.fd])
                    sel.unregister(key.fd)
                    del waiting[key.fd]


def end_process(agent: AgentHandle, asked: bool, timeout_s: float) -> None:
    """Wait for an agent that was asked to exit; SIGTERM, then SIGKILL, each with a timeout."""
    proc = agent.proc
    for action in (None, proc.terminate, proc.kill):
        if action is None and not asked:
            continue  # never attached or already lost: nothing told it to exit
        if action is not None and proc.poll() is None:
            log.info("agent %s (pid %d) still running: %s", agent.name, proc.pid, action.__name__)
            action()
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            continue
        if code not in (0, -15):
            log.warning("agent %s exited with code %s (log %s)", agent.name, code, agent.log_path)
        return
    raise AgentError(f"agent {agent.name} (pid {proc.pid}) survived SIGKILL")


def close_agent(agent: AgentHandle) -> None:
    """Close the control connection (waking the reader), pipes and log file."""
    if agent.sock is not None:
        try:
            agent.sock.shutdown(socket.SHUT_RDWR)  # close() alone would not wake recv()
        except OSError as exc:
            log.debug("agent %s: control socket already down: %s", agent.name, exc)
        agent.sock.close()
    if agent.reader is not None:
        agent.reader.join(timeout=2.0)
    if agent.proc.stdout is not None:
        agent.proc.stdout.close()
    agent.log_file.close()


def _died(agent: AgentHandle, when: str) -> str:
    """Message for an agent that exited: its exit code and the last lines of its log."""
    try:
        code: int | None = agent.proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        code = None
    agent.log_file.flush()
    tail = agent.log_path.read_text(errors="replace").strip().splitlines()[-3:]
    return f"agent {agent.name} exited (code {code}) {when}; {agent.log_path}: {' | '.join(tail)}"


def _check_ready(agent: AgentHandle, output: bytes) -> None:
    """The first line must be exactly ``READY <host>``."""
    line = output.split(b"\n", 1)[0].decode(errors="replace")
    if line != f"READY {agent.name}":
        raise AgentError(f"agent {agent.name}: expected 'READY {agent.name}', got {line!r}")
