"""A private Open vSwitch (ovsdb-server + ovs-vswitchd, userspace datapath) per run.

Everything lives under ``<run_dir>/ovs``: the database, its Unix socket, pid files and
logs.  ``OVS_RUNDIR``/``OVS_DBDIR``/``OVS_LOGDIR`` are exported into ``os.environ``
because Mininet runs ``ovs-vsctl`` through a shell that inherits our environment; the
default database socket of ``ovs-vsctl`` is ``$OVS_RUNDIR/db.sock``.  ``OVS_PKGDATADIR``
is left alone (the schema comes from the distribution).

Children inherit ``os.environ`` unchanged, so a ``COFLOWBED_RUN`` variable set by the
caller marks them for the project's clean-up.

Two machine-wide settings must be in place before ovs-vswitchd starts (docs/fabric.md,
"Platform facts"):
``other_config:userspace-tso-enable=true`` in the database, and
``net.core.wmem_default=16777216`` (OVS sends all egress through one AF_PACKET socket).
The old sysctl value is saved in the run directory so a clean-up after a crash can
restore it with :func:`restore_sysctl`.

:func:`detect_datapath` picks the bridges' datapath: ``system`` (kernel) where the
``openvswitch`` module is loaded or loads, ``netdev`` (userspace) otherwise.  The two
settings above stay in place either way (harmless for the kernel datapath).  The kernel
branch cannot run on the project's own machines (no module): it only changes the
bridges' datapath type.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
from pathlib import Path

log = logging.getLogger("topo.ovs")

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
WMEM_SYSCTL = Path("/proc/sys/net/core/wmem_default")
WMEM_WANTED = 16777216
SAVED_WMEM = "wmem_default.saved"
UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the NUL
CMD_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
DAEMONS = ("ovs-vswitchd", "ovsdb-server")  # stop order: switch daemon first
OVS_MODULE = Path("/sys/module/openvswitch")
MODPROBE = ("modprobe", "-q", "openvswitch")
KERNEL_DATAPATH, USER_DATAPATH = "system", "netdev"  # OVS's datapath_type values


def ovs_dir(run_dir: Path) -> Path:
    """Directory holding the private OVS state of a run."""
    return Path(run_dir) / "ovs"


def ovs_env(run_dir: Path) -> dict[str, str]:
    """The OVS_* variables that point OVS tools at the private instance of ``run_dir``."""
    d = str(ovs_dir(run_dir).resolve())
    return {"OVS_RUNDIR": d, "OVS_DBDIR": d, "OVS_LOGDIR": d}


def db_socket(run_dir: Path) -> Path:
    """Unix socket of the private ovsdb-server."""
    return ovs_dir(run_dir) / "db.sock"


def detect_datapath(module_dir: Path = OVS_MODULE, modprobe: tuple[str, ...] = MODPROBE) -> str:
    """``"system"`` when the openvswitch kernel module is loaded (``module_dir`` exists)
    or ``modprobe`` loads it, else ``"netdev"`` (the userspace datapath)."""
    if Path(module_dir).exists():
        return KERNEL_DATAPATH
    try:
        res = subprocess.run(list(modprobe), capture_output=True, timeout=CMD_TIMEOUT_S)
    except FileNotFoundError:
        log.info("%s not found: using the userspace datapath", modprobe[0])
        return USER_DATAPATH
    return KERNEL_DATAPATH if res.returncode == 0 else USER_DATAPATH


def _run(argv: list[str], timeout: float = CMD_TIMEOUT_S) -> str:
    """Run ``argv`` (no shell) and return stdout; RuntimeError with stderr on failure."""
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(
            f"{argv[0]} failed (exit {res.returncode}): {(res.stderr or res.stdout).strip()}"
        )
    return res.stdout


def read_wmem_default() -> int:
    """Current value of net.core.wmem_default."""
    return int(WMEM_SYSCTL.read_text().strip())


def write_wmem_default(value: int) -> None:
    """Set net.core.wmem_default (root)."""
    WMEM_SYSCTL.write_text(f"{int(value)}\n")


def save_and_raise_wmem(run_dir: Path) -> None:
    """Remember the current wmem_default in the run dir (unless already saved by an
    earlier start whose clean-up never ran) and raise it to WMEM_WANTED."""
    saved = ovs_dir(run_dir) / SAVED_WMEM
    if not saved.exists():
        saved.write_text(f"{read_wmem_default()}\n")
    write_wmem_default(WMEM_WANTED)


def restore_sysctl(run_dir: Path) -> int | None:
    """Restore net.core.wmem_default from the value saved in ``run_dir``; return the
    restored value, or None when nothing was saved.  Safe to call after a crash."""
    saved = ovs_dir(run_dir) / SAVED_WMEM
    if not saved.exists():
        return None
    value = int(saved.read_text().strip())
    write_wmem_default(value)
    saved.unlink()
    log.info("restored net.core.wmem_default=%d", value)
    return value


def read_pid(pidfile: Path) -> int | None:
    """PID in ``pidfile`` if the file exists and the process is alive, else None."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (this machine's init reaps late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_pid_exit(pid: int, timeout: float) -> bool:
    """Wait (event-driven, via a pidfd) until ``pid`` has exited; True if it did."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    finally:
        os.close(fd)


def stop_pid(pid: int, name: str, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM ``pid``, wait for it, SIGKILL if it does not exit in time."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if not wait_pid_exit(pid, timeout):
        log.warning("%s (pid %d) ignored SIGTERM for %.0f s; killing", name, pid, timeout)
        os.kill(pid, signal.SIGKILL)
        wait_pid_exit(pid, timeout)


def stop_daemons(run_dir: Path) -> list[int]:
    """Stop the OVS daemons of ``run_dir`` by the PIDs in their pid files (crash-safe:
    needs no live OvsService object).  Returns the PIDs that were stopped."""
    stopped = []
    for name in DAEMONS:
        pid = read_pid(ovs_dir(run_dir) / f"{name}.pid")
        if pid is not None:
            stop_pid(pid, name)
            stopped.append(pid)
    return stopped


class OvsService:
    """Context manager running a private OVS for one run directory."""

    def __init__(self, run_dir: Path, userspace_tso: bool = True) -> None:
        """Prepare (but do not start) the service rooted at ``run_dir``;
        ``userspace_tso=False`` turns OVS's userspace TSO off (a benchmark lever)."""
        self.run_dir = Path(run_dir)
        self.userspace_tso = userspace_tso
        self.dir = ovs_dir(self.run_dir)
        self.started = False
        if len(str(db_socket(self.run_dir).resolve())) > UNIX_PATH_MAX:
            raise ValueError(
                f"run directory {self.run_dir}: path too long for a Unix "
                f"socket (max {UNIX_PATH_MAX} characters for db.sock)"
            )

    def __enter__(self) -> OvsService:
        """Start on entry."""
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        """Stop on exit, whatever happened."""
        self.stop()

    def start(self) -> None:
        """Create the database and start ovsdb-server and ovs-vswitchd (detached; each
        returns only once ready)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)  # its Unix sockets (db.sock, the daemons' and bridges'): owner only
        os.environ.update(ovs_env(self.run_dir))
        self.started = True  # from here on stop() has something to undo
        db = self.dir / "conf.db"
        if db.exists():
            db.unlink()  # stale database of an earlier run in the same directory
        _run(["ovsdb-tool", "create", str(db), str(SCHEMA)])
        sock = db_socket(self.run_dir).resolve()
        _run(
            [
                "ovsdb-server",
                str(db),
                f"--remote=punix:{sock}",
                f"--pidfile={self.dir / 'ovsdb-server.pid'}",
                "--detach",
                f"--log-file={self.dir / 'ovsdb-server.log'}",
            ]
        )
        _run(["ovs-vsctl", "--no-wait", "init"])
        _run(
            [
                "ovs-vsctl",
                "--no-wait",
                "set",
                "Open_vSwitch",
                ".",
                f"other_config:userspace-tso-enable={str(self.userspace_tso).lower()}",
            ]
        )
        save_and_raise_wmem(self.run_dir)
        _run(
            [
                "ovs-vswitchd",
                f"unix:{sock}",
                f"--pidfile={self.dir / 'ovs-vswitchd.pid'}",
                "--detach",
                f"--log-file={self.dir / 'ovs-vswitchd.log'}",
            ]
        )
        log.info("OVS started in %s (pids %s)", self.dir, self.pids())

    def pids(self) -> list[int]:
        """PIDs of the running daemons (ovs-vswitchd first)."""
        return [p for p in (read_pid(self.dir / f"{n}.pid") for n in DAEMONS) if p is not None]

    def stop(self) -> None:
        """Stop both daemons by PID and restore the sysctl; idempotent."""
        if not self.started:
            return
        stop_daemons(self.run_dir)
        restore_sysctl(self.run_dir)
        self.started = False
        log.info("OVS stopped (%s)", self.dir)
