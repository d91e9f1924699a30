"""Before/after benchmark of the simulator across two git revisions, alternated in one
sitting: the Facebook trace (or a prefix) under each policy, each run in a child process
of its revision's own checkout (a ``git archive`` in a scratch directory, its numba cache
compiled once before timing).  Prints per run: revision, policy, options, simulation wall
time (trace already built), events, average CCT; per policy the largest relative
per-coflow CCT difference of each revision against the first; and the load average.

    .venv/bin/python benchmarks/bench_sim_revs.py --revs main,WORKTREE --policies fair,fifo
        [--limit N] [--reps 1] [--options incremental=1]

``WORKTREE`` is this checkout as it is on disk.  ``--options`` (key=value,...) are
``Simulator`` keyword arguments given to the revisions other than the first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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
for warm in ("fair", "dclas"):
    Simulator(fbtrace.to_dag(trace, None, limit=3), fab, policies.get(warm), None, **kw).run()
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


def run_child(tree: Path, policy: str, limit: int, kw: dict, out: Path, trace: Path) -> dict:
    """One simulation in a child process on ``tree``'s code: its figures."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, "-c", CHILD, policy, str(limit), str(out), json.dumps(kw), str(trace)]
    done = subprocess.run(args, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


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


def bench_policy(policy: str, trees: list[tuple[str, Path]], args, scratch: Path) -> None:
    """Alternated runs of every revision on one policy; print each and the differences."""
    kw = parse_options(args.options)
    ccts: dict[str, np.ndarray] = {}
    for rep in range(args.reps):
        order = trees if rep % 2 == 0 else trees[::-1]
        for name, tree in order:
            out = scratch / f"{policy}-{len(ccts)}.npy"
            opts = kw if name != trees[0][0] else {}
            r = run_child(tree, policy, args.limit, opts, out, args.trace)
            ccts[name] = np.load(out)
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


def main() -> int:
    """Parse flags, check out the revisions, run the alternated benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revs", default=f"HEAD,{WORKTREE}")
    ap.add_argument("--policies", default="fair,fifo,dclas,sincronia")
    ap.add_argument("--limit", type=int, default=0, help="coflows of the trace (0: all)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--options", default="", help="Simulator kwargs of the later revisions")
    ap.add_argument("--trace", type=Path, default=REPO / "data" / "FB2010-1Hr-150-0.txt")
    args = ap.parse_args()
    if args.limit < 0 or args.reps < 1:
        sys.exit("--limit must be >= 0 and --reps >= 1")
    revs = [r for r in args.revs.split(",") if r]
    if len(revs) < 2:
        sys.exit("--revs: give at least two revisions")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        trees = [(rev, checkout(rev, scratch)) for rev in revs]
        for pol in filter(None, args.policies.split(",")):
            bench_policy(pol, trees, args, scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
