"""Sincronia: Bottleneck-Select-Scale-Iterate (BSSI) ordering of coflows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numba import njit

from controller.policies.base import (
    CoflowState,
    Decision,
    FabricView,
    FlowTable,
    Policy,
    TableDecision,
)
from controller.policies.bigswitch import PortLoads, flow_table, port_loads
from controller.policies.registry import register


@register
class Sincronia(Policy):
    """Sincronia (Agarwal, Rajakrishnan, Narayan, Agarwal, Shmoys & Vahdat, "Sincronia:
    Near-Optimal Network Design for Coflows", SIGCOMM 2018), after the primal-dual
    algorithm of Mastrolilli et al. (2010) for concurrent open shop.  Clairvoyant.

    BSSI fills the order from the last position backwards: b = the port with the most work
    left among unordered coflows; among those using b, the coflow j minimising w_j / v_j[b]
    goes last (ties: the later arrival); every other coflow's weight drops by
    β·v_j[b] with β = that minimum.  Work v_j[p] is c's bits on port p divided by the
    port's rate (seconds; equals bytes on a uniform fabric).  Any rate allocation that
    respects the order is within 4x of optimal weighted CCT.

    Rank: ``(position,)`` in the BSSI order.  ``weights`` maps coflow id -> weight
    (default 1); coflows with nothing left are placed first."""

    name = "sincronia"
    clairvoyant = True

    def __init__(self, weights: Mapping[str, float] | None = None) -> None:
        """Check and keep the weights."""
        super().__init__()
        self.weights = dict(_check_weights(weights or {}))

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank every coflow by its BSSI position."""
        table = flow_table(states, fabric)
        ids = [s.coflow_id for s in states]
        seq = np.fromiter((s.arrival_seq for s in states), dtype=np.int64, count=len(states))
        return {cid: Decision(rank=r) for cid, r in zip(ids, self._ranks(table, ids, seq))}

    def decide_table(
        self, table: FlowTable, ids: Sequence[str], seq: np.ndarray, now: float
    ) -> TableDecision:
        """The same on arrays."""
        return TableDecision(self._ranks(table, ids, seq))

    def _ranks(self, table: FlowTable, ids: Sequence[str], seq: np.ndarray) -> list[tuple]:
        """BSSI positions as ranks ``(position,)``."""
        loads = port_loads(table)
        work = loads.bits / table.capacity[loads.port]
        w = np.fromiter(
            (self.weights.get(cid, 1.0) for cid in ids), dtype=np.float64, count=len(ids)
        )
        position = bssi(loads, work, w, seq, table.n_ports)
        return [(p,) for p in position.tolist()]


def _check_weights(weights: Mapping[str, float]) -> Mapping[str, float]:
    """``weights`` if every weight is a finite number > 0, else ValueError."""
    if not isinstance(weights, Mapping):
        raise ValueError(
            f"policy 'sincronia': parameter 'weights': must map coflow id -> "
            f"weight, got {weights!r}"
        )
    for cid, w in weights.items():
        if (
            isinstance(w, bool)
            or not isinstance(w, (int, float))
            or not (math.isfinite(w) and w > 0)
        ):
            raise ValueError(
                f"policy 'sincronia': parameter 'weights': weight of {cid!r} "
                f"must be a finite number > 0, got {w!r}"
            )
    return weights


def bssi(
    loads: PortLoads, work: np.ndarray, weights: np.ndarray, seq: np.ndarray, n_ports: int
) -> np.ndarray:
    """Position (0 = first) of every coflow in the BSSI order.

    ``work`` is per entry of ``loads`` (seconds); ``weights`` and ``seq`` per coflow.
    Compiled (``_bssi``): a decision of the simulator's whole-trace runs made one numpy
    call per step here, about a quarter of a millisecond per decision."""
    w = np.asarray(weights, dtype=np.float64)
    seq = np.asarray(seq, dtype=np.int64)
    return _bssi(loads.coflow, loads.port, loads.start, work, w, seq, n_ports)


@njit(cache=True)
def _bssi(coflow, port, start, work, weights, seq, n_ports) -> np.ndarray:
    """``bssi`` on the arrays of ``PortLoads``."""
    n = weights.size
    w = weights.copy()
    port_work = np.zeros(n_ports)
    for e in range(port.size):  # as np.bincount sums: in entry order
        port_work[port[e]] += work[e]
    by_port = np.argsort(port, kind="mergesort")  # column view of the sparse matrix
    col_start = np.searchsorted(port[by_port], np.arange(n_ports + 1))
    alive = np.ones(n, dtype=np.bool_)
    position = np.empty(n, dtype=np.int64)
    idle = np.flatnonzero(start[1:] == start[:-1])  # nothing left: go first
    idle = idle[np.argsort(seq[idle], kind="mergesort")]
    position[idle] = np.arange(idle.size)
    alive[idle] = False
    for pos in range(n - 1, idle.size - 1, -1):
        users, v = _bottleneck(coflow, work, port_work, by_port, col_start, alive)
        ratio = w[users] / v
        k = _pick_last(ratio, seq[users])
        j, beta = users[k], ratio[k]
        w[users] = np.maximum(w[users] - beta * v, 0.0)  # >= 0 in exact arithmetic
        alive[j] = False
        position[j] = pos
        for e in range(start[j], start[j + 1]):
            port_work[port[e]] -= work[e]
    return position


@njit(cache=True)
def _bottleneck(coflow, work, port_work, by_port, col_start, alive) -> tuple:
    """The most loaded port's unordered users and their work on it."""
    for _ in range(port_work.size):
        b = np.argmax(port_work)
        col = by_port[col_start[b] : col_start[b + 1]]
        col = col[alive[coflow[col]]]
        if col.size:
            return coflow[col], work[col]
        port_work[b] = -np.inf  # only round-off left on a drained port: never again
    raise AssertionError("BSSI: unordered coflows but no port carries their work")


@njit(cache=True)
def _pick_last(ratio, seq) -> int:
    """Index of the smallest ratio; among ties (1e-12 relative) the latest arrival."""
    best = ratio.min()
    ties = np.flatnonzero(ratio <= best + 1e-12 * max(abs(best), 1e-300))
    return ties[np.argmax(seq[ties])]
