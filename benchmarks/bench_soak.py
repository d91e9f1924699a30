"""Soak benchmark (root; run under the fabric lock; not part of ``make bench``):

    flock /tmp/coflowbed-fabric.lock .venv/bin/python benchmarks/bench_soak.py \\
        [--runs 50] [--kills 10] [--scenario coflowbed/scenarios/mechanism.yaml]

Phase 1: ``--runs`` back-to-back runs of the scenario in this process (as ``coflowbed
compare`` runs them: one runner, many runs).  Phase 2: ``--kills`` times, a ``coflowbed
run`` subprocess SIGKILLed at a random instant of a run (uniform over the phase-1 run
time), then a normal run in this process (it finds the killed run's state and cleans it
first).  After every run it counts what is left: processes carrying the project's marker
or children of this process, interfaces and network namespaces that were not there
before, OVS databases and runtime folders under the registry, run-state files, the
sysctl the OVS service changes, and this runner's open file descriptors and threads.
Prints one line per run and a summary; exit 1 if anything was left or a normal run was
partial.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coflowbed.emulation import runstate  # noqa: E402
from coflowbed.emulation.cleanup import netns_inodes  # noqa: E402
from coflowbed.experiment.scenario import load_scenario  # noqa: E402
from coflowbed.studies.single import emulate  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WMEM = Path("/proc/sys/net/core/wmem_default")


def parse_args() -> argparse.Namespace:
    """Options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50, help="back-to-back runs (phase 1)")
    p.add_argument("--kills", type=int, default=10, help="SIGKILLed runs, each + a normal run")
    p.add_argument("--scenario", type=Path, default=REPO / "coflowbed/scenarios/mechanism.yaml")
    p.add_argument("--seed", type=int, default=1, help="seed of the kill instants")
    p.add_argument("--out", type=Path, default=None, help="results parent (default: a tmp dir)")
    a = p.parse_args()
    if a.runs < 1 or a.kills < 0:
        p.error("--runs must be >= 1 and --kills >= 0")
    if not a.scenario.is_file():
        p.error(f"--scenario {a.scenario}: no such file")
    return a


@dataclass
class Baseline:
    """What the machine had before the first run."""

    interfaces: set[str]
    netns: set[int]
    wmem: str


def children() -> list[int]:
    """PIDs whose parent is this process (zombies included)."""
    me, kids = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me:
                kids.append(int(entry.name))
    return kids


def leftovers(base: Baseline) -> dict[str, int]:
    """Counts of what is left now, beyond the baseline (0 everywhere = clean)."""
    state = runstate.STATE_DIR
    return {
        "procs": len(set(runstate.marked_pids()) | set(children())),
        "intfs": len(set(os.listdir("/sys/class/net")) - base.interfaces),
        "netns": len(netns_inodes() - base.netns),
        "ovsdb": len(list(state.glob("*/ovs/conf.db"))) if state.is_dir() else 0,
        "rundirs": len([p for p in state.iterdir() if p.is_dir()]) if state.is_dir() else 0,
        "states": len(list(state.glob("*.json"))) if state.is_dir() else 0,
        "sysctl": int(WMEM.read_text() != base.wmem),
    }


def fds() -> int:
    """Open file descriptors of this process (the runner)."""
    return len(os.listdir("/proc/self/fd"))


def normal_run(scen_path: Path, out: Path) -> tuple[float, bool]:
    """One run in this process: (wall s, complete)."""
    scen = load_scenario(scen_path)
    t0 = time.monotonic()
    outcome = emulate(scen, out)
    return time.monotonic() - t0, not outcome.summary.partial


def killed_run(scen_path: Path, out: Path, after_s: float) -> float:
    """A ``coflowbed run`` subprocess SIGKILLed ``after_s`` s after its start (or its own
    exit if sooner); returns when it was killed (s after start)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "coflowbed", "-q", "run", str(scen_path), "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    t0 = time.monotonic()
    try:
        proc.wait(after_s)  # a deadline, not a pause: returns early if the run ends
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    return time.monotonic() - t0


class StaleLines(logging.Handler):
    """Keeps the runner's 'cleaned stale run' lines; prints its errors."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "stale run" in msg:
            self.lines.append(msg)
        elif record.levelno >= logging.ERROR:  # why a run was partial
            print(f"    runner: {msg}", file=sys.stderr, flush=True)


def report(label: str, wall: float, ok: bool, left: dict[str, int], extra: str = "") -> None:
    """One line per run."""
    dirty = " ".join(f"{k}={v}" for k, v in left.items() if v) or "clean"
    print(
        f"{label:>10}  {wall:6.1f} s  {'complete' if ok else 'PARTIAL':8}  "
        f"fds={fds():3d} threads={threading.active_count():2d}  {dirty}{extra}",
        flush=True,
    )


def main() -> int:
    """Both phases; the summary."""
    args = parse_args()
    if os.geteuid() != 0:
        print("bench_soak: needs root (a real fabric)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.ERROR, format="%(levelname).1s %(name)s: %(message)s")
    stale = StaleLines()
    logging.getLogger("runner").addHandler(stale)
    logging.getLogger("runner").setLevel(logging.WARNING)
    logging.getLogger("runner").propagate = False  # only the stale-run lines, counted
    out = args.out or Path(tempfile.mkdtemp(prefix="coflowbed-soak-"))
    base = Baseline(set(os.listdir("/sys/class/net")), netns_inodes(), WMEM.read_text())
    fds0, rng = fds(), random.Random(args.seed)
    times, bad = [], 0
    print(f"phase 1: {args.runs} back-to-back runs of {args.scenario.name} (fds at start {fds0})")
    for i in range(args.runs):
        wall, ok = normal_run(args.scenario, out / f"run{i:03d}")
        left = leftovers(base)
        bad += (not ok) + any(left.values())
        times.append(wall)
        report(f"run {i + 1}", wall, ok, left)
    fds1 = fds()
    mean = statistics.mean(times)
    print(f"phase 2: {args.kills} runs SIGKILLed at U(0.5, {mean:.1f}) s, each then a normal run")
    kill_at, after_times, cleaned = [], [], 0
    for k in range(args.kills):
        at = rng.uniform(0.5, mean)
        killed_s = killed_run(args.scenario, out / f"killed{k:02d}", at)
        kill_at.append(killed_s)
        n_stale = len(stale.lines)
        wall, ok = normal_run(args.scenario, out / f"after{k:02d}")
        said = len(stale.lines) - n_stale
        cleaned += said > 0
        left = leftovers(base)
        bad += (not ok) + any(left.values())
        after_times.append(wall)
        note = f"  (killed at {killed_s:.1f} s; stale lines {said})"
        report(f"kill {k + 1}", wall, ok, left, note)
    print()
    _summary("back-to-back", times)
    if after_times:
        _summary("after a kill", after_times)
        print(
            f"kills: {len(kill_at)} at {min(kill_at):.1f}-{max(kill_at):.1f} s; the next run "
            f"cleaned a stale run {cleaned} times (a run killed before it registered leaves none)"
        )
        if stale.lines:
            print(f"the last such line: {stale.lines[-1]}")
    print(f"runner fds: {fds0} at start, {fds1} after phase 1, {fds()} at the end")
    print(f"runs with something left or partial: {bad}")
    return 1 if bad else 0


def _summary(what: str, times: list[float]) -> None:
    q = statistics.quantiles(times, n=20, method="inclusive") if len(times) >= 2 else times
    print(
        f"{what}: {len(times)} runs, wall mean {statistics.mean(times):.1f} s, median "
        f"{statistics.median(times):.1f} s, p95 {q[-1]:.1f} s, max {max(times):.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
