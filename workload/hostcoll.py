"""Collectives over a group of ranks placed on hosts, as host-to-host byte matrices
("phases", one coflow each): ring reduce-scatter / all-gather / all-reduce (collapsed),
NCCL's double-binary-tree all-reduce (reduce up, then broadcast down) and the
all-to-all.  Traffic between ranks of one host (NVLink) is dropped.  Used by the job
generator's tree hook and by the SimAI/ASTRA-sim importers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from workload import nccl
from workload.collectives import ring_edge_weights
from workload.dag import Coflow, CoflowIdentity, Flow
from workload.sizes import scaled

RING_COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather")


@dataclass(frozen=True, slots=True)
class Phase:
    """One coflow's worth of traffic: ``pairs`` = ((src host, dst host), bytes) with
    unscaled, possibly fractional bytes; ``tag`` names it in ids ("" when alone)."""

    tag: str
    pairs: tuple[tuple[tuple[int, int], float], ...]

    @property
    def bytes(self) -> float:
        """Total bytes of the phase."""
        return sum(b for _, b in self.pairs)


def _phase(tag: str, counts: Counter, unit: float) -> Phase:
    """A phase of ``unit`` bytes per count of each host pair."""
    return Phase(tag, tuple((e, w * unit) for e, w in counts.items() if w))


def distinct_hosts(hosts: Sequence[int]) -> list[int]:
    """The hosts of a group's ranks in rank order, each once (NCCL's nodes)."""
    return list(dict.fromkeys(hosts))


def ring_phase(collective: str, rank_hosts: Sequence[int], size: float) -> Phase:
    """A ring collective of per-rank buffer ``size`` over ranks on ``rank_hosts`` (ring
    order), all its steps collapsed: each ring link carries steps·S/n bytes, steps
    2(n-1) for all-reduce, n-1 for reduce-scatter / all-gather."""
    if collective not in RING_COLLECTIVES:
        raise ValueError(f"ring_phase: unknown collective {collective!r}")
    n = len(rank_hosts)
    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    return _phase("", ring_edge_weights([rank_hosts]), steps * size / n if n else 0.0)


def tree_phases(nodes: Sequence[int], size: float) -> tuple[Phase, Phase]:
    """NCCL's tree all-reduce of per-rank ``size`` over ``nodes`` (hosts, tree order):
    ``up`` sends S/2 from every child to its parent in each of the two trees,
    ``down`` the same bytes back from parent to child."""
    edges = [(nodes[c], nodes[p]) for c, p in nccl.tree_edges(len(nodes))]
    up: Counter = Counter(edges)
    down: Counter = Counter((p, c) for c, p in edges)
    return _phase("up", up, size / 2), _phase("down", down, size / 2)


def all_reduce_phases(
    algorithm: str, rank_hosts: Sequence[int], size: float, link_gbps: float
) -> list[Phase]:
    """An all-reduce by ``algorithm`` (ring, tree, auto = NCCL's pick for the group's
    node count and ``size``): one ring phase or the tree's up and down phases."""
    nodes = distinct_hosts(rank_hosts)
    if nccl.pick_algorithm(algorithm, len(nodes), size, link_gbps) == "tree":
        return list(tree_phases(nodes, size))
    return [ring_phase("all_reduce", rank_hosts, size)]


def a2a_phase(rank_hosts: Sequence[int], size: float) -> Phase:
    """An all-to-all of per-rank buffer ``size``: each rank sends S/n to every rank."""
    n = len(rank_hosts)
    counts: Counter = Counter((a, b) for a in rank_hosts for b in rank_hosts if a != b)
    return _phase("", counts, size / n if n else 0.0)


def merge(phases: Sequence[Sequence[Phase]]) -> list[Phase]:
    """Phase-wise sum over parallel groups (the same collective of every group runs
    as one coflow): the i-th phases of all groups are added pair by pair."""
    out: list[Phase] = []
    for i in range(max((len(p) for p in phases), default=0)):
        total: dict[tuple[int, int], float] = {}
        for group in phases:
            if i < len(group):
                for pair, b in group[i].pairs:
                    total[pair] = total.get(pair, 0.0) + b
        tag = next(g[i].tag for g in phases if i < len(g))
        out.append(Phase(tag, tuple(total.items())))
    return [p for p in out if p.pairs]


def phase_flows(cid: str, phase: Phase, hosts: Sequence[str], scale: float) -> tuple[Flow, ...]:
    """The flows of a phase, bytes x ``scale`` rounded (at least 1)."""
    return tuple(
        Flow(f"{cid}:{i}", hosts[a], hosts[b], scaled(nb, scale))
        for i, ((a, b), nb) in enumerate(phase.pairs)
    )


def chain_coflows(
    base: str,
    phases: Sequence[Phase],
    hosts: Sequence[str],
    ident: CoflowIdentity,
    deps: Sequence[str],
    scale: float,
) -> list[Coflow]:
    """The phases as a chain of coflows ``base[.tag]`` (identity ``step`` = position),
    the first after ``deps``, each next after the previous."""
    out: list[Coflow] = []
    prev = tuple(deps)
    for step, phase in enumerate(phases):
        cid = f"{base}.{phase.tag}" if phase.tag else base
        flows = phase_flows(cid, phase, hosts, scale)
        out.append(Coflow(cid, flows, replace(ident, step=step), prev))
        prev = (cid,)
    return out
