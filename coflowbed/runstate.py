"""The registry of live runs, so ``coflowbed clean`` can find what a run left behind
even after the runner was killed with SIGKILL.

Every process a run starts inherits ``COFLOWBED_RUN=<run id>`` in its environment (that
is how clean-up recognises *our* processes, by PID, without matching command lines).  A
state file ``/run/coflowbed/<run id>.json`` names the runner's PID, the run folder and
the interfaces the run creates; it is written before anything starts and removed after
the run cleaned up.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

ENV_MARKER = "COFLOWBED_RUN"
STATE_DIR = Path(os.environ.get("COFLOWBED_STATE_DIR", "/run/coflowbed"))


@dataclass
class RunState:
    """What one run may leave behind."""

    run_id: str
    runner_pid: int
    out_dir: str
    interfaces: list[str] = field(default_factory=list)
    ovs_dir: str = ""

    @property
    def path(self) -> Path:
        """The state file."""
        return STATE_DIR / f"{self.run_id}.json"

    def save(self) -> None:
        """Write the state file atomically."""
        STATE_DIR.mkdir(parents=True, exist_ok=True)
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
        if any(var.startswith(needle) for var in env.split(b"\0")):
            pids.append(int(entry.name))
    return pids


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists (and is not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
