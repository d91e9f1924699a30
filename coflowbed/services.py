"""Starting the controller process (os-ken for OVS, P4Runtime for BMv2) of a run."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from pathlib import Path

from coflowbed.scenario import Scenario

log = logging.getLogger("services")

LAUNCHERS = {"ovs": "controller.launcher", "bmv2": "controller.p4runtime.launcher"}
READY_TIMEOUT_S = 30.0


def start_controller(scen: Scenario, out_dir: Path, runtime: Path, stack: contextlib.ExitStack):
    """Start the controller for ``scen.switch``; returns (ControllerClient, where the
    switches meet it: the OpenFlow port for OVS, {switch: gRPC address} for BMv2).
    Its stop is registered on ``stack``."""
    from controller.client import ControllerClient
    from controller.launcher import ControllerProcess, free_tcp_port, wait_ready_line

    runtime.mkdir(parents=True, exist_ok=True)
    plan_path = runtime / "fabric.json"
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
        from topo.bmv2 import grpc_addresses

        meet = grpc = grpc_addresses(scen.plan, runtime)
        argv += ["--grpc-ports", *[f"{n}={a}" for n, a in grpc.items()]]
    else:
        meet = free_tcp_port()
        argv += ["--of-port", str(meet)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    stack.callback(ControllerProcess(proc, 0, api, out_dir / "controller.log").stop)
    wait_ready_line(proc, READY_TIMEOUT_S)
    log.info("controller pid %d (%s), API %s", proc.pid, scen.switch, api)
    return ControllerClient(api, timeout=30.0), meet
