"""Benchmark of the rail-optimised fabric in the flow-level simulator: Qwen-MoE-12L
(real bytes, PP4, EP64, 8 GPUs per server) on servers with 8 NICs (one per GPU, NIC g
on rail g) against the same servers with one NIC of 8x the rate (one leaf-spine host
per server), at 256 and 1,024 GPUs, under fair and Hermod.

Prints per case: servers, flows, DAG generation and simulation wall time, simulated
iteration.  Usage::

    .venv/bin/python benchmarks/bench_rail.py [--gpus 256,1024] [--nic-gbps 50]
        [--policies fair,hermod]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coflowbed.sim import LeafSpine, Rail, simulate  # noqa: E402
from controller import policies  # noqa: E402
from workload import generate  # noqa: E402
from workload.presets import load_preset  # noqa: E402

GPUS_PER_SERVER = 8
SPINES = 8


def job(gpus: int):
    """Qwen-MoE-12L at real bytes on ``gpus`` GPUs (PP4, EP64)."""
    over = {
        "byte_scale": 1,
        "parallelism.pp": 4,
        "parallelism.dp": gpus // 4,
        "parallelism.ep": 64,
        "placement.gpus_per_host": GPUS_PER_SERVER,
    }
    return load_preset("qwen-moe-12l", over)


def fabrics(servers: int, nic_bps: float) -> dict:
    """The rail fabric (8 NICs per server) and a leaf-spine of one 8x NIC per server,
    both 1:1 (a leaf's uplinks carry what its NICs can send)."""
    names = [f"h{i}" for i in range(1, servers + 1)]
    rail = Rail.of(names, GPUS_PER_SERVER, SPINES, nic_bps, servers * nic_bps / SPINES)
    per_leaf = min(servers, 16)
    plain = LeafSpine(tuple(names), per_leaf, SPINES, 8 * nic_bps, per_leaf * 8 * nic_bps / SPINES)
    return {"rail": (rail, GPUS_PER_SERVER), "one-nic": (plain, 1)}


def run(gpus: int, nic_bps: float, names: list[str]) -> None:
    """Generate and simulate one size on both fabrics; print a row per run."""
    spec = job(gpus)
    servers = spec.hosts_needed
    for kind, (fab, nics) in fabrics(servers, nic_bps).items():
        t0 = time.perf_counter()
        dag = generate(spec, [f"h{i}" for i in range(1, servers + 1)], nics)
        gen = time.perf_counter() - t0
        flows = sum(len(c.flows) for c in dag.coflows)
        for name in names:
            t1 = time.perf_counter()
            res = simulate(dag, fab, policies.get(name))
            wall = time.perf_counter() - t1
            print(
                f"{gpus:>5} GPUs {kind:>8} {servers:>4} servers {flows:>8} flows "
                f"{name:>7}: gen {gen:6.2f} s, sim {wall:7.2f} s, "
                f"iteration {res.iteration_records()[0].time_s:.3f} s",
                flush=True,
            )


def main() -> None:
    """Parse the options and run every size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default="256,1024")
    ap.add_argument("--nic-gbps", type=float, default=50.0)
    ap.add_argument("--policies", default="fair,hermod")
    a = ap.parse_args()
    for gpus in (int(g) for g in a.gpus.split(",")):
        run(gpus, a.nic_gbps * 1e9, a.policies.split(","))


if __name__ == "__main__":
    main()
