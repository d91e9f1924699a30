"""The launcher starts the real os-ken app (no switches needed): READY, PID file,
OpenFlow listener on 127.0.0.1, control API answering, clean stop; bad input -> exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.client import ControllerClient, ControllerError
from controller.coflow_table import TagEntry
from controller.launcher import REPO, start_controller
from controller.stats import Status
from topo.plan import FabricPlan
from topo.switch import tcp_port_open


@pytest.fixture
def controller(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(FabricPlan(1, 2, 1, 10, 10).to_json())
    ctl = start_controller(plan, tmp_path, levels=4, timeout=30)
    yield ctl, tmp_path
    ctl.stop()


@pytest.mark.processes
@pytest.mark.sockets
def test_controller_starts_answers_and_stops(controller):
    ctl, run_dir = controller
    assert int((run_dir / "controller.pid").read_text()) == ctl.pid
    assert tcp_port_open("127.0.0.1", ctl.of_port)
    with ControllerClient(ctl.api_socket, timeout=5) as c:
        assert c.status() == Status((), False, 4)
        with pytest.raises(TimeoutError):
            c.wait_ready(0.2)
        with pytest.raises(ControllerError, match="l1: not connected"):
            c.set([TagEntry(1, 0)])
    ctl.stop()
    assert ctl.proc.returncode == 0 and not ctl.api_socket.exists()


@pytest.mark.processes
def test_bad_plan_file_is_a_one_line_error_exit_2(tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text('{"spines": 0}')
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.launcher",
            "--plan",
            str(bad),
            "--of-port",
            "1",
            "--api",
            str(tmp_path / "s"),
            "--log",
            str(tmp_path / "c.log"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env=dict(os.environ),
    )
    assert res.returncode == 2
    assert res.stderr.strip().startswith(f"{bad}: not a fabric plan:")
    assert len(res.stderr.strip().splitlines()) == 1


def test_both_launchers_default_to_the_control_plane_defaults():
    from dataclasses import replace

    from controller import launcher
    from controller.control_plane import ControlConfig
    from controller.p4runtime import launcher as p4_launcher
    from workload.marking import MAX_LEVELS

    of = launcher.parse_args(["--plan", "p", "--of-port", "1", "--api", "a", "--log", "l"])
    p4 = p4_launcher.parse_args(["--plan", "p", "--api", "a", "--log", "l", "--grpc-ports", "l1=1"])
    for args in (of, p4):
        config = launcher.control_config(args)
        assert config.events_path == Path("l").parent / launcher.EVENTS_FILE
        assert replace(config, events_path=None) == ControlConfig()
        assert args.levels == MAX_LEVELS
        args.levels = MAX_LEVELS + 1
        with pytest.raises(ValueError, match=f"--levels: must be 1..{MAX_LEVELS}"):
            launcher.control_config(args)
