"""Compile the simulator's numba kernels ahead of use (``python -m coflowbed.sim.warmup``,
run by ``scripts/install.sh``): a fresh checkout otherwise spends ~100 s compiling inside
its first simulation.  numba caches the machine code next to the sources, so later
processes only load it (~1 s)."""

from __future__ import annotations

import sys
import time

from coflowbed.sim import BigSwitch, LeafSpine, coflowsim, simulate
from coflowbed.sim.levels import StaticPolicy
from controller import policies
from controller.policies.base import Policy
from controller.policies.simple import Fifo
from workload.dag import Coflow, Dag, Flow
from workload.fbtrace import TraceCoflow


def tiny_dag() -> Dag:
    """Three small coflows among four hosts, released over 2 ms (they overlap: a
    compiled run goes on after a completion)."""
    hosts = ["h1", "h2", "h3", "h4"]
    coflows = []
    for c in range(3):
        flows = tuple(
            Flow(f"c{c}.{i}", hosts[i], hosts[(i + c + 1) % 4], 100_000 * (i + 1)) for i in range(4)
        )
        coflows.append(Coflow(f"c{c}", flows, release_s=0.001 * c))
    return Dag(coflows=coflows)


def tiny_trace() -> list[TraceCoflow]:
    """Two coflows in the trace's form on three racks, the second 20 ms after the first."""
    return [
        TraceCoflow("a", 0, (0, 1), ((2, 1.0),)),
        TraceCoflow("b", 20, (1,), ((0, 2.0), (2, 1.0))),
    ]


class ReadsSizes(Fifo):
    """FIFO marked clairvoyant, as a user's policy that reads flow sizes from per-flow
    states: its compiled runs write their groups back before each decision and the
    next run takes them (``sync_carry``, ``same_levels``), a path no built-in
    max-min policy takes at every stop."""

    name = "warmup-reads-sizes"
    clairvoyant = True


def warmup_policies() -> list[Policy]:
    """The policies ``compile_kernels`` runs, one per path through the kernels:
    uncapped; capped with held rates; byte thresholds; a byte threshold crossed inside
    a run (D-CLAS with its first queue at 150 KB: ``tiny_dag``'s coflows pass it while
    another is sending); hard caps (meters); decisions on a table of the flows; on
    per-flow states."""
    metered = StaticPolicy({"c0": 0}, 1, {"c1": 2e8})
    small_queues = policies.get("dclas", first_threshold_bytes=150_000)
    named = [policies.get(name) for name in ("fair", "sebf", "dclas")]
    return [*named, small_queues, metered, policies.get("sincronia"), ReadsSizes()]


def compile_kernels() -> float:
    """Run every kernel signature the simulator uses once; return the seconds taken."""
    t0 = time.perf_counter()
    dag = tiny_dag()
    hosts = ("h1", "h2", "h3", "h4")
    big, spine = BigSwitch(hosts, 1e9), LeafSpine(hosts, 2, 2, 1e9, 1e9)
    for fabric in (big, spine):
        for policy in warmup_policies():
            simulate(dag, fabric, policy, None)
    for name in coflowsim.POLICIES:  # --model coflowsim: its own kernels per policy
        coflowsim.run_trace(tiny_trace(), 3, name)
    return time.perf_counter() - t0


def main() -> int:
    """Compile and say how long it took."""
    print(f"coflowbed: simulator kernels ready in {compile_kernels():.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
