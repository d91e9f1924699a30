"""Starting the controller process (os-ken for OVS, P4Runtime for BMv2) of a run."""
from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from coflowbed.scenario import Scenario

log = logging.getLogger("services")

LAUNCHERS = {"ovs": "controller.launcher", "bmv2": "controller.p4runtime.launcher"}
READY_TIMEOUT_S = 30.0


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_ready(proc: subprocess.Popen, timeout_s: float, what: str) -> str:
    """Wait for the line starting with READY on ``proc``'s stdout; RuntimeError if the
    process exits or ``timeout_s`` passes first."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not sel.select(left):
                break
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{what} exited (code {proc.wait(5)}) before it was ready")
            if line.startswith("READY"):
                return line.strip()
        raise RuntimeError(f"{what} not ready after {timeout_s:.0f} s")
    finally:
        sel.close()


def stop_process(proc: subprocess.Popen, what: str, timeout_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s``; always reaps."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("%s (pid %d) ignored SIGTERM; killing", what, proc.pid)
            proc.kill()
            proc.wait(timeout_s)
    if proc.stdout:
        proc.stdout.close()


def start_controller(scen: Scenario, out_dir: Path, runtime: Path,
                     stack: contextlib.ExitStack):
    """Start the controller for ``scen.switch``; returns (ControllerClient, where the
    switches meet it: the OpenFlow port for OVS, {switch: gRPC port} for BMv2).
    Its stop is registered on ``stack``."""
    from controller.client import ControllerClient

    runtime.mkdir(parents=True, exist_ok=True)
    plan_path = runtime / "fabric.json"
    plan_path.write_text(scen.plan.to_json())
    api = runtime / "controller.sock"
    argv = [sys.executable, "-m", LAUNCHERS[scen.switch], "--plan", str(plan_path),
            "--api", str(api), "--log", str(out_dir / "controller.log"),
            "--levels", str(scen.levels)]
    if scen.switch == "bmv2":
        meet: int | dict[str, int] = {sw.name: free_tcp_port() for sw in scen.plan.switches}
        argv += ["--grpc-ports", *[f"{n}={p}" for n, p in meet.items()]]
    else:
        meet = free_tcp_port()
        argv += ["--of-port", str(meet)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    stack.callback(stop_process, proc, "controller")
    read_ready(proc, READY_TIMEOUT_S, "controller")
    log.info("controller pid %d (%s), API %s", proc.pid, scen.switch, api)
    return ControllerClient(str(api), timeout=30.0), meet
