"""NIC endpoints of multi-NIC servers (rail-optimised fabrics).

A server of G GPUs has ``nics`` NICs and sends GPU g's traffic on NIC ``g mod nics``.
The workload's hosts may be *slots* of a server: ``slots`` = Q slots of G/Q GPUs each,
named ``<server>s<q>`` (just ``<server>`` when Q = 1); slot q holds the GPUs
``g = u*Q + q`` (u = 0..G/Q-1), so with Q a multiple of ``nics`` a slot sits on one rail.
Slot-local GPU u runs TP rank ``u mod tp`` of the slot's DP rank ``u // tp`` (TP stays
in a server, never on a NIC).

Traffic is built per GPU and summed per pair of NIC endpoints; traffic between GPUs of
one server (NVLink) is dropped.  Endpoint names: the server's name with one NIC,
``<server>n<i>`` (NIC i, 0-based) with more.  Inside one pipeline stage an endpoint
index is ``slot * nics + nic`` (slot: stage-local slot index).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

Edge = tuple[int, int]
_SLOT = re.compile(r"^(.+)s([0-9]+)$")


def endpoint_name(server: str, nic: int, nics: int) -> str:
    """Name of NIC ``nic`` of ``server`` on a fabric of ``nics`` NICs per server."""
    return server if nics == 1 else f"{server}n{nic}"


def slot_name(server: str, q: int, slots: int) -> str:
    """Name of slot ``q`` of ``server`` split into ``slots`` slots."""
    return server if slots == 1 else f"{server}s{q}"


def slot_of(name: str, slots: int) -> tuple[str, int]:
    """(server, slot index) of a slot name; ValueError if it is not one."""
    if slots == 1:
        return name, 0
    m = _SLOT.match(name)
    if not m or int(m.group(2)) >= slots:
        raise ValueError(f"host {name!r} is not a slot <server>s<0..{slots - 1}>")
    return m.group(1), int(m.group(2))


@dataclass(frozen=True, slots=True)
class NicMap:
    """GPU -> NIC endpoint of one pipeline stage: ``k`` DP ranks of ``tp`` GPUs per
    slot, ``slots`` slots per server; ``servers``/``qs``: server and slot index of each
    stage-local slot."""

    nics: int
    tp: int
    k: int
    slots: int
    servers: tuple[str, ...]
    qs: tuple[int, ...]

    @classmethod
    def of(cls, hosts: Sequence[str], nics: int, tp: int, k: int, slots: int) -> NicMap:
        """The map of a stage on ``hosts`` (slot names)."""
        where = [slot_of(h, slots) for h in hosts]
        return cls(nics, tp, k, slots, tuple(s for s, _ in where), tuple(q for _, q in where))

    @property
    def size(self) -> int:
        """Endpoint indices of the stage."""
        return len(self.servers) * self.nics

    def gpu_nic(self, slot: int, u: int) -> int:
        """NIC of slot-local GPU ``u`` of stage-local slot ``slot``."""
        return (u * self.slots + self.qs[slot]) % self.nics

    def endpoint(self, rank: int, tau: int) -> int:
        """Endpoint index of TP rank ``tau`` of stage-local DP rank ``rank``."""
        slot = rank // self.k
        return slot * self.nics + self.gpu_nic(slot, (rank % self.k) * self.tp + tau)

    def same_server(self, ea: int, eb: int) -> bool:
        """Whether two endpoint indices are NICs of one server (NVLink between them)."""
        return self.servers[ea // self.nics] == self.servers[eb // self.nics]

    def matrix(self, ranks: np.ndarray, first: int = 0) -> np.ndarray:
        """Endpoint matrix (size x size) of a per-GPU matrix over DP ranks
        ``first..first+n-1`` (TP rank tau of a sends ``ranks[a, b]`` to tau of b),
        without traffic inside a server."""
        out = np.zeros((self.size, self.size))
        for tau in range(self.tp):
            idx = np.array([self.endpoint(first + r, tau) for r in range(ranks.shape[0])])
            np.add.at(out, (idx[:, None], idx[None, :]), ranks)
        srv = np.array([self.servers[e // self.nics] for e in range(self.size)])
        out[srv[:, None] == srv[None, :]] = 0.0
        return out

    def ring_edges(self, rings: Iterable[Sequence[int]]) -> Counter[Edge]:
        """Endpoint pairs the rings of every TP rank cross between servers, counted
        (``rings`` list stage-local DP ranks in ring order)."""
        edges: Counter[Edge] = Counter()
        for ring in rings:
            for tau in range(self.tp):
                for a, b in zip(ring, list(ring[1:]) + [ring[0]]):
                    ea, eb = self.endpoint(a, tau), self.endpoint(b, tau)
                    if len(ring) > 1 and not self.same_server(ea, eb):
                        edges[(ea, eb)] += 1
        return edges


def pp_pairs(src: NicMap, dst: NicMap, slot: int, gpus: int) -> Counter[Edge]:
    """GPUs of stage-local slot ``slot`` sending PP to the same GPU of ``dst``'s slot,
    per (source NIC, destination NIC); empty when both slots share a server."""
    if src.servers[slot] == dst.servers[slot]:
        return Counter()
    return Counter((src.gpu_nic(slot, u), dst.gpu_nic(slot, u)) for u in range(gpus))


def dense_rank_rings(dp: int) -> list[list[int]]:
    """The DP ring of one TP rank over DP ranks 0..dp-1 (rank indices)."""
    return [list(range(dp))]


def expert_rank_rings(dp: int, ep: int) -> list[list[int]]:
    """Expert-DP rings over DP ranks at the same position of every EP group."""
    return [[g + ep * q for q in range(dp // ep)] for g in range(ep)]
