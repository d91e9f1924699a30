"""Start the P4Runtime controller for a fabric of BMv2 switches.

    python -m controller.p4runtime.launcher --plan PLAN.json --api SOCK --log FILE
        --grpc-ports l1=50001 l2=50002 s1=50003 ... [--levels K] [--pid-file F]
        [--burst-s S] [--op-timeout-s T] [--p4info F --bmv2-json F]

Same contract as ``controller.launcher`` (the OpenFlow one): writes its PID, serves the
control API (JSON lines, ops status/set/clear/tag_stats/port_stats/meter_stats, replies
after the writes are applied) on the Unix socket, prints ``READY`` once that socket
accepts connections; switches are (re)connected in the background and ``status``
reports ``ready`` when all are installed.  It is the P4Runtime *client*: it connects
to each switch's gRPC server on 127.0.0.1, holds the primary role, pushes the pipeline.
SIGTERM/SIGINT end it (the API socket file is removed).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from controller.launcher import add_control_args, control_config, setup_logging
from controller.p4runtime.artifacts import Artifacts, committed
from controller.southbound.base import SouthboundError
from workload.marking import MAX_LEVELS

REPO = Path(__file__).resolve().parents[2]
READY_LINE = "READY"
RETRY_S = 1.0  # pause between connection attempts to a switch that is not up yet

log = logging.getLogger("controller.p4runtime.launcher")


def parse_grpc_ports(items: list[str]) -> dict[str, int | str]:
    """``["l1=unix:/run/x/l1.grpc", "s1=50001", ...]`` -> {"l1": "unix:/run/x/l1.grpc",
    "s1": 50001}: a Unix socket (absolute path; the fabric's switches) or a TCP port on
    127.0.0.1 (a stand-in switch in tests); ValueError naming the bad item."""
    out: dict[str, int | str] = {}
    for item in items:
        name, sep, where = item.partition("=")
        if sep and name and where.startswith("unix:/"):
            addr: int | str = where
        elif sep and name and where.isdigit() and 0 < int(where) < 65536:
            addr = int(where)
        else:
            raise ValueError(
                f"--grpc-ports: {item!r}: expected NAME=PORT (1..65535) or NAME=unix:/PATH"
            )
        if name in out:
            raise ValueError(f"--grpc-ports: {name!r} given twice")
        out[name] = addr
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m controller.p4runtime.launcher")
    p.add_argument("--plan", type=Path, required=True, help="FabricPlan JSON")
    p.add_argument("--api", type=Path, required=True, help="control API Unix socket")
    p.add_argument("--log", type=Path, required=True, help="log file")
    p.add_argument(
        "--grpc-ports",
        nargs="+",
        required=True,
        metavar="NAME=ADDR",
        help="gRPC address of every switch: unix:/PATH, or a TCP port on 127.0.0.1",
    )
    add_control_args(p)
    p.add_argument("--p4info", type=Path, help="P4Info text file (default: committed)")
    p.add_argument("--bmv2-json", type=Path, help="BMv2 JSON (default: committed)")
    return p.parse_args(argv)


class SwitchKeeper:
    """Keeps one switch connected: connect (retrying), tell the control plane, wait
    for the session to be lost, repeat, until stopped."""

    def __init__(self, name: str, driver, plane, stop: threading.Event, timeout: float) -> None:
        """Keeper of switch ``name``."""
        self.name, self.driver, self.plane, self.stop = name, driver, plane, stop
        self.timeout = timeout
        self.lost = threading.Event()

    def run(self) -> None:
        """Loop until ``stop`` is set."""
        while not self.stop.is_set():
            self.lost.clear()
            try:
                self.driver.connect(self.name, self.timeout, on_lost=lambda _n: self.lost.set())
            except SouthboundError as e:
                log.info("%s: %s; retrying", self.name, e)
                self.stop.wait(RETRY_S)
                continue
            self.plane.switch_connected(self.name)
            while not self.stop.is_set() and not self.lost.wait(0.5):
                pass
            self.plane.switch_disconnected(self.name)


def run(args: argparse.Namespace, plan, ports: dict[str, int | str], art: Artifacts) -> int:
    """Build driver, control plane, API; keep the switches connected; block."""
    # late: these import os-ken, whose hub type ``load`` sets before anything imports it
    from controller.api_server import ApiServer
    from controller.control_plane import ControlPlane
    from controller.p4runtime.driver import P4RuntimeDriver

    driver = P4RuntimeDriver(plan, art, ports)
    plane = ControlPlane(plan, driver, control_config(args))
    driver.on_removed = plane.on_removed
    api = ApiServer(args.api, plane.handle)
    stop = threading.Event()
    _install_signal_handlers(api, driver, stop)
    for sw in plan.switches:
        keeper = SwitchKeeper(sw.name, driver, plane, stop, args.op_timeout_s)
        threading.Thread(target=keeper.run, daemon=True, name=f"keep-{sw.name}").start()
    log.info("P4Runtime controller ready: API %s, switches %s", args.api, ports)
    print(READY_LINE, flush=True)
    api.serve_forever()
    return 0


def _install_signal_handlers(api, driver, stop: threading.Event) -> None:
    """SIGTERM/SIGINT: stop keepers, remove the API socket, close sessions, exit."""

    def on_signal(signum, _frame):
        """Stop everything and exit at once (the keepers are daemon threads)."""
        log.info("signal %d: stopping", signum)
        stop.set()
        api.close()
        driver.close()
        logging.shutdown()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _inputs(args: argparse.Namespace):
    """Validated (plan, ports, artifacts); ValueError with a one-line reason."""
    os.environ.setdefault("OSKEN_HUB_TYPE", "native")  # controller.app imports os-ken
    from controller.app import load_plan  # late: after the hub type above

    control_config(args)  # ValueError on a bad --levels
    plan = load_plan(args.plan)
    ports = parse_grpc_ports(args.grpc_ports)
    names = {sw.name for sw in plan.switches}
    for name in sorted(set(ports) ^ names):
        where = "not in the plan" if name in ports else "has no port"
        raise ValueError(f"--grpc-ports: switch {name!r} {where}")
    art = committed()
    art = Artifacts(args.bmv2_json or art.json, args.p4info or art.p4info)
    if not art.exist():
        raise ValueError(f"{art.p4info}: compiled pipeline missing (run `make p4`)")
    return plan, ports, art


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input -> one line on stderr, exit 2."""
    args = parse_args(argv)
    setup_logging(args.log)
    (args.pid_file or args.log.with_suffix(".pid")).write_text(f"{os.getpid()}\n")
    try:
        plan, ports, art = _inputs(args)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    return run(args, plan, ports, art)


def launcher_argv(
    plan_json: Path,
    api: Path,
    log_path: Path,
    ports: Mapping[str, int | str],
    levels: int = MAX_LEVELS,
    pid_file: Path | None = None,
) -> list[str]:
    """The command line that starts this launcher (for an orchestrator's Popen)."""
    argv = [
        sys.executable,
        "-m",
        "controller.p4runtime.launcher",
        "--plan",
        str(plan_json),
        "--api",
        str(api),
        "--log",
        str(log_path),
        "--levels",
        str(levels),
        "--grpc-ports",
        *[f"{n}={p}" for n, p in ports.items()],
    ]
    return argv + (["--pid-file", str(pid_file)] if pid_file else [])


def spawn(argv: list[str]) -> subprocess.Popen:
    """Popen of ``argv`` in the repo with stdout piped (read READY from it)."""
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO, env=dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
