"""The registry of live runs, so ``coflowbed clean`` can find what a run left behind
even after the runner was killed with SIGKILL.

Every process a run starts inherits ``COFLOWBED_RUN=<run id>`` in its environment (that
is how clean-up recognises *our* processes, by PID, without matching command lines).  A
state file ``/run/coflowbed/<run id>.json`` names the runner's PID, the run folder and
the interfaces the run creates; it is written before anything starts and removed after
the run cleaned up.

A runner holds an exclusive ``flock`` on ``/run/coflowbed/run.lock`` for its whole life
(:func:`claim`); the kernel drops it when the runner dies, SIGKILL included.  So a new run
that gets the lock knows every state file it finds belongs to a dead runner (stale: it
is cleaned first, ``coflowbed.emulation.cleanup.reclaim_stale``), and one that cannot get it refuses
to start, naming the live run (:class:`RunBusy`).  The folder and every run's runtime
folder (its Unix sockets) are 0700 (:func:`private_dir`).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ENV_MARKER = "COFLOWBED_RUN"
STATE_DIR = Path(os.environ.get("COFLOWBED_STATE_DIR", "/run/coflowbed"))
LOCK_NAME = "run.lock"
PRIVATE_MODE = 0o700


class RunBusy(Exception):
    """Another run of this project is alive on this machine (one fabric at a time)."""


def private_dir(path: Path) -> Path:
    """``path`` created if missing and made 0700 (owner only), whatever the umask or an
    older, laxer mode; returns it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_MODE)
    return path


def claim() -> int:
    """Take the machine's run lock (non-blocking) and return its file descriptor: keep it
    open for the run's whole life.  RunBusy naming the live run when another holds it,
    or when a recorded runner is alive without it (a runner of an older version)."""
    private_dir(STATE_DIR)
    fd = os.open(STATE_DIR / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunBusy(_busy_message()) from None
    if any(runner_alive(s) for s in load_states()):
        os.close(fd)
        raise RunBusy(_busy_message())
    return fd


def _busy_message() -> str:
    """One line naming the live run holding the machine."""
    live = [s for s in load_states() if runner_alive(s)]
    if not live:
        return (
            "another coflowbed run is starting on this machine (it holds "
            f"{STATE_DIR / LOCK_NAME}); wait for it, or stop it with `coflowbed clean`"
        )
    s = live[0]
    return (
        f"run {s.run_id} is still running (pid {s.runner_pid}, started {s.started or '?'}, "
        f"results {s.out_dir}); one fabric at a time: wait for it, or stop it with "
        "`coflowbed clean`"
    )


def release(fd: int) -> None:
    """Give the run lock back (closing the descriptor releases the flock)."""
    os.close(fd)


@dataclass
class RunState:
    """What one run may leave behind."""

    run_id: str
    runner_pid: int
    out_dir: str
    interfaces: list[str] = field(default_factory=list)
    ovs_dir: str = ""
    started: str = ""  # UTC, set by the runner's first save
    runner_start: int = 0  # the runner's start time (start_ticks), set by its first save

    @property
    def path(self) -> Path:
        """The state file."""
        return STATE_DIR / f"{self.run_id}.json"

    def save(self) -> None:
        """Write the state file atomically (the runner's own save also records when and,
        against PID reuse, which process it is)."""
        if self.runner_pid == os.getpid():
            self.started = self.started or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.runner_start = self.runner_start or start_ticks(self.runner_pid) or 0
        private_dir(STATE_DIR)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(self.path)

    def remove(self) -> None:
        """Delete the state file (the run cleaned up after itself)."""
        self.path.unlink(missing_ok=True)


def load_states() -> list[RunState]:
    """All registered runs (unreadable files are skipped: they hold nothing usable)."""
    states = []
    for p in sorted(STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else ():
        try:
            states.append(RunState(**json.loads(p.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return states


def marked_pids(run_id: str | None = None) -> list[int]:
    """PIDs whose environment carries our marker (for ``run_id``, or any run)."""
    needle = f"{ENV_MARKER}={run_id}".encode() if run_id else f"{ENV_MARKER}=".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue  # exited, or a kernel thread
        if any(
            var == needle if run_id else var.startswith(needle) for var in env.split(b"\0")
        ):  # one run's id is never taken for a prefix of another's (123-45 / 123-456)
            pids.append(int(entry.name))
    return pids


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists (and is not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot, /proc/<pid>/stat field 22): with the
    PID, it names one process even after the PID is reused.  None if it does not exist."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def runner_alive(state: RunState) -> bool:
    """Whether the runner that recorded ``state`` still runs (not this process; a reused
    PID does not count when the record has the runner's start time)."""
    if state.runner_pid == os.getpid() or not pid_alive(state.runner_pid):
        return False
    return not state.runner_start or start_ticks(state.runner_pid) == state.runner_start
