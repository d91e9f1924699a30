"""Which connections the agents open before the iteration (as NCCL does at communicator
init): every (sender, receiver) pair the DAG uses gets a pool.

A flow runs as a message on a connection of its own for as long as it lasts, so a pair
needs as many connections as it has flows under way at once.  That is not known before
the run; a pool starts with the most flows the pair has in any one coflow, or all its
flows in coflows that depend on nothing (a trace's coflows, released by arrival time, may
all overlap), plus ``SPARE`` (for coflows of the pair that overlap), and a send that
finds no idle connection opens one more (counted as ``new_connections`` in
``summary.json``), its handshake on the critical path: on fb-slice-busy the largest
coflow alone left 129 of 670 flows to open one (first byte after release: p95 1.9 s).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from coflowbed.agent_types import PoolOrder
from workload.agent.proto import MAX_POOL
from workload.dag import Dag

SPARE = 2  # connections per pair beyond its largest coflow's flows


def pair_counts(dag: Dag) -> dict[tuple[str, str], int]:
    """Per (src, dst) host pair: the connections it may need at once, the most flows it
    has in one coflow or all its flows in coflows without dependencies (released by
    arrival time, as trace coflows are, they may all overlap), whichever is more."""
    most: dict[tuple[str, str], int] = {}
    free: Counter[tuple[str, str]] = Counter()
    for cf in dag.coflows:
        counts = Counter((f.src, f.dst) for f in cf.flows if f.src != f.dst)
        for pair, n in counts.items():
            most[pair] = max(most.get(pair, 0), n)
        if not cf.deps:
            free.update(counts)
    return {pair: max(n, free[pair]) for pair, n in most.items()}


def pool_orders(dag: Dag, address: Mapping[str, tuple[str, int]]) -> list[PoolOrder]:
    """One order per pair the DAG uses; ``address`` gives each host's (ip, data port)."""
    return [
        PoolOrder(src, *address[dst], min(MAX_POOL, n + SPARE))
        for (src, dst), n in sorted(pair_counts(dag).items())
    ]
