"""Benchmark of the flow-level simulator on the Facebook coflow trace and on one
iteration of 8,192-GPU LLM jobs.

Prints, per policy: wall time of the simulation (DAG already built), events, policy
calls, average and p95 CCT (a run cut by ``--wall-limit`` is marked PARTIAL and its CCTs
cover the coflows finished so far); with ``--reps N``, N rounds over the policies and
per policy the min, median and max of its simulation times (this machine's speed moves
by ~30 % between sittings: the median of rounds says more than one run); with
``--tol-sweep T1,T2``, per policy the default finishing tolerance and each of these
(``Simulator.finish_tol``), runs alternated: median wall time and its ratio to the
default's, events, average CCT and the largest and 99th-percentile per-coflow CCT
difference to the default's run; then how run time grows with the number of flows
(power-law fit over trace prefixes); per max-min policy, the per-flow event loop
(``Simulator(fast=False)``, the engine before path groups) against the compiled path
groups, alternated in one sitting: both wall times and the largest relative per-coflow
CCT difference; then, per 8,192-GPU case and policy (each in a child process so that
its peak RSS is its own): generation and simulation time, events and peak RSS.  Usage::

    .venv/bin/python benchmarks/bench_sim.py [--trace PATH] [--policies fair,fifo,...]
        [--limit N] [--reps 1] [--wall-limit S] [--finish-tol T] [--tol-sweep 1e-5,1e-4]
        [--sizes 25,50,100,200] [--scale-policy fair]
        [--gpu-cases moe-8192,gpt3-175b-8192] [--gpu-policies hermod,fair]
        [--compare fair,fifo,dclas,sincronia] [--compare-reps 2]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coflowbed.sim import (  # noqa: E402
    FINISH_TOL,
    SimResult,
    Simulator,
    check_finish_tol,
    parse_fabric_spec,
    simulate,
)
from controller import policies  # noqa: E402
from workload import fbtrace  # noqa: E402

FB = REPO / "data" / "FB2010-1Hr-150-0.txt"
# name -> (preset, overrides); GPUs = tp * pp * dp (as in benchmarks/bench_dag.py)
GPU_CASES = {
    "moe-8192": (
        "qwen-moe-12l",
        {
            "model.layers": 24,
            "parallelism.pp": 4,
            "parallelism.dp": 2048,
            "parallelism.ep": 64,
            "placement.gpus_per_host": 8,
            "microbatches": 8,
        },
    ),
    "gpt3-175b-8192": ("gpt3-175b", {"parallelism.dp": 128, "microbatches": 32}),
}
GPU_PORT_BPS = 400e9  # host NIC of the presets' real fabric (400 Gbit/s)


def run_one(
    trace, policy: str, limit: int | None, wall_limit: float = math.inf, tol: float = FINISH_TOL
) -> dict:
    """Simulate a prefix of the trace under one policy (finishing tolerance ``tol``);
    return figures."""
    t0 = time.perf_counter()
    dag = fbtrace.to_dag(trace, None, limit=limit)
    build = time.perf_counter() - t0
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    res = simulate(dag, fabric, policies.get(policy), None, wall_limit_s=wall_limit, finish_tol=tol)
    s, summ = res.sim.stats, res.summary()
    return {
        "policy": policy,
        "coflows": len(dag.coflows),
        "flows": len(res.sim.flows),
        "dag_build_s": build,
        "sim_s": s.wall_s,
        "events": s.events,
        "policy_calls": s.policy_calls,
        "flow_visits": s.flow_visits,
        "avg_cct_s": summ.avg_cct_s,
        "p95_cct_s": summ.p95_cct_s,
        "partial": res.partial,
    }


def rel_cct_diffs(ref: Simulator, new: Simulator) -> np.ndarray:
    """Relative difference of each coflow's CCT between two runs (coflows done in both)."""
    a = np.array([o.finish_s - o.release_s for o in ref.outcomes])
    b = np.array([o.finish_s - o.release_s for o in new.outcomes])
    ok = np.isfinite(a) & np.isfinite(b)
    return np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-12)


def max_rel_cct(ref: Simulator, new: Simulator) -> float:
    """Largest relative difference of per-coflow CCT between two runs (coflows done in
    both)."""
    return float(np.max(rel_cct_diffs(ref, new), initial=0.0))


def compare_engines(trace, policy: str, limit: int | None, reps: int) -> dict:
    """Per-flow loop (``fast=False``, as before) against the compiled path groups, runs
    alternated ``reps`` times (old first on even reps) on one DAG; walls and the largest
    relative CCT difference."""
    dag = fbtrace.to_dag(trace, None, limit=limit)
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    walls: dict[bool, list[float]] = {False: [], True: []}
    runs: dict[bool, Simulator] = {}
    for rep in range(reps):
        for fast in (False, True) if rep % 2 == 0 else (True, False):
            sim = Simulator(dag, fabric, policies.get(policy), None, fast=fast).run()
            walls[fast].append(sim.stats.wall_s)
            runs[fast] = sim
    old, new = runs[False], runs[True]
    return {
        "policy": policy,
        "flows": len(new.flows),
        "old_s": walls[False],
        "new_s": walls[True],
        "events": (old.stats.events, new.stats.events),
        "max_rel_cct": max_rel_cct(old, new),
        "avg_cct_s": (SimResult(old).summary().avg_cct_s, SimResult(new).summary().avg_cct_s),
    }


def sweep_tolerances(trace, policy: str, limit: int | None, tols: list[float], reps: int):
    """The default finishing tolerance and each of ``tols``, runs alternated ``reps``
    times (reversed on odd reps) on one DAG; per tolerance (the default first): wall
    times, events, average CCT and the per-coflow relative CCT differences to the
    default's run."""
    dag = fbtrace.to_dag(trace, None, limit=limit)
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    order = [FINISH_TOL, *tols]
    walls: dict[float, list[float]] = {t: [] for t in order}
    runs: dict[float, Simulator] = {}
    for rep in range(reps):
        for tol in order if rep % 2 == 0 else order[::-1]:
            sim = Simulator(dag, fabric, policies.get(policy), None, finish_tol=tol).run()
            walls[tol].append(sim.stats.wall_s)
            runs[tol] = sim
    return [
        {
            "tol": tol,
            "walls": walls[tol],
            "events": runs[tol].stats.events,
            "avg_cct_s": SimResult(runs[tol]).summary().avg_cct_s,
            "diffs": rel_cct_diffs(runs[FINISH_TOL], runs[tol]),
        }
        for tol in order
    ]


def tol_line(pol: str, r: dict, base: dict) -> str:
    """One tolerance's line: median wall time and its ratio to the default's, events,
    average CCT and the largest and 99th-percentile per-coflow CCT difference."""
    med, med0 = float(np.median(r["walls"])), float(np.median(base["walls"]))
    d = r["diffs"]
    p99 = float(np.quantile(d, 0.99)) if d.size else 0.0
    return (
        f"tol {pol:<10} finish_tol {r['tol']:<6g} sim_s {_walls(r['walls'])} (median {med:.2f}, "
        f"x{med / med0:.3f}) events {r['events']} avg CCT {r['avg_cct_s']:.6f} s, per-coflow "
        f"CCT diff max {np.max(d, initial=0.0):.1e} p99 {p99:.1e}"
    )


def print_tolerances(args, trace) -> None:
    """Per policy, the finishing tolerances of ``--tol-sweep`` against the default."""
    for pol in filter(None, args.policies.split(",")) if args.tol_sweep else ():
        rs = sweep_tolerances(trace, pol, args.limit, args.tol_sweep, args.reps)
        for r in rs:
            print(tol_line(pol, r, rs[0]), flush=True)


def parse_tols(text: str) -> list[float]:
    """``--tol-sweep``'s tolerances (argparse type: a bad one is a one-line usage error
    naming it)."""
    return [_tolerance(item) for item in filter(None, text.split(","))]


def _walls(xs: list[float]) -> str:
    """Wall times as '1.23/1.25'."""
    return "/".join(f"{x:.2f}" for x in xs)


def print_compare(args, trace) -> None:
    """Before/after wall time per max-min policy (old and new alternated)."""
    pols = list(filter(None, args.compare.split(",")))
    if not pols:
        return
    for fast in (False, True):  # load both engines' kernels before timing
        Simulator(
            fbtrace.to_dag(trace, None, limit=3),
            parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True),
            policies.get("dclas"),
            None,
            fast=fast,
        ).run()
    for pol in pols:
        r = compare_engines(trace, pol, args.limit, args.compare_reps)
        print(
            f"compare {r['policy']:<10} {r['flows']} flows: per-flow loop {_walls(r['old_s'])} s, "
            f"path groups {_walls(r['new_s'])} s (x{min(r['old_s']) / min(r['new_s']):.1f}), "
            f"events {r['events'][0]}/{r['events'][1]}, avg CCT {r['avg_cct_s'][0]:.4f}/"
            f"{r['avg_cct_s'][1]:.4f} s, max rel CCT diff {r['max_rel_cct']:.2e}",
            flush=True,
        )


def run_gpu(case: str, policy: str) -> dict:
    """Generate one 8,192-GPU job and simulate one iteration on a big switch of its
    hosts; figures (run in a child process: peak RSS covers generation + simulation)."""
    from coflowbed.sim import BigSwitch
    from workload import generate
    from workload.placement import generic_hosts
    from workload.presets import load_preset

    preset, overrides = GPU_CASES[case]
    job = load_preset(preset, overrides)
    hosts = generic_hosts(job.hosts_needed)
    t0 = time.perf_counter()
    dag = generate(job, hosts)
    gen = time.perf_counter() - t0
    res = simulate(dag, BigSwitch(tuple(hosts), GPU_PORT_BPS), policies.get(policy), None)
    s = res.sim.stats
    its = res.iteration_records()
    return {
        "case": case,
        "policy": policy,
        "gpus": job.world_gpus,
        "coflows": len(dag.coflows),
        "flows": len(res.sim.flows),
        "gen_s": gen,
        "sim_s": s.wall_s,
        "events": s.events,
        "finished": s.finished,
        "iteration_s": its[0].time_s if its else None,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def per_visit_us(r: dict) -> float:
    """Wall time per flow visit (an active flow at an event), in microseconds: what a
    per-flow exact model costs per unit of its unavoidable work."""
    return r["sim_s"] / max(r["flow_visits"], 1) * 1e6


def warm_up(trace) -> None:
    """Load (or compile, on a fresh checkout) the simulator's numba kernels once, so
    that the timed runs measure simulation only; print how long that took.  Every
    policy's paths (``warmup.compile_kernels``: Sincronia's table decisions, decisions
    inside a run) as well as the trace's own: without them the first timed run of a
    policy that takes another path loaded that path's kernels inside its timing."""
    from coflowbed.sim import warmup

    t0 = time.perf_counter()
    warmup.compile_kernels()
    for pol in ("fair", "sebf", "dclas"):  # uncapped, capped and threshold paths
        run_one(trace, pol, 3)
    print(f"kernels loaded/compiled in {time.perf_counter() - t0:.1f} s (not in sim_s below)")


def print_trace(args, trace) -> None:
    """Per-policy figures on the trace (or its prefix): ``--reps`` rounds over the
    policies, a row per run, then per policy the spread of its simulation times."""
    print(
        f"{'policy':<10} {'coflows':>7} {'flows':>7} {'build_s':>8} {'sim_s':>8} {'events':>7} "
        f"{'calls':>6} {'visits':>8} {'us/visit':>8} {'avg_cct_s':>10} {'p95_cct_s':>10}"
    )
    runs: dict[str, list[dict]] = {}
    for _ in range(args.reps):  # rounds, so that each policy sees the machine's moods
        for pol in filter(None, args.policies.split(",")):
            r = run_one(trace, pol, args.limit, args.wall_limit, args.finish_tol)
            runs.setdefault(pol, []).append(r)
            print_row(r)
    if args.reps > 1:
        for pol, rs in runs.items():
            print(spread_line(pol, rs), flush=True)


def print_row(r: dict) -> None:
    """One run's row of the trace table."""
    print(
        f"{r['policy']:<10} {r['coflows']:>7} {r['flows']:>7} {r['dag_build_s']:>8.2f} "
        f"{r['sim_s']:>8.2f} {r['events']:>7} {r['policy_calls']:>6} "
        f"{r['flow_visits']:>8.2e} {per_visit_us(r):>8.4f} "
        f"{r['avg_cct_s']:>10.3f} {r['p95_cct_s']:>10.3f}"
        + ("  PARTIAL (wall limit)" if r["partial"] else ""),
        flush=True,
    )


def spread_line(pol: str, rs: list[dict]) -> str:
    """A policy's simulation times over its runs: min, median, max, and whether every
    run gave the same events and average CCT (the simulator is deterministic)."""
    walls = [r["sim_s"] for r in rs]
    same = len({(r["events"], r["avg_cct_s"]) for r in rs}) == 1
    return (
        f"{pol:<10} sim_s over {len(rs)} runs: min {min(walls):.2f}, median "
        f"{float(np.median(walls)):.2f}, max {max(walls):.2f}; "
        + ("same results" if same else "RESULTS DIFFER between runs")
    )


def print_scaling(args, trace) -> None:
    """Run time against flows over trace prefixes, with a power-law fit."""
    sizes = [int(x) for x in args.sizes.split(",") if x]
    if len(sizes) < 2:
        return
    pts = [run_one(trace, args.scale_policy, n) for n in sizes]
    for p in pts:
        print(
            f"scale {args.scale_policy}: {p['flows']} flows, {p['events']} events -> "
            f"{p['sim_s']:.2f} s",
            flush=True,
        )
    k, _ = np.polyfit(np.log([p["flows"] for p in pts]), np.log([p["sim_s"] for p in pts]), 1)
    print(f"fit: run time ~ flows^{k:.2f} ({args.scale_policy}, {sizes[0]}..{sizes[-1]} coflows)")


def print_gpu(args) -> None:
    """One child process per (8,192-GPU case, policy)."""
    for case in filter(None, args.gpu_cases.split(",")):
        for pol in filter(None, args.gpu_policies.split(",")):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", f"{case}:{pol}"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{r['case']:<15} {r['policy']:<7} {r['gpus']} GPUs {r['coflows']:>6} coflows "
                f"{r['flows']:>8} flows  generate {r['gen_s']:.1f} s  simulate {r['sim_s']:.1f} s "
                f"{r['events']} events  iteration {r['iteration_s']} s  "
                f"peak RSS {r['peak_rss_gib']:.2f} GiB  finished {r['finished']}",
                flush=True,
            )


def _positive(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return n


def _tolerance(text: str) -> float:
    """A finishing tolerance (argparse type)."""
    try:
        tol = float(text)
        check_finish_tol(tol)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    return tol


def main() -> int:
    """Parse flags, run, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=FB)
    ap.add_argument("--policies", default="fair,fifo,dclas,sincronia,sebf")
    ap.add_argument("--limit", type=int, default=None, help="coflows of the trace (default all)")
    ap.add_argument(
        "--reps", type=_positive, default=1, help="rounds over the policies (trace table)"
    )
    ap.add_argument(
        "--wall-limit",
        type=float,
        default=600.0,
        help="stop a trace run after this many seconds (reported PARTIAL)",
    )
    ap.add_argument("--sizes", default="25,50,100,200", help="trace prefixes for the scaling fit")
    ap.add_argument("--scale-policy", default="fair")
    ap.add_argument("--gpu-cases", default=",".join(GPU_CASES))
    ap.add_argument("--gpu-policies", default="hermod,fair")
    ap.add_argument(
        "--compare",
        default="fair,fifo,dclas,sincronia",
        help="policies timed per-flow loop against path groups ('' = none)",
    )
    ap.add_argument("--compare-reps", type=int, default=1, help="alternated runs per engine")
    ap.add_argument(
        "--finish-tol",
        type=_tolerance,
        default=FINISH_TOL,
        help="finishing tolerance (trace table)",
    )
    ap.add_argument(
        "--tol-sweep",
        type=parse_tols,
        default=[],
        help="finishing tolerances (e.g. 1e-5,1e-4) timed against the default per policy",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        case, pol = args.child.split(":")
        print(json.dumps(run_gpu(case, pol)))
        return 0
    trace = fbtrace.read_trace(args.trace)
    warm_up(trace)
    print_trace(args, trace)
    print_tolerances(args, trace)
    print_compare(args, trace)
    print_scaling(args, trace)
    print_gpu(args)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak RSS (trace runs) {rss:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
