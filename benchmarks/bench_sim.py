"""Benchmark of the flow-level simulator on the Facebook coflow trace.

Prints, per policy: wall time of the simulation (DAG already built), events, policy
calls, average and p95 CCT; then how run time grows with the number of flows (power-law
fit over trace prefixes).  Usage::

    .venv/bin/python benchmarks/bench_sim.py [--trace PATH] [--policies fair,fifo,...]
        [--limit N] [--sizes 25,50,100,200] [--scale-policy fair]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coflowbed.sim import parse_fabric_spec, simulate  # noqa: E402
from controller import policies  # noqa: E402
from workload import fbtrace  # noqa: E402

FB = Path("/work/shared/data/FB2010-1Hr-150-0.txt")


def run_one(trace, policy: str, limit: int | None) -> dict:
    """Simulate a prefix of the trace under one policy; return figures."""
    t0 = time.perf_counter()
    dag = fbtrace.to_dag(trace, None, limit=limit)
    build = time.perf_counter() - t0
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    res = simulate(dag, fabric, policies.get(policy), None)
    s, summ = res.sim.stats, res.summary()
    return {"policy": policy, "coflows": len(dag.coflows), "flows": len(res.sim.flows),
            "dag_build_s": build, "sim_s": s.wall_s, "events": s.events,
            "policy_calls": s.policy_calls, "avg_cct_s": summ["avg_cct_s"],
            "p95_cct_s": summ["p95_cct_s"], "partial": res.partial}


def main() -> int:
    """Parse flags, run, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=FB)
    ap.add_argument("--policies", default="fair,fifo,dclas,sincronia,sebf")
    ap.add_argument("--limit", type=int, default=None, help="coflows of the trace (default all)")
    ap.add_argument("--sizes", default="25,50,100,200", help="trace prefixes for the scaling fit")
    ap.add_argument("--scale-policy", default="fair")
    args = ap.parse_args()
    trace = fbtrace.read_trace(args.trace)
    print(f"{'policy':<10} {'coflows':>7} {'flows':>7} {'build_s':>8} {'sim_s':>8} {'events':>7} "
          f"{'calls':>6} {'avg_cct_s':>10} {'p95_cct_s':>10}")
    for pol in filter(None, args.policies.split(",")):
        r = run_one(trace, pol, args.limit)
        print(f"{r['policy']:<10} {r['coflows']:>7} {r['flows']:>7} {r['dag_build_s']:>8.2f} "
              f"{r['sim_s']:>8.2f} {r['events']:>7} {r['policy_calls']:>6} "
              f"{r['avg_cct_s']:>10.3f} {r['p95_cct_s']:>10.3f}", flush=True)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    if len(sizes) >= 2:
        pts = [run_one(trace, args.scale_policy, n) for n in sizes]
        for p in pts:
            print(f"scale {args.scale_policy}: {p['flows']} flows, {p['events']} events -> "
                  f"{p['sim_s']:.2f} s", flush=True)
        k, _ = np.polyfit(np.log([p["flows"] for p in pts]), np.log([p["sim_s"] for p in pts]), 1)
        print(f"fit: run time ~ flows^{k:.2f} ({args.scale_policy}, {sizes[0]}..{sizes[-1]} coflows)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(f"peak RSS {rss:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
