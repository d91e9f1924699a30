"""The coflow DAG: the one data model shared by generator, trace readers, policies,
simulator and emulator orchestrator.

A DAG holds two kinds of nodes, both named by a unique string id:

- ``Compute``: a delay on one host (a GPU's forward/backward work), ``duration_s``.
- ``Coflow``: a set of flows that belong together, with its identity (job, iteration,
  microbatch MID, type, layer LID, collective, step) that policies may read.

A node may start when every node in its ``deps`` has finished and, for coflows, not
before ``release_s`` (trace arrival time).  Nothing here knows about Mininet or switches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

DEFAULT_JOB = "job0"  # the job of every node of a single-job DAG
SETUP_ITERATION = -1  # iteration of nodes that belong to no iteration (a job's start delay)


# Not StrEnum (ruff UP042): that would change str() and f-strings of a member from
# "CoflowType.PP" to "PP", which logs and messages may carry.
class CoflowType(str, Enum):  # noqa: UP042
    """What a coflow carries; PP/EP/DP cross the fabric, TP stays inside a server."""

    PP = "PP"
    EP = "EP"
    DP = "DP"
    TP = "TP"
    OTHER = "OTHER"  # trace coflows (e.g. Facebook MapReduce shuffles)


@dataclass(frozen=True)
class CoflowIdentity:
    """Static model factors of a coflow (Hermod's MID, CType, LID and the rest)."""

    ctype: CoflowType = CoflowType.OTHER
    job: str = DEFAULT_JOB
    iteration: int = 0
    mid: int = 0  # microbatch id within the iteration
    lid: int = 0  # layer id (global layer index)
    collective: str = ""  # e.g. "send_recv", "reduce_scatter", "all_gather", "all_to_all"
    step: int = 0  # step of a ring collective or sub-phase of a decomposed all-to-all
    phase: str = ""  # "fwd", "bwd" or "" (e.g. DP after backward)
    stage: int = -1  # pipeline stage that issues it, -1 when not applicable


@dataclass(frozen=True)
class Flow:
    """One point-to-point transfer of ``bytes`` from host ``src`` to host ``dst``."""

    flow_id: str
    src: str
    dst: str
    bytes: int

    def __post_init__(self) -> None:
        if self.src == self.dst:
            raise ValueError(f"flow {self.flow_id}: src and dst are both {self.src}")
        if self.bytes <= 0:
            raise ValueError(f"flow {self.flow_id}: bytes must be > 0, got {self.bytes}")


@dataclass(frozen=True)
class Coflow:
    """A set of flows with one identity, released after its dependencies."""

    coflow_id: str
    flows: Sequence[Flow]  # a tuple, or a workload.flowblock.FlowBlock (arrays)
    identity: CoflowIdentity = field(default_factory=CoflowIdentity)
    deps: tuple[str, ...] = ()
    release_s: float = 0.0

    @property
    def bytes(self) -> int:
        """Total bytes of all flows."""
        return sum(f.bytes for f in self.flows)

    @property
    def ctype(self) -> CoflowType:
        """Shortcut for the identity's coflow type."""
        return self.identity.ctype


@dataclass(frozen=True)
class Compute:
    """A compute delay on one host (forward or backward work of a pipeline stage)."""

    node_id: str
    host: str
    duration_s: float
    deps: tuple[str, ...] = ()
    label: str = ""  # e.g. "fwd mb3 stage1"
    iteration: int = 0  # SETUP_ITERATION: outside every iteration (a job's start delay)
    job: str = DEFAULT_JOB


Node = Coflow | Compute


@dataclass
class Dag:
    """Coflows and compute nodes with dependencies, plus free-form metadata
    (job name, byte scale factor, model, parallelism) that result files repeat."""

    coflows: list[Coflow] = field(default_factory=list)
    computes: list[Compute] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def nodes(self) -> Iterator[Node]:
        """All nodes, computes first."""
        yield from self.computes
        yield from self.coflows

    def hosts(self) -> set[str]:
        """Every host that sends, receives or computes."""
        hosts = {c.host for c in self.computes}
        for cf in self.coflows:
            for f in cf.flows:
                hosts.update((f.src, f.dst))
        return hosts

    def iterations(self) -> list[int]:
        """Sorted iteration numbers present in the DAG."""
        its = {c.iteration for c in self.computes} | {cf.identity.iteration for cf in self.coflows}
        return sorted(its)


def node_id(n: Node) -> str:
    """The id of a compute or coflow node."""
    return n.node_id if isinstance(n, Compute) else n.coflow_id


def node_iteration(n: Node) -> tuple[str, int]:
    """(job, iteration) of a compute or coflow node: the key of its iteration span."""
    if isinstance(n, Compute):
        return n.job, n.iteration
    return n.identity.job, n.identity.iteration


def topological_order(dag: Dag) -> list[str]:
    """Node ids in a dependency-respecting order (Kahn); ValueError on a cycle."""
    indeg: dict[str, int] = {}
    children: dict[str, list[str]] = {}
    for n in dag.nodes():
        nid = node_id(n)
        indeg[nid] = len(n.deps)
        for d in n.deps:
            children.setdefault(d, []).append(nid)
    ready = [nid for nid, k in indeg.items() if k == 0]
    order: list[str] = []
    while ready:
        nid = ready.pop()
        order.append(nid)
        for c in children.get(nid, ()):
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if len(order) != len(indeg):
        stuck = sorted(k for k, v in indeg.items() if v > 0)[:5]
        raise ValueError(f"dependency cycle among nodes such as {stuck}")
    return order


def merge_pair_flows(cf: Coflow) -> Coflow:
    """The same coflow with its flows between one (src, dst) pair merged into one flow
    (bytes summed).  Traces mapped onto few hosts repeat pairs many times; one TCP
    connection per pair is what a host would open."""
    pairs: dict[tuple[str, str], int] = {}
    for f in cf.flows:
        pairs[(f.src, f.dst)] = pairs.get((f.src, f.dst), 0) + f.bytes
    if len(pairs) == len(cf.flows):
        return cf
    flows = tuple(
        Flow(f"{cf.coflow_id}.{src}-{dst}", src, dst, b) for (src, dst), b in pairs.items()
    )
    return Coflow(cf.coflow_id, flows, cf.identity, cf.deps, cf.release_s)
