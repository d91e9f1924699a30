"""Workload imports at scale: wall / CPU time of parsing and of turning a SimAI/AICB
workload into a coflow DAG (``workload.imports``), with the DAG's size.

The synthetic case writes an AICB file of a 1,024-GPU MoE job (tp 8, pp 4, dp 32,
ep 8, ga 4, 32 layers alternating attention and MoE) and imports it with 8 GPUs per
host (128 hosts).  ``--simai-file`` also parses a real SimAI example (e.g.
example/workload_analytical.txt of github:aliyun/SimAI: 9,216 GPUs, 1,789 layers).
Usage: ``.venv/bin/python benchmarks/bench_import.py [--algorithm tree] [--simai-file F]``
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 8 pp: 4 vpp: 1 "
    "ga: 4 all_gpus: 1024 checkpoints: 0 checkpoint_initiates: 0 pp_comm 16777216"
)
ATTN = (
    "attention -1 1750840 ALLGATHER 50331648 875420 REDUCESCATTER 50331648 "
    "875420 ALLREDUCE 201326592 100"
)
MOE = (
    "mlp_moelayer -1 7956367 ALLTOALL_EP 100663296 7956367 ALLTOALL_EP 100663296 "
    "1 ALLREDUCE_DP_EP 402653184 100"
)


def synthetic(path: Path, layers: int = 32) -> None:
    """Write the synthetic 1,024-GPU AICB file."""
    body = [ATTN if i % 2 == 0 else MOE for i in range(layers)]
    path.write_text("\n".join([HEADER, str(layers), *body]) + "\n")


def timed(fn):
    """(result, wall s, CPU s) of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    """Run the cases and print one line each."""
    from workload.imports import ImportOptions, aicb
    from workload.imports.build import to_dag
    from workload.placement import generic_hosts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", default="ring", choices=("ring", "tree", "auto"))
    ap.add_argument("--simai-file", type=Path)
    args = ap.parse_args()
    if args.simai_file:
        wl, wall, cpu = timed(lambda: aicb.read(str(args.simai_file)))
        print(
            f"parse {args.simai_file.name}: {len(wl.layers)} layers, {wl.layout}, "
            f"{wall:.3f} s wall / {cpu:.3f} s CPU"
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "aicb-1024.txt"
        synthetic(path)
        wl, wall_p, _ = timed(lambda: aicb.read(str(path)))
        opts = ImportOptions(gpus_per_host=8, algorithm=args.algorithm)
        dag, wall, cpu = timed(lambda: to_dag(wl, generic_hosts(128), opts))
    flows = sum(len(c.flows) for c in dag.coflows)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"aicb-1024 ({args.algorithm}): parse {wall_p:.3f} s; DAG {len(dag.computes)} computes, "
        f"{len(dag.coflows)} coflows, {flows} flows in {wall:.2f} s wall / {cpu:.2f} s CPU, "
        f"peak RSS {rss:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
