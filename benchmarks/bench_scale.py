"""Scale benchmark of DAG generation + simulation: one iteration of a Llama-3-405B-like
dense job and of a Qwen-like MoE at 1K..32K GPUs with real message sizes (byte_scale 1).

Each (case, GPUs, policy, fabric) runs in a child process, so that its peak RSS is its
own and covers generation and simulation.  Prints one line per run (GPUs, computes,
coflows, flows, events, generation / simulator setup / event loop / total seconds, peak
RSS, simulated iteration time), with the child's CPU seconds next to its wall time (the
machine may be shared), then per (case, policy, fabric) the power-law fit of
total time and of peak RSS against GPUs.  Usage::

    .venv/bin/python benchmarks/bench_scale.py [--cases llama405b,moe]
        [--gpus 1024,2048,4096,8192,16384,32768] [--policies hermod,fair]
        [--fabrics bigswitch,leafspine]

Fabrics: ``bigswitch`` = one non-blocking switch of the job's hosts at 400 Gbit/s;
``leafspine`` = 32 hosts per leaf, 32 spines, 400 Gbit/s everywhere (non-blocking,
ECMP per flow).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PORT_BPS = 400e9  # host NIC of the presets' real fabric (400 Gbit/s)
HOSTS_PER_LEAF = 32
SPINES = 32
GPUS = (1024, 2048, 4096, 8192, 16384, 32768)


def case_job(case: str, gpus: int):
    """The job spec of ``case`` at ``gpus`` GPUs (weak scaling: DP grows with GPUs,
    microbatches per replica fixed; real message sizes, byte_scale 1)."""
    from workload.presets import load_preset

    if case == "llama405b":
        # TP8 in host, PP16 (128 layers, see the preset), DP = GPUs / 128
        over = {"model.layers": 128, "parallelism.pp": 16, "parallelism.dp": gpus // 128}
        return load_preset("llama3-405b", {**over, "microbatches": 8, "byte_scale": 1.0})
    if case == "moe":
        # Qwen-MoE (64 experts, top-4) at 24 layers, PP4, EP64 over 8 hosts of 8 GPUs
        over = {
            "model.layers": 24,
            "parallelism.pp": 4,
            "parallelism.dp": gpus // 4,
            "parallelism.ep": 64,
            "placement.gpus_per_host": 8,
        }
        return load_preset("qwen-moe-12l", {**over, "microbatches": 8, "byte_scale": 1.0})
    raise ValueError(f"unknown case {case!r} (llama405b, moe)")


def case_fabric(kind: str, hosts: int):
    """The fabric ``kind`` sized for ``hosts`` hosts."""
    from coflowbed.sim import BigSwitch, LeafSpine
    from workload.placement import generic_hosts

    if kind == "bigswitch":
        return BigSwitch(tuple(generic_hosts(hosts)), PORT_BPS)
    if kind == "leafspine":
        leaves = -(-hosts // HOSTS_PER_LEAF)
        names = tuple(f"h{lf}_{n}" for lf in range(leaves) for n in range(HOSTS_PER_LEAF))
        return LeafSpine(names, HOSTS_PER_LEAF, SPINES, PORT_BPS, PORT_BPS)
    raise ValueError(f"unknown fabric {kind!r} (bigswitch, leafspine)")


@dataclass(frozen=True)
class ScaleRun:
    """Figures of one child run; wall and CPU seconds of generation, simulator setup
    and the event loop (the machine is shared: wall time varies with its load)."""

    case: str
    gpus: int
    policy: str
    fabric: str
    computes: int
    coflows: int
    flows: int
    events: int
    wall_s: tuple[float, float, float]
    cpu_s: tuple[float, float, float]
    peak_rss_gib: float
    iteration_s: float | None
    finished: bool

    @property
    def total_s(self) -> float:
        """Wall seconds of the three phases (DAG generation included)."""
        return sum(self.wall_s)

    @property
    def total_cpu_s(self) -> float:
        """CPU seconds of the three phases."""
        return sum(self.cpu_s)


def clocks() -> tuple[float, float]:
    """(wall, CPU) now."""
    return time.perf_counter(), time.process_time()


def run_child(case: str, gpus: int, policy: str, kind: str, wall_limit: float) -> ScaleRun:
    """Generate the job, build the simulator, run one iteration; figures."""
    from coflowbed.sim import Simulator
    from controller import policies
    from workload import generate

    marks = [clocks()]
    job = case_job(case, gpus)
    fabric = case_fabric(kind, job.hosts_needed)
    dag = generate(job, fabric.hosts[: job.hosts_needed])
    marks.append(clocks())
    sim = Simulator(dag, fabric, policies.get(policy), wall_limit_s=wall_limit)
    marks.append(clocks())
    sim.run()
    marks.append(clocks())
    wall, cpu = (tuple(b[k] - a[k] for a, b in zip(marks, marks[1:])) for k in (0, 1))
    spans = sim.dagstate.iteration_spans()  # {(job, iteration): (start, end)}
    start, end = spans[min(spans)] if spans else (0.0, None)
    return ScaleRun(
        case,
        job.world_gpus,
        policy,
        kind,
        len(dag.computes),
        len(dag.coflows),
        len(sim.flows),
        sim.stats.events,
        (wall[0], wall[1], wall[2]),
        (cpu[0], cpu[1], cpu[2]),
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        None if end is None else end - start,
        sim.stats.finished,
    )


def spawn(case: str, gpus: int, policy: str, kind: str, wall_limit: float) -> ScaleRun:
    """One run in a child process."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        f"{case}:{gpus}:{policy}:{kind}:{wall_limit}",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800)
    d = json.loads(out.stdout.strip().splitlines()[-1])
    return ScaleRun(**{**d, "wall_s": tuple(d["wall_s"]), "cpu_s": tuple(d["cpu_s"])})


def show(r: ScaleRun) -> None:
    """One line of figures."""
    it = "-" if r.iteration_s is None else f"{r.iteration_s:.3f}"
    phases = "/".join(f"{x:.1f}" for x in r.cpu_s)
    print(
        f"{r.case:<9} {r.fabric:<9} {r.policy:<6} {r.gpus:>6} {r.computes:>8} {r.coflows:>7} "
        f"{r.flows:>8} {r.events:>6} {r.total_s:>6.1f} {r.total_cpu_s:>6.1f} {phases:>15} "
        f"{r.peak_rss_gib:>5.2f} {it:>7}" + ("" if r.finished else "  UNFINISHED"),
        flush=True,
    )


HEADER = (
    f"{'case':<9} {'fabric':<9} {'policy':<6} {'GPUs':>6} {'computes':>8} {'coflows':>7} "
    f"{'flows':>8} {'events':>6} {'wall_s':>6} {'cpu_s':>6} {'cpu gen/set/sim':>15} "
    f"{'GiB':>5} {'iter_s':>7}"
)


def fit(runs: list[ScaleRun]) -> None:
    """Power-law exponents of wall time, CPU time and peak RSS against GPUs (finished
    runs only)."""
    runs = [r for r in runs if r.finished]
    if len(runs) < 2:
        return
    g = np.log([r.gpus for r in runs])
    kt = np.polyfit(g, np.log([r.total_s for r in runs]), 1)[0]
    kc = np.polyfit(g, np.log([r.total_cpu_s for r in runs]), 1)[0]
    km = np.polyfit(g, np.log([r.peak_rss_gib for r in runs]), 1)[0]
    r0 = runs[0]
    print(
        f"fit {r0.case} {r0.fabric} {r0.policy} ({runs[0].gpus}..{runs[-1].gpus} GPUs): "
        f"wall time ~ GPUs^{kt:.2f}, CPU time ~ GPUs^{kc:.2f}, peak RSS ~ GPUs^{km:.2f}",
        flush=True,
    )


def main() -> int:
    """Parse flags; run every combination one at a time; print lines and fits."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="llama405b,moe")
    ap.add_argument("--gpus", default=",".join(map(str, GPUS)))
    ap.add_argument("--policies", default="hermod,fair")
    ap.add_argument("--fabrics", default="bigswitch")
    ap.add_argument(
        "--wall-limit",
        type=float,
        default=600.0,
        help="cut a run's event loop after this many wall seconds (reported UNFINISHED)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        case, gpus, pol, kind, limit = args.child.split(":")
        print(json.dumps(asdict(run_child(case, int(gpus), pol, kind, float(limit)))))
        return 0
    subprocess.run([sys.executable, "-m", "coflowbed.sim.warmup"], check=True, cwd=REPO)
    print(HEADER)
    for case in filter(None, args.cases.split(",")):
        for kind in filter(None, args.fabrics.split(",")):
            for pol in filter(None, args.policies.split(",")):
                runs = []
                for n in filter(None, args.gpus.split(",")):
                    runs.append(spawn(case, int(n), pol, kind, args.wall_limit))
                    show(runs[-1])
                fit(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
