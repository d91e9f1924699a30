"""Before/after benchmark of the simulator across two git revisions, alternated in one
sitting: the Facebook trace (or a prefix) under each policy, each run in a child process
of its revision's own checkout (a ``git archive`` in a scratch directory, its numba cache
compiled before timing by short runs of fair, D-CLAS and the policy timed: 40 coflows,
enough for the restarted fillings' kernels).  Prints per run: revision, policy,
options, simulation wall time (trace already built), events, average CCT; per policy
the largest relative per-coflow CCT difference of each revision against the first; and
the load average.

    .venv/bin/python benchmarks/bench_sim_revs.py --revs main,WORKTREE --policies fair,fifo
        [--limit N] [--reps 1] [--options incremental=1] [--paired]
        [--scale-to fair=70.5,sincronia=106.5]

``WORKTREE`` is this checkout as it is on disk.  ``--options`` (key=value,...) are
``Simulator`` keyword arguments given to the revisions other than the first; a revision
may come twice (``--revs HEAD,HEAD --options finish_tol=1e-4``: the same code with and
without them, the repeat named ``HEAD#2``).

``--scale-to policy=seconds,...``: the first revision's time for a policy as measured in
another sitting (an issue's figure, another host): every revision's median is also
printed scaled to it (its median × seconds / the first revision's median here), the
figure it would have taken there.  Hosts of one kind differ by up to 2× between boots;
the ratio of two revisions run in one sitting keeps much less of that.

``--paired`` (two revisions, two CPUs): each repetition runs both revisions at the same
time, each pinned to its own CPU (swapped at every repetition), both timed from when
both have warmed up, and prints the ratio of their times, second over first, then the
median and range of the ratios.  The host's load changes from minute to minute by more
than most changes gain (runs of the same code differ by 15 % between sittings); two
runs side by side see the same load, so their ratio keeps much less of it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WORKTREE = "WORKTREE"
CHILD = """
import json, sys, numpy as np
from coflowbed.sim import Simulator, parse_fabric_spec
from controller import policies
from workload import fbtrace
policy, limit, out, kw = sys.argv[1], int(sys.argv[2]) or None, sys.argv[3], json.loads(sys.argv[4])
trace = fbtrace.read_trace(sys.argv[5])
fab = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
for warm, n in (("fair", 3), ("dclas", 3), (policy, 40)):  # compiled before timing
    Simulator(fbtrace.to_dag(trace, None, limit=n), fab, policies.get(warm), None, **kw).run()
print("ready", flush=True)
sys.stdin.readline()  # the parent's go: a paired run's two children start timing together
sim = Simulator(fbtrace.to_dag(trace, None, limit=limit), fab, policies.get(policy), None, **kw)
sim.run()
np.save(out, np.array([o.finish_s - o.release_s for o in sim.outcomes]))
print(json.dumps({"wall_s": sim.stats.wall_s, "events": sim.stats.events}))
"""


def checkout(rev: str, scratch: Path) -> Path:
    """A directory holding ``rev``'s tree (this worktree itself for WORKTREE)."""
    if rev == WORKTREE:
        return REPO
    dest = scratch / rev.replace("/", "_")
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True)
    if archive.returncode:
        sys.exit(f"--revs: git archive {rev!r} failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def labels(revs: list[str]) -> list[str]:
    """A name per revision, ``#2``, ``#3``... added to a repeat (``--revs HEAD,HEAD
    --options ...``: the same code with and without the options)."""
    seen: dict[str, int] = {}
    out = []
    for rev in revs:
        seen[rev] = seen.get(rev, 0) + 1
        out.append(rev if seen[rev] == 1 else f"{rev}#{seen[rev]}")
    return out


@dataclass(frozen=True)
class Child:
    """A benchmark child process and the file its stderr goes to (a file, not a pipe:
    while the parent waits on its stdout, a full stderr pipe would block it)."""

    proc: subprocess.Popen
    err: Path


def start_child(tree: Path, policy: str, limit: int, kw: dict, out: Path, trace: Path, cpu=None):
    """One simulation in a child process on ``tree``'s code (pinned to ``cpu`` if
    given), started: ``finish_child`` waits for its figures."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, "-c", CHILD, policy, str(limit), str(out), json.dumps(kw), str(trace)]
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    pipe, err = subprocess.PIPE, out.with_suffix(".err")
    with err.open("w") as sink:
        proc = subprocess.Popen(
            args,
            env=env,
            cwd=tree,
            stdin=pipe,
            stdout=pipe,
            stderr=sink,
            text=True,
            preexec_fn=pin,
        )
    return Child(proc, err)


def last_line(child: Child) -> str:
    """The last non-empty line of a child's stderr (its exception), for a one-line error."""
    lines = child.err.read_text().strip().splitlines()
    return lines[-1] if lines else "(no output)"


def ready(child: Child) -> None:
    """Wait until a child from ``start_child`` has warmed up (its numba code compiled)."""
    assert child.proc.stdout is not None  # start_child pipes it
    line = child.proc.stdout.readline()
    if line.strip() != "ready":
        child.proc.kill()
        child.proc.communicate()
        sys.exit(f"benchmark child failed before timing: {last_line(child)}")


def go(child: Child) -> None:
    """Let a child that is ``ready`` start its timed simulation."""
    assert child.proc.stdin is not None  # start_child pipes it
    child.proc.stdin.write("go\n")
    child.proc.stdin.flush()


def finish_child(child: Child) -> dict:
    """The figures of a child that was let ``go`` (its stderr if it failed)."""
    out, _err = child.proc.communicate()
    if child.proc.returncode:
        sys.exit(f"benchmark child failed ({child.proc.returncode}): {last_line(child)}")
    return json.loads(out.strip().splitlines()[-1])


def run_child(tree: Path, policy: str, limit: int, kw: dict, out: Path, trace: Path) -> dict:
    """One simulation in a child process on ``tree``'s code: its figures."""
    child = start_child(tree, policy, limit, kw, out, trace)
    ready(child)
    go(child)
    return finish_child(child)


def max_rel(a: np.ndarray, b: np.ndarray) -> float:
    """Largest relative difference of the coflows finished in both."""
    ok = np.isfinite(a) & np.isfinite(b)
    return float(np.max(np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-12), initial=0.0))


def parse_options(text: str) -> dict:
    """``key=value,...`` as keyword arguments (ints, floats, else strings)."""
    kw: dict = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"--options: {item!r} is not key=value")
        kw[key] = json.loads(value) if value[:1].isdigit() or value[:1] == "-" else value
    return kw


def load() -> str:
    """The 1-minute load average, as ``uptime`` gives it."""
    return f"{os.getloadavg()[0]:.2f}"


def parse_scale(text: str, policies: list[str]) -> dict[str, float]:
    """``policy=seconds,...`` (``--scale-to``) as {policy: seconds}; exits with a
    one-line error naming the item and why for a malformed item, a policy not
    benchmarked or a time that is not a positive number."""
    scale: dict[str, float] = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or key not in policies:
            sys.exit(f"--scale-to: {item!r} is not policy=seconds for a policy of --policies")
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not seconds > 0 or math.isinf(seconds):
            sys.exit(f"--scale-to: {key}: {value!r} is not a positive number of seconds")
        scale[key] = seconds
    return scale


def medians_line(policy: str, walls: dict[str, list[float]], ref: float | None) -> str:
    """Each revision's median time on ``policy``, its ratio to the first revision's
    and, given the first's time ``ref`` measured elsewhere, the median scaled to it."""
    names = list(walls)
    base = float(np.median(walls[names[0]]))
    parts = []
    for name in names:
        med = float(np.median(walls[name]))
        part = f"{name} {med:.2f} s ({med / base:.3f})"
        if ref is not None:
            part += f" -> {med * ref / base:.2f} s"
        parts.append(part)
    at = "" if ref is None else f"; scaled to {names[0]} = {ref:.2f} s"
    return f"{policy}: median over {len(walls[names[0]])} runs, ratio to {names[0]}{at}: " + (
        ", ".join(parts)
    )


def scaled_pair(first: str, second: str, ratio: float, ref: float | None) -> str:
    """A paired run's median ratio ``second / first`` applied to the first's time
    ``ref`` measured elsewhere (empty without one)."""
    return "" if ref is None else f"; at {first} = {ref:.2f} s: {second} {ref * ratio:.2f} s"


def bench_policy(policy: str, trees: list[tuple[str, Path]], args, scratch: Path) -> None:
    """Alternated runs of every revision on one policy; print each, the differences
    and the medians (scaled by ``--scale-to``)."""
    kw = parse_options(args.options)
    ccts: dict[str, np.ndarray] = {}
    walls: dict[str, list[float]] = {name: [] for name, _tree in trees}
    for rep in range(args.reps):
        order = trees if rep % 2 == 0 else trees[::-1]
        for name, tree in order:
            out = scratch / f"{policy}-{len(ccts)}.npy"
            opts = kw if name != trees[0][0] else {}
            r = run_child(tree, policy, args.limit, opts, out, args.trace)
            ccts[name] = np.load(out)
            walls[name].append(r["wall_s"])
            print(
                f"{name:<12} {policy:<10} {json.dumps(opts):<22} sim {r['wall_s']:8.2f} s  "
                f"events {r['events']:>6}  avg CCT {np.nanmean(ccts[name]):.6f} s  "
                f"load {load()}",
                flush=True,
            )
    first = trees[0][0]
    for name, _tree in trees[1:]:
        print(
            f"{policy}: max rel CCT diff {name} vs {first}: {max_rel(ccts[first], ccts[name]):.2e}"
        )
    print(medians_line(policy, walls, args.scale.get(policy)), flush=True)


def two_cpus() -> tuple[int, int]:
    """Two CPUs this process may run on (``--paired``), else exit with why."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit(f"--paired: needs two CPUs, this process may use {len(cpus)}")
    return cpus[0], cpus[1]


def bench_paired(policy: str, trees: list[tuple[str, Path]], args, scratch: Path) -> None:
    """Both revisions side by side, one per CPU (swapped every repetition); print each
    pair, the ratio second / first, and the median and range of the ratios."""
    kw, cpus = parse_options(args.options), two_cpus()
    (first, tree_a), (second, tree_b) = trees
    ratios = []
    for rep in range(args.reps):
        cpu_a, cpu_b = cpus if rep % 2 == 0 else cpus[::-1]
        outs = (scratch / f"{policy}-a{rep}.npy", scratch / f"{policy}-b{rep}.npy")
        a = start_child(tree_a, policy, args.limit, {}, outs[0], args.trace, cpu_a)
        b = start_child(tree_b, policy, args.limit, kw, outs[1], args.trace, cpu_b)
        try:
            ready(a)
            ready(b)
            go(a)
            go(b)
            ra, rb = finish_child(a), finish_child(b)
        finally:  # one failed or was interrupted: the other does not run on
            for child in (a, b):
                if child.proc.poll() is None:
                    child.proc.kill()
                    child.proc.wait()
        ratios.append(rb["wall_s"] / ra["wall_s"])
        print(
            f"{policy:<10} {first} {ra['wall_s']:7.2f} s (cpu {cpu_a})  {second} "
            f"{rb['wall_s']:7.2f} s (cpu {cpu_b})  ratio {ratios[-1]:.3f}  "
            f"avg CCT {np.nanmean(np.load(outs[0])):.6f} / {np.nanmean(np.load(outs[1])):.6f} s"
            f"  load {load()}",
            flush=True,
        )
    diff = max_rel(np.load(outs[0]), np.load(outs[1]))
    at = scaled_pair(first, second, float(np.median(ratios)), args.scale.get(policy))
    print(
        f"{policy}: {second} / {first} median {np.median(ratios):.3f} "
        f"[{min(ratios):.3f}, {max(ratios):.3f}] over {len(ratios)} pairs; "
        f"max rel CCT diff {diff:.2e}{at}"
    )


def main() -> int:
    """Parse flags, check out the revisions, run the alternated (or paired) benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revs", default=f"HEAD,{WORKTREE}")
    ap.add_argument("--policies", default="fair,fifo,dclas,sincronia")
    ap.add_argument("--limit", type=int, default=0, help="coflows of the trace (0: all)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--options", default="", help="Simulator kwargs of the later revisions")
    ap.add_argument("--trace", type=Path, default=REPO / "data" / "FB2010-1Hr-150-0.txt")
    ap.add_argument("--paired", action="store_true", help="two revisions side by side")
    ap.add_argument(
        "--scale-to", default="", help="policy=seconds,...: the first revision's times elsewhere"
    )
    args = ap.parse_args()
    if args.limit < 0 or args.reps < 1:
        sys.exit("--limit must be >= 0 and --reps >= 1")
    revs = [r for r in args.revs.split(",") if r]
    if len(revs) < 2:
        sys.exit("--revs: give at least two revisions")
    if args.paired and len(revs) != 2:
        sys.exit(f"--paired: give exactly two revisions, got {len(revs)}")
    if args.paired:
        two_cpus()
    args.scale = parse_scale(args.scale_to, args.policies.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        tree_of = {rev: checkout(rev, scratch) for rev in dict.fromkeys(revs)}
        trees = list(zip(labels(revs), (tree_of[rev] for rev in revs)))
        bench = bench_paired if args.paired else bench_policy
        for pol in filter(None, args.policies.split(",")):
            bench(pol, trees, args, scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
