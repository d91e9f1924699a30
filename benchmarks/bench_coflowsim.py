"""Benchmark of the CoflowSim model (``simulate --model coflowsim``) against CoflowSim.

Per policy (fair, fifo, sebf, dclas = CoflowSim's FAIR, FIFO, SEBF, DARK) prints our
coflowsim-model average CCT and wall time and, when CoflowSim is given, CoflowSim's
average CCT, its wall time, their ratio and how many coflows got the same CCT (to
1e-6 of CoflowSim's ms); ``--default`` adds the default model's average and wall time.
CCTs are seconds: CoflowSim ms / 1024 (its simulated second).  Usage::

    .venv/bin/python benchmarks/bench_coflowsim.py [--trace PATH] [--limit N]
        [--policies fair,fifo,sebf,dclas] [--coflowsim-dir DIR [--save DIR] | --coflowsim-out DIR]
        [--default]

``--coflowsim-dir DIR``: CoflowSim's compiled classes or jar (built outside this repo:
``javac -d DIR $(find src -name '*.java')`` in a checkout of coflow/coflowsim); the
bench runs ``java -cp DIR coflowsim.CoflowSim ALGO COFLOW-BENCHMARK TRACE`` once per
policy and times it.  ``--coflowsim-out DIR``: read CoflowSim's stdout saved earlier as
``DIR/out-ALGO.txt`` instead (no wall time then).  ``--limit N`` runs the first N
coflows (CoflowSim gets a trimmed copy of the trace).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coflowbed.sim import coflowsim  # noqa: E402
from coflowbed.sim.coflowsim.consts import SECOND  # noqa: E402
from workload import fbtrace  # noqa: E402

FB = REPO / "data" / "FB2010-1Hr-150-0.txt"


@dataclass(frozen=True)
class Figures:
    """One model's result on one policy: per-coflow CCT (CoflowSim ms) and wall time."""

    cct_ms: dict[str, float]
    wall_s: float | None

    @property
    def avg_s(self) -> float:
        """Average CCT, seconds."""
        return sum(self.cct_ms.values()) / len(self.cct_ms) / SECOND


def ours(trace: fbtrace.Trace, policy: str) -> Figures:
    """Our coflowsim model (trace layout included in the time)."""
    t0 = time.perf_counter()
    run = coflowsim.run_trace(trace, trace.ports, policy)
    wall = time.perf_counter() - t0
    ccts = run.outcome.cct_ms.tolist()
    return Figures({j.coflow_id[2:]: c for j, c in zip(run.workload.jobs, ccts)}, wall)


def default_model(trace: fbtrace.Trace, policy: str) -> Figures:
    """The default fluid model, as ``simulate --trace`` runs it (s -> CoflowSim ms)."""
    from coflowbed.sim import parse_fabric_spec, simulate
    from controller import policies

    t0 = time.perf_counter()
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    result = simulate(fbtrace.to_dag(trace, None), fabric, policies.get(policy), None)
    wall = time.perf_counter() - t0
    recs = result.coflow_records()
    return Figures({r.coflow_id[2:]: (r.cct_s or 0.0) * SECOND for r in recs}, wall)


def parse_coflowsim(text: str) -> dict[str, float]:
    """Per-job duration (ms) from CoflowSim's stdout (``JOB-<id> start finish ... dur``)."""
    out = {}
    for line in text.splitlines():
        tok = line.split()
        if len(tok) >= 8 and tok[0].startswith("JOB-"):
            out[tok[0][4:]] = float(tok[7])
    return out


def run_coflowsim(classes: Path, trace_path: Path, algo: str, save: Path | None) -> Figures:
    """Run CoflowSim on the trace file and time it; keep its stdout as
    ``save/out-ALGO.txt`` if ``save`` is given (readable by ``--coflowsim-out``)."""
    java = shutil.which("java") or "java"
    cmd = [java, "-cp", str(classes), "coflowsim.CoflowSim", algo, "COFLOW-BENCHMARK"]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cmd, str(trace_path)], capture_output=True, text=True, check=True, encoding="utf-8"
    )
    wall = time.perf_counter() - t0
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"out-{algo}.txt").write_text(proc.stdout)
    return Figures(parse_coflowsim(proc.stdout), wall)


def trimmed(trace_path: Path, limit: int | None, tmp: Path) -> Path:
    """The trace file itself, or its first ``limit`` coflows in a temporary copy."""
    if limit is None:
        return trace_path
    lines = trace_path.read_text().splitlines()
    ports = lines[0].split()[0]
    out = tmp / f"{trace_path.stem}-first{limit}.txt"
    out.write_text("\n".join([f"{ports} {limit}", *lines[1 : 1 + limit]]) + "\n")
    return out


def reference(args: argparse.Namespace, path: Path, algo: str) -> Figures | None:
    """CoflowSim's figures: run it, read a saved output, or None."""
    if args.coflowsim_dir:
        return run_coflowsim(args.coflowsim_dir, path, algo, args.save)
    if args.coflowsim_out:
        saved = args.coflowsim_out / f"out-{algo}.txt"
        return Figures(parse_coflowsim(saved.read_text()), None) if saved.exists() else None
    return None


def _wall(fig: Figures | None) -> str:
    """Wall time column."""
    return "-" if fig is None or fig.wall_s is None else f"{fig.wall_s:.2f} s"


def line(policy: str, mine: Figures, ref: Figures | None, dflt: Figures | None) -> str:
    """One row of the table."""
    row = f"{policy:6} ours {mine.avg_s:9.3f} s in {_wall(mine):>9}"
    if dflt is not None:
        row += f" | default {dflt.avg_s:9.3f} s in {_wall(dflt):>9}"
    if ref is None:
        return row + " | CoflowSim not run (give --coflowsim-dir or --coflowsim-out)"
    same = sum(abs(mine.cct_ms.get(k, -1.0) - v) <= 1e-6 for k, v in ref.cct_ms.items())
    return (
        row + f" | CoflowSim {ref.avg_s:9.3f} s in {_wall(ref):>9} | ours/CoflowSim "
        f"{mine.avg_s / ref.avg_s:.4f}, same CCT {same}/{len(ref.cct_ms)}"
    )


def main() -> int:
    """Parse flags, run each policy, print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=FB)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--policies", default="fair,fifo,sebf,dclas")
    ap.add_argument("--coflowsim-dir", type=Path)
    ap.add_argument("--coflowsim-out", type=Path)
    ap.add_argument("--save", type=Path, help="keep CoflowSim's outputs here")
    ap.add_argument("--default", action="store_true", help="also run the default model")
    args = ap.parse_args()
    trace = fbtrace.read_trace(args.trace)
    if args.limit is not None:
        trace = fbtrace.Trace(trace[: args.limit], trace.ports, trace.path)
    print(f"{args.trace.name}: {len(trace)} coflows, {trace.ports} racks")
    with tempfile.TemporaryDirectory() as tmp:
        path = trimmed(args.trace, args.limit, Path(tmp))
        for policy in args.policies.split(","):
            mine = ours(trace, policy)
            dflt = default_model(trace, policy) if args.default else None
            ref = reference(args, path, coflowsim.POLICIES[policy])
            print(line(policy, mine, ref=ref, dflt=dflt), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
