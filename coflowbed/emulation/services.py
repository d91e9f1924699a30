"""Starting the controller process (os-ken for OVS, P4Runtime for BMv2) of a run."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from coflowbed.experiment.scenario import Scenario
from controller.client import ControllerClient
from controller.launcher import ControllerProcess, free_tcp_port, wait_ready_line
from topo.bmv2 import grpc_addresses

log = logging.getLogger("services")

LAUNCHERS = {"ovs": "controller.launcher", "bmv2": "controller.p4runtime.launcher"}
READY_TIMEOUT_S = 30.0


@dataclass
class ControllerService:
    """The run's controller process, started, restarted and stopped by PID."""

    argv: list[str]
    api: Path
    log_path: Path
    proc: subprocess.Popen | None = None

    def start(self, resume: bool = False) -> None:
        """Start it and wait for its READY line; ``resume``: a restart mid-run (it
        rebuilds from its event log and takes the switches over)."""
        argv = self.argv + (["--resume"] if resume else [])
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        try:
            wait_ready_line(self.proc, READY_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise
        log.info(
            "controller pid %d%s, API %s", self.proc.pid, " (restarted)" if resume else "", self.api
        )

    def kill(self) -> None:
        """SIGKILL it, as a crash would end it, and reap it."""
        if self.proc is not None:
            self.proc.kill()
            self.stop()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit (by PID)."""
        if self.proc is not None:
            ControllerProcess(self.proc, 0, self.api, self.log_path).stop()


def start_controller(scen: Scenario, out_dir: Path, runtime: Path, stack: contextlib.ExitStack):
    """Start the controller for ``scen.switch``; returns (ControllerClient, where the
    switches meet it: the OpenFlow port for OVS, {switch: gRPC address} for BMv2, its
    ``ControllerService``).  Its stop is registered on ``stack``."""
    runtime.mkdir(parents=True, exist_ok=True)
    plan_path = runtime / "plan.json"  # fabric.json is topo.net's record
    plan_path.write_text(scen.plan.to_json())
    api = runtime / "controller.sock"
    argv = [
        sys.executable,
        "-m",
        LAUNCHERS[scen.switch],
        "--plan",
        str(plan_path),
        "--api",
        str(api),
        "--log",
        str(out_dir / "controller.log"),
        "--levels",
        str(scen.levels),
    ]
    meet: int | dict[str, str]
    if scen.switch == "bmv2":  # gRPC on Unix sockets in the runtime folder (topo.bmv2)
        meet = grpc = grpc_addresses(scen.plan, runtime)
        argv += ["--grpc-ports", *[f"{n}={a}" for n, a in grpc.items()]]
    else:
        meet = free_tcp_port()
        argv += ["--of-port", str(meet)]
    service = ControllerService(argv, api, out_dir / "controller.log")
    stack.callback(service.stop)
    service.start()
    return ControllerClient(api, timeout=30.0), meet, service
