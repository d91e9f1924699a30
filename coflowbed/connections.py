"""Which connections the agents open before the iteration (as NCCL does at communicator
init): every (sender, receiver) pair the DAG uses gets a pool.

A flow runs as a message on a connection of its own for as long as it lasts, so a pair
needs as many connections as it has flows under way at once.  That is not known before
the run; a pool starts with the most flows the pair has in any one coflow plus
``SPARE`` (for coflows of the pair that overlap), and a send that finds no idle
connection opens one more (counted as ``on_demand`` in ``summary.json``).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping

from coflowbed.agent_types import PoolOrder
from workload.agent.proto import MAX_POOL
from workload.dag import Dag

SPARE = 2  # connections per pair beyond its largest coflow's flows


def pair_counts(dag: Dag) -> dict[tuple[str, str], int]:
    """Per (src, dst) host pair: the most flows it has in one coflow."""
    most: dict[tuple[str, str], int] = {}
    for cf in dag.coflows:
        for pair, n in Counter((f.src, f.dst) for f in cf.flows if f.src != f.dst).items():
            most[pair] = max(most.get(pair, 0), n)
    return most


def pool_orders(dag: Dag, address: Mapping[str, tuple[str, int]]) -> list[PoolOrder]:
    """One order per pair the DAG uses; ``address`` gives each host's (ip, data port)."""
    return [PoolOrder(src, *address[dst], min(MAX_POOL, n + SPARE))
            for (src, dst), n in sorted(pair_counts(dag).items())]
