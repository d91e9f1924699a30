"""Start the os-ken controller (os-ken 4.x has no ``osken-manager``).

    python -m controller.launcher --plan PLAN.json --of-port N --api SOCK --log FILE
                                  [--levels K] [--pid-file F] [--burst-s S] [--resume]

Listens for OpenFlow on 127.0.0.1 only; writes its PID; prints ``READY`` on stdout
once both the OpenFlow listener and the control API socket accept connections (so a
starter waits for that line with a timeout instead of sleeping).  SIGTERM/SIGINT end
it (the API socket file is removed).

:func:`start_controller` does all that from Python and returns a handle to stop it.
"""

from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from controller.control_plane import ControlConfig
from workload.marking import MAX_LEVELS

REPO = Path(__file__).resolve().parent.parent
OF_LISTEN_HOST = "127.0.0.1"
READY_LINE = "READY"
LISTEN_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
EVENTS_FILE = "scheduler-events.jsonl"  # beside the log: every scheduling request and its writes

log = logging.getLogger("controller.launcher")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m controller.launcher")
    p.add_argument("--plan", type=Path, required=True, help="FabricPlan JSON")
    p.add_argument("--of-port", type=int, required=True, help="OpenFlow TCP port")
    p.add_argument("--api", type=Path, required=True, help="control API Unix socket")
    p.add_argument("--log", type=Path, required=True, help="log file")
    add_control_args(p)
    return p.parse_args(argv)


def add_control_args(p: argparse.ArgumentParser) -> None:
    """The control-plane options both launchers (OpenFlow, P4Runtime) take; defaults
    from ``ControlConfig``."""
    d = ControlConfig()
    p.add_argument(
        "--levels", type=int, default=d.levels, help=f"priority levels K (1..{MAX_LEVELS})"
    )
    p.add_argument("--pid-file", type=Path, help="default: <log>.pid")
    p.add_argument("--burst-s", type=float, default=d.burst_s, help="meter burst, s of rate")
    p.add_argument("--op-timeout-s", type=float, default=d.op_timeout_s, help="switch op timeout")
    p.add_argument(
        "--resume",
        action="store_true",
        help="a restart mid-run: rebuild from the event log beside --log, take the switches over",
    )


def control_config(args: argparse.Namespace) -> ControlConfig:
    """The control plane's knobs from parsed options; ValueError if ``--levels`` is out
    of range."""
    if not 1 <= args.levels <= MAX_LEVELS:
        raise ValueError(f"--levels: must be 1..{MAX_LEVELS}, got {args.levels}")
    return ControlConfig(
        levels=args.levels,
        burst_s=args.burst_s,
        op_timeout_s=args.op_timeout_s,
        events_path=Path(args.log).parent / EVENTS_FILE,
        resume=args.resume,
    )


def setup_logging(path: Path) -> None:
    """Everything (os-ken included) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(
        logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def _signal_listening(ready: threading.Event) -> None:
    """Make os-ken's OpenFlow StreamServer set ``ready`` once it listens (it binds
    inside a thread of its own and offers no other readiness signal)."""
    from os_ken.controller import controller as ofc

    class SignallingStreamServer(ofc.StreamServer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            ready.set()

    ofc.StreamServer = SignallingStreamServer


def _report_lost_connections() -> None:
    """Make os-ken report a switch whose connection ended at once.  On the native hub
    ``hub.kill`` is a no-op, so after the receive loop ends ``Datapath.serve`` waits
    forever for its send thread (blocked on its queue), and the DEAD_DISPATCHER state
    change (our ``switch_disconnected``) never comes.  After the receive loop: one
    closing no-op write ends the send thread, and ``close`` reports the loss."""
    from os_ken.controller import controller as ofc

    receive = ofc.Datapath._recv_loop
    if getattr(receive, "reports_loss", False):
        return

    def recv_loop(self) -> None:
        try:
            receive(self)
        finally:
            if self.send_q is not None:
                self.send(b"", close_socket=True)
            self.close()

    recv_loop.reports_loss = True  # type: ignore[attr-defined]
    ofc.Datapath._recv_loop = recv_loop


def run(args: argparse.Namespace) -> int:
    """Configure os-ken, start the apps, print READY, block until killed."""
    os.environ["OSKEN_HUB_TYPE"] = "native"  # before os_ken.lib.hub is imported
    from os_ken import cfg
    from os_ken.base.app_manager import AppManager
    from os_ken.lib import hub

    from controller.app import AppSettings  # late: after the hub type above (os-ken reads it)

    listening = threading.Event()
    _signal_listening(listening)
    _report_lost_connections()
    cfg.CONF(
        ["--ofp-listen-host", OF_LISTEN_HOST, "--ofp-tcp-listen-port", str(args.of_port)],
        project="os_ken",
        default_config_files=[],
    )
    settings = AppSettings(args.plan, args.api, control_config(args))
    mgr = AppManager.get_instance()
    mgr.load_apps(["controller.app"])
    services = mgr.instantiate_apps(coflow_settings=settings, **mgr.create_contexts())
    if not listening.wait(LISTEN_TIMEOUT_S):
        raise RuntimeError(f"OpenFlow listener on port {args.of_port} did not start")
    _install_signal_handlers(mgr)
    log.info("controller ready: OpenFlow %s:%d, API %s", OF_LISTEN_HOST, args.of_port, args.api)
    print(READY_LINE, flush=True)
    hub.joinall(services)
    return 0


def _install_signal_handlers(mgr) -> None:
    """SIGTERM/SIGINT: close the apps (removes the API socket) and exit at once (os-ken's
    threads are not daemons and have no stop protocol)."""

    def stop(signum, _frame):
        log.info("signal %d: stopping", signum)
        for app in list(mgr.applications.values()):
            close = getattr(app, "close", None)
            if callable(close):
                close()
        logging.shutdown()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input -> one line on stderr, exit 2."""
    args = parse_args(argv)
    setup_logging(args.log)
    pid_file = args.pid_file or args.log.with_suffix(".pid")
    pid_file.write_text(f"{os.getpid()}\n")
    try:
        control_config(args)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    from controller.app import load_plan  # late: os-ken's hub type is set by main first

    try:
        load_plan(args.plan)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    return run(args)


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind((OF_LISTEN_HOST, 0))
        return s.getsockname()[1]


@dataclass
class ControllerProcess:
    """A running launcher started by :func:`start_controller`."""

    proc: subprocess.Popen
    of_port: int
    api_socket: Path
    log_path: Path

    @property
    def pid(self) -> int:
        """PID of the controller process."""
        return self.proc.pid

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, wait, SIGKILL if needed (by PID)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        if self.proc.stdout:
            self.proc.stdout.close()


def wait_ready_line(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for READY on ``proc``'s stdout; RuntimeError on exit or timeout."""
    sel = selectors.DefaultSelector()
    out = proc.stdout
    if out is None:
        raise RuntimeError("controller started without a stdout pipe")
    sel.register(out, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise RuntimeError(f"controller printed no {READY_LINE} within {timeout:.0f} s")
        line = out.readline().strip()
    finally:
        sel.close()
    if line != READY_LINE:
        proc.wait(5)
        raise RuntimeError(
            f"controller exited (code {proc.returncode}) before {READY_LINE}; see its log"
        )


def start_controller(
    plan_json: Path,
    run_dir: Path,
    of_port: int | None = None,
    levels: int = MAX_LEVELS,
    timeout: float = 30.0,
    extra_args: list[str] | None = None,
) -> ControllerProcess:
    """Start the launcher for the plan in ``plan_json``; files go to ``run_dir``
    (``controller.log``, ``controller.pid``, ``controller.sock``).  Returns once READY.
    The child inherits os.environ (COFLOWBED_RUN included)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    port = of_port or free_tcp_port()
    sock, log_path = run_dir / "controller.sock", run_dir / "controller.log"
    argv = [
        sys.executable,
        "-m",
        "controller.launcher",
        "--plan",
        str(plan_json),
        "--of-port",
        str(port),
        "--api",
        str(sock),
        "--log",
        str(log_path),
        "--levels",
        str(levels),
        "--pid-file",
        str(run_dir / "controller.pid"),
    ]
    proc = subprocess.Popen(
        argv + list(extra_args or []),
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
    )
    try:
        wait_ready_line(proc, timeout)
    except BaseException:
        ControllerProcess(proc, port, sock, log_path).stop()
        raise
    return ControllerProcess(proc, port, sock, log_path)


if __name__ == "__main__":
    sys.exit(main())
