"""The policy interface: pure functions of coflow state, used alike by the emulator's
controller, the flow-level simulator and the unit tests.

A policy sees the active coflows (``CoflowState``) and the fabric's port capacities
(``FabricView``) and returns, per coflow, a ``Decision``: a *rank* (smaller = more
urgent; any tuple or number, ties allowed) and optionally per-flow rates in bit/s.
Ranks are compressed onto the K hardware levels by ``controller.compress`` — policies
never deal with K except D-CLAS, whose queues are levels by definition.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workload.dag import Coflow
from workload.marking import MAX_LEVELS

Rank = tuple  # compared lexicographically; policies return tuples of numbers


@dataclass
class CoflowState:
    """What a scheduler may know of one active coflow at time ``now``.

    ``remaining`` maps flow id -> bytes not yet delivered (clairvoyant policies use it;
    non-clairvoyant ones must only read ``bytes_sent``).  ``arrival_seq`` is the global
    arrival order (0, 1, ...), used to break ties deterministically.
    """

    coflow: Coflow
    arrival_s: float
    arrival_seq: int
    bytes_sent: int = 0
    remaining: dict[str, int] = field(default_factory=dict)

    @property
    def coflow_id(self) -> str:
        """The coflow's id."""
        return self.coflow.coflow_id

    def remaining_flows(self):
        """Flows of this coflow that still have bytes to deliver."""
        return [f for f in self.coflow.flows if self.remaining.get(f.flow_id, f.bytes) > 0]


@dataclass(frozen=True)
class FabricView:
    """Port capacities a policy may use: every host's uplink (egress) and downlink
    (ingress) in bit/s.  The leaf-spine core is assumed non-blocking by policies
    (as Varys, Aalo and Sincronia assume a big switch)."""

    egress_bps: Mapping[str, float]
    ingress_bps: Mapping[str, float]
    levels: int = MAX_LEVELS

    @classmethod
    def uniform(cls, hosts, bps: float, levels: int = MAX_LEVELS) -> FabricView:
        """Every host port at the same rate ``bps`` each way."""
        hosts = list(hosts)
        return cls(dict.fromkeys(hosts, bps), dict.fromkeys(hosts, bps), levels)


@dataclass(frozen=True)
class Decision:
    """Rank (smaller = more urgent) and optional per-flow rates (bit/s) of a coflow."""

    rank: Rank
    flow_rates_bps: Mapping[str, float] | None = None


@dataclass(frozen=True)
class TableDecision:
    """A vectorised decision (``Policy.decide_table``): one rank per coflow of the table
    and, optionally, a rate in bit/s per row (live flow) of the table."""

    ranks: list[Rank]
    flow_rates_bps: np.ndarray | None = None


@dataclass
class FlowTable:
    """Live flows of all coflows, grouped by coflow (``start[c]:start[c+1]``)."""

    flow_ids: Sequence[str]  # may be empty when the caller only needs the arrays
    coflow: np.ndarray  # int64, owning coflow index per flow, non-decreasing
    src: np.ndarray  # int64 egress port index
    dst: np.ndarray  # int64 ingress port index
    bits: np.ndarray  # float64 bits left
    start: np.ndarray  # int64, n_coflows + 1 offsets into the flow arrays
    capacity: np.ndarray  # float64 bit/s per port (2H)
    n_hosts: int

    @property
    def n_ports(self) -> int:
        """Number of ports (egress + ingress)."""
        return len(self.capacity)


class Policy(ABC):
    """Base class of scheduling policies.  Subclasses set ``name`` and implement
    ``decide``; ``clairvoyant`` says whether they read flow sizes."""

    name: str = ""
    clairvoyant: bool = False
    # True when a coflow's rank depends only on its identity (type, MID, LID, phase), as
    # in the LLM schedulers whose switches hold a static tag -> priority table: the
    # testbed then assigns levels once for the whole DAG and writes nothing while running.
    ranks_by_identity: bool = False
    dag_compression: str | None = (
        None  # scheme for the whole-DAG compression (default: compression)
    )
    # True when the ranks are the levels themselves (the scenario's ``static`` policy):
    # no compression, rank (L,) is level L.
    levels_given: bool = False
    # True when a decision's flow rates are limits (meters police them); False: the
    # simulator tops flows up, work-conserving, beyond their rates.
    rates_are_limits: bool = False
    # Thresholds on bytes_sent at which decisions may change without an arrival or a
    # completion (D-CLAS); the controller re-decides when a coflow crosses one.
    byte_thresholds: Sequence[int] = ()
    # True when ``decide`` reads ``CoflowState.bytes_sent`` (implied by byte_thresholds):
    # the emulator's controller then keeps it up from the switches' per-tag byte
    # counters; for a policy that declares neither it stays 0 on the emulator (the
    # simulator sets it for every policy).
    reads_bytes_sent: bool = False
    # Other names users may select the policy by (e.g. "megatron" for "fair").
    aliases: Sequence[str] = ()
    # Scheme of ``controller.compress`` that suits this policy's ranks ("top",
    # "quantile" or "lexicographic"); callers pass it as ``how=``.
    compression: str = "top"
    # True when the policy's rates are meant to hold until the next decision (Varys
    # recomputes on coflow arrival and completion only): a flow finishing early does not
    # hand its capacity to others until then.  False: the simulator re-shares at every
    # flow completion (max-min within a level).
    hold_rates: bool = False

    def __init__(self, **params: Any) -> None:
        """Policies without parameters reject any they are given."""
        if params:
            raise ValueError(f"policy {self.name!r} takes no parameters {sorted(params)}")

    @abstractmethod
    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Return a Decision for every coflow in ``states``."""

    def decide_table(
        self, table: FlowTable, ids: Sequence[str], seq: np.ndarray, now: float
    ) -> TableDecision | None:
        """Optional vectorised ``decide`` for callers that already hold the live flows as
        arrays (the simulator, at 10^5-10^6 flows): ``table`` rows are the live flows
        grouped by coflow, ``ids``/``seq`` the coflows' ids and arrival sequence numbers.
        Must decide exactly as ``decide`` would; None = not provided."""
        return None
