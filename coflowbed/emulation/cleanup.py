"""``coflowbed clean``: end what runs of this project left behind, and nothing else.

Order: ask a live runner to stop (SIGTERM, it cleans up itself), then end every process
carrying our environment marker by PID, delete the interfaces the run registered,
restore the sysctl the OVS service changed, and drop the state file.  A new run does the
same for the runs of dead runners it finds (:func:`reclaim_stale`).
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from coflowbed.emulation import runstate
from coflowbed.emulation.runstate import RunState
from topo import ovs

log = logging.getLogger("clean")


def _protected() -> set[int]:
    """Our own PID and our ancestors': never signalled (they may carry the marker)."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def end_pids(pids: list[int], grace_s: float = 3.0) -> list[int]:
    """SIGTERM ``pids``, wait up to ``grace_s`` for them to exit, SIGKILL the rest.
    Returns the PIDs that were signalled."""
    pids = [p for p in pids if p not in _protected()]
    fds = _pidfds(pids)
    for p in pids:
        _signal(p, signal.SIGTERM)
    _wait_exit(fds, grace_s)
    for p in pids:
        if runstate.pid_alive(p):
            _signal(p, signal.SIGKILL)
    _wait_exit(fds, 2.0)
    for fd in fds.values():
        os.close(fd)
    return pids


def _pidfds(pids: list[int]) -> dict[int, int]:
    """pidfds (readable once the process exits) of the PIDs that still exist."""
    fds = {}
    for p in pids:
        try:
            fds[p] = os.pidfd_open(p)
        except ProcessLookupError:
            pass
    return fds


def _wait_exit(fds: dict[int, int], timeout_s: float) -> None:
    """Wait until every process behind ``fds`` exited, or ``timeout_s`` passed."""
    poller = select.poll()
    for fd in fds.values():
        poller.register(fd, select.POLLIN)
    pending, deadline = len(fds), time.monotonic() + timeout_s
    while pending and (left := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(left * 1000):
            poller.unregister(fd)
            pending -= 1


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def delete_interfaces(names: list[str]) -> list[str]:
    """Delete the named links that still exist in this namespace; returns those deleted."""
    present = set(Path("/sys/class/net").iterdir()) if Path("/sys/class/net").is_dir() else set()
    present_names = {p.name for p in present}
    deleted = []
    for name in names:
        if name in present_names:
            subprocess.run(
                ["ip", "link", "del", "dev", name],
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deleted.append(name)
    return deleted


def netns_inodes() -> set[int]:
    """Network namespaces some process of the machine is in (their inode numbers): what
    the leftover checks of the soak benchmark and the stale-run tests compare."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.add(os.stat(entry / "ns" / "net").st_ino)
            except OSError:
                continue  # the process ended meanwhile
    return found


def clean_run(state: RunState, end_runner: bool = True) -> dict:
    """Clean up one registered run; returns what was done.  ``end_runner``: ask its
    runner to stop first if it still runs (False when it is known dead)."""
    done: dict = {"run": state.run_id}
    if end_runner and state.runner_pid not in _protected() and runstate.runner_alive(state):
        done["runner"] = end_pids([state.runner_pid], grace_s=20.0)
    done["processes"] = end_pids(runstate.marked_pids(state.run_id))
    done["interfaces"] = delete_interfaces(state.interfaces)
    if state.ovs_dir:
        runtime = Path(state.ovs_dir)
        done["sysctl"] = _restore_ovs_sysctl(runtime)
        if runtime.parent == runstate.STATE_DIR:  # only our own runtime folders
            done["runtime"] = runtime.is_dir()
            shutil.rmtree(runtime, ignore_errors=True)
    state.remove()
    return done


def reclaim_stale() -> list[str]:
    """Clean every recorded run, called with the run lock held (``runstate.claim``): each
    is then a dead runner's.  Returns one line per run cleaned.  Marked processes of no
    recorded run are left to ``coflowbed clean`` (they may be another tool's)."""
    lines = []
    for state in runstate.load_states():
        done = clean_run(state, end_runner=False)
        sysctl = done.get("sysctl")
        lines.append(
            f"cleaned stale run {state.run_id} (runner pid {state.runner_pid} dead, started "
            f"{state.started or '?'}): ended {len(done['processes'])} processes, deleted "
            f"{len(done['interfaces'])} interfaces"
            + (", removed its OVS/runtime folder" if done.get("runtime") else "")
            + (f", restored net.core.wmem_default={sysctl}" if sysctl is not None else "")
        )
    return lines


def _restore_ovs_sysctl(ovs_dir: Path) -> int | None:

    return ovs.restore_sysctl(ovs_dir)


def clean_all() -> list[dict]:
    """Clean every registered run, then any stray marked process."""
    reports = [clean_run(s) for s in runstate.load_states()]
    stray = end_pids(runstate.marked_pids())
    if stray:
        reports.append({"run": "(unregistered)", "processes": stray})
    return reports
