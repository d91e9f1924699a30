"""Time each policy's decide() (and compression) for 10..10^4 active coflows.

The instance is LLM-shaped at 8K-GPU scale: 1024 hosts (8 GPUs each), a mix of PP
send/recv (1 flow), DP ring steps (8 flows) and EP all-to-alls among 8 hosts (56 flows),
random MID/LID tags and bytes already sent.  Prints milliseconds per call (best of a few).

    .venv/bin/python benchmarks/bench_policies.py [--sizes 10 100 1000 10000] [--hosts 1024]
"""

from __future__ import annotations

import argparse
import functools
import gc
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import controller.policies as policies  # noqa: E402
from controller.compress import compress_decisions  # noqa: E402
from controller.policies import CoflowState, FabricView  # noqa: E402
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow  # noqa: E402

MB = 1 << 20


def _coflow(rng: random.Random, i: int, hosts: list[str]) -> Coflow:
    """One PP, DP-ring-step or EP all-to-all coflow with random tags."""
    kind = rng.choice([CoflowType.PP, CoflowType.DP, CoflowType.EP])
    group = rng.sample(hosts, 8)
    if kind is CoflowType.PP:
        pairs = [(group[0], group[1])]
    elif kind is CoflowType.DP:
        pairs = [(group[j], group[(j + 1) % 8]) for j in range(8)]
    else:
        pairs = [(a, b) for a in group for b in group if a != b]
    flows = tuple(
        Flow(f"c{i}.{j}", s, d, rng.randint(1, 64) * MB) for j, (s, d) in enumerate(pairs)
    )
    ident = CoflowIdentity(
        ctype=kind, mid=rng.randint(0, 15), lid=rng.randint(0, 95), phase=rng.choice(["fwd", "bwd"])
    )
    return Coflow(f"c{i}", flows, ident)


def _states(n: int, hosts: list[str], seed: int = 1) -> list[CoflowState]:
    """``n`` active coflows, some partly sent."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cf = _coflow(rng, i, hosts)
        rem = {f.flow_id: rng.randint(0, f.bytes) for f in cf.flows if rng.random() < 0.3}
        out.append(CoflowState(cf, 0.0, i, bytes_sent=rng.randint(0, 2000) * MB, remaining=rem))
    return out


def _best_ms(fn, repeats: int) -> float:
    """Best wall time of ``fn()`` over ``repeats`` runs, in ms (GC off while timing, as
    timeit does: the instance's 10^5 Flow objects make collector pauses dominate)."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    finally:
        gc.enable()
    return best * 1e3


def main() -> int:
    """Print a table: policy x number of active coflows -> decide() ms (+ compress ms)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    ap.add_argument("--hosts", type=int, default=1024)
    args = ap.parse_args()
    hosts = [f"h{i}" for i in range(args.hosts)]
    fabric = FabricView.uniform(hosts, 100e9)
    instances = {n: _states(n, hosts) for n in args.sizes}
    print(
        f"hosts={args.hosts}; flows per size: "
        + ", ".join(f"{n}:{sum(len(s.coflow.flows) for s in st)}" for n, st in instances.items())
    )
    print(
        f"{'policy':<14}"
        + "".join(f"{n:>12}" for n in args.sizes)
        + "   (ms per decide; +compress)"
    )
    for name in policies.names():
        pol = policies.get(name)
        cells = []
        for n, states in instances.items():
            repeats = 5 if n <= 1000 else 2
            d_ms = _best_ms(functools.partial(pol.decide, states, fabric, 0.0), repeats)
            dec = pol.decide(states, fabric, 0.0)
            c_ms = _best_ms(functools.partial(compress_decisions, dec, 8, pol.compression), repeats)
            cells.append(f"{d_ms:8.1f}+{c_ms:<4.0f}")
        print(f"{name:<14}" + "".join(f"{c:>12}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
