"""DAG generation at scale: wall time and peak memory of ``workload.generate`` for
GPT-3 175B on 1,024 GPUs and an 8,192-GPU MoE job (targets: < 10 s, < 2 GiB).

Each case runs in its own child process so that its peak RSS is its own.  CPU time is
printed next to wall time because the machine is shared (wall time includes waiting).
Usage: ``.venv/bin/python benchmarks/bench_dag.py [--tracemalloc] [CASE ...]``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from workload import dagindex

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# name -> (preset, overrides); GPUs = tp * pp * dp
CASES = {
    "gpt3-175b-1024": ("gpt3-175b", {"parallelism.dp": 16, "microbatches": 32}),
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
}


def measure(case: str, use_tracemalloc: bool) -> dict:
    """Generate one case in this process; return its figures."""
    from workload import generate
    from workload.placement import generic_hosts
    from workload.presets import load_preset

    preset, overrides = CASES[case]
    job = load_preset(preset, overrides)
    hosts = generic_hosts(job.hosts_needed)
    if use_tracemalloc:
        import tracemalloc

        tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    dag = generate(job, hosts)
    t_gen, c_gen = time.perf_counter() - t0, time.process_time() - c0
    dagindex.validate(dag)
    t_all = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] if use_tracemalloc else None
    return {
        "case": case,
        "gpus": job.world_gpus,
        "hosts": job.hosts_needed,
        "computes": len(dag.computes),
        "coflows": len(dag.coflows),
        "flows": sum(len(c.flows) for c in dag.coflows),
        "generate_s": round(t_gen, 2),
        "generate_cpu_s": round(c_gen, 2),
        "generate_validate_s": round(t_all, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "tracemalloc_peak_mib": None if traced is None else round(traced / 2**20),
    }


def main() -> int:
    """Run every requested case in a child process and print one line per case."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help=f"cases to run (default all: {', '.join(CASES)})")
    ap.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also report tracemalloc's peak (slows generation ~2x)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.tracemalloc)))
        return 0
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r} (known: {', '.join(CASES)})")
    for case in args.cases or list(CASES):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", case]
        cmd += ["--tracemalloc"] if args.tracemalloc else []
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{r['case']:<16} {r['gpus']:>5} GPUs {r['hosts']:>5} hosts  "
            f"{r['computes']:>8} computes {r['coflows']:>7} coflows {r['flows']:>8} flows  "
            f"generate {r['generate_s']:>6.2f} s wall {r['generate_cpu_s']:>6.2f} s CPU "
            f"(with validate {r['generate_validate_s']:.2f} s wall)"
            f"  peak RSS {r['peak_rss_mib']} MiB"
            + (
                f"  tracemalloc peak {r['tracemalloc_peak_mib']} MiB"
                if r["tracemalloc_peak_mib"] is not None
                else ""
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
