"""Which connections the agents open before the iteration (as NCCL does at communicator
init): every (sender, receiver) pair the DAG uses gets a pool, and a pair on two leaves
one per ECMP slot its flows have (``flow_slots``: each flow goes from a source port of
its slot, which the leaves send to the spine the simulator gives the flow).

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
from collections.abc import Iterable, Mapping

from coflowbed.emulation.agents.types import PoolOrder
from topo.plan import FabricPlan
from workload import ecmp
from workload.agent.proto import MAX_POOL
from workload.dag import Coflow, Dag

SPARE = 2  # connections per pair (and ECMP slot) beyond its largest coflow's flows

Pair = tuple[str, str, int | None]  # (src, dst, ECMP slot; None: both on one leaf)


def flow_slots(coflows: Iterable[Coflow], plan: FabricPlan) -> dict[str, int]:
    """The ECMP slot (``workload.ecmp``) of every flow of ``coflows`` between hosts of
    two leaves: the agent sends it from a source port of that slot, so it crosses the
    spine the simulator gives it."""
    n = ecmp.slot_count(plan.spines)
    leaf = {h.name: h.leaf for h in plan.hosts}
    return {
        f.flow_id: ecmp.flow_slot(f.src, f.dst, f.flow_id, n, plan.ecmp_seed)
        for cf in coflows
        for f in cf.flows
        if leaf[f.src] != leaf[f.dst]
    }


def pair_counts(dag: Dag, slots: Mapping[str, int]) -> dict[Pair, int]:
    """Per (src, dst, slot): the connections it may need at once, the most flows it has
    in one coflow or all its flows in coflows without dependencies (released by arrival
    time, as trace coflows are, they may all overlap), whichever is more."""
    most: dict[Pair, int] = {}
    free: Counter[Pair] = Counter()
    for cf in dag.coflows:
        counts = Counter((f.src, f.dst, slots.get(f.flow_id)) for f in cf.flows if f.src != f.dst)
        for pair, n in counts.items():
            most[pair] = max(most.get(pair, 0), n)
        if not cf.deps:
            free.update(counts)
    return {pair: max(n, free[pair]) for pair, n in most.items()}


def pool_orders(
    dag: Dag, address: Mapping[str, tuple[str, int]], slots: Mapping[str, int], n: int
) -> list[PoolOrder]:
    """One order per pair (and ECMP slot) the DAG uses; ``address`` gives each host's
    (ip, data port), ``slots`` each cross-leaf flow's slot (``flow_slots``) of ``n``."""
    return [
        PoolOrder(src, *address[dst], min(MAX_POOL, k + SPARE), slot, None if slot is None else n)
        for (src, dst, slot), k in sorted(pair_counts(dag, slots).items(), key=_order)
    ]


def _order(item: tuple[Pair, int]) -> tuple:
    """Sort key of a pool order: pair, then slot (None first)."""
    (src, dst, slot), _ = item
    return (src, dst, -1 if slot is None else slot)
