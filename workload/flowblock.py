"""The flows of one coflow as arrays instead of one ``Flow`` object each.

A generated all-to-all or ring coflow has tens to hundreds of flows, and a 32K-GPU job
millions of them; a ``FlowBlock`` keeps a coflow's sources and destinations as indices
into a host tuple shared by the whole stage, and its bytes as one array.  It is a
``Sequence[Flow]``: indexing or iterating builds the ``Flow`` objects on demand (flow n
is ``<coflow id>:<n>``), and it compares equal to the tuple of those flows, so code
that reads ``coflow.flows`` is unchanged.  ``flow_columns`` and ``flow_ids`` give the
columns of many coflows at once without building the objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import overload

import numpy as np

from workload.dag import Coflow, Flow


@dataclass(frozen=True, eq=False)
class FlowBlock(Sequence[Flow]):
    """Flow n: ``hosts[src[n]] -> hosts[dst[n]]``, ``nbytes[n]`` bytes, id
    ``f"{coflow_id}:{n}"``.  The arrays are read-only (they may be shared)."""

    coflow_id: str
    hosts: tuple[str, ...]
    src: np.ndarray  # int64 [n], indices into hosts
    dst: np.ndarray  # int64 [n]
    nbytes: np.ndarray  # int64 [n], > 0

    def __post_init__(self) -> None:
        """Freeze the arrays; ValueError (as ``Flow`` raises it) on a flow from a host
        to itself or without bytes."""
        for a in (self.src, self.dst, self.nbytes):
            a.flags.writeable = False
        if not self.src.shape == self.dst.shape == self.nbytes.shape:
            raise ValueError(f"coflow {self.coflow_id}: src, dst and bytes differ in length")
        bad = (self.src == self.dst) | (self.nbytes <= 0)
        if bad.any():
            self.__getitem__(int(bad.argmax()))  # Flow() raises, naming the flow and why

    def __len__(self) -> int:
        """Number of flows."""
        return int(self.nbytes.shape[0])

    @overload
    def __getitem__(self, i: int) -> Flow: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Flow, ...]: ...

    def __getitem__(self, i: int | slice) -> Flow | tuple[Flow, ...]:
        """Flow ``i`` (negative counts from the end), or a tuple of a slice's flows."""
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = range(len(self))[i]  # IndexError past the end
        h = self.hosts
        return Flow(f"{self.coflow_id}:{n}", h[self.src[n]], h[self.dst[n]], int(self.nbytes[n]))

    def __iter__(self) -> Iterator[Flow]:
        """The flows in index order."""
        h, cid = self.hosts, self.coflow_id
        for n, (s, d, b) in enumerate(
            zip(self.src.tolist(), self.dst.tolist(), self.nbytes.tolist(), strict=True)
        ):
            yield Flow(f"{cid}:{n}", h[s], h[d], b)

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same flows (a tuple of ``Flow`` included)."""
        if not isinstance(other, Sequence):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self) -> int:
        """Hash of the tuple of flows it equals."""
        return hash(tuple(self))

    def src_names(self) -> list[str]:
        """Source host of every flow."""
        return _pick(self.hosts, self.src)

    def dst_names(self) -> list[str]:
        """Destination host of every flow."""
        return _pick(self.hosts, self.dst)

    def flow_ids(self) -> list[str]:
        """Id of every flow."""
        cid = self.coflow_id
        return [f"{cid}:{n}" for n in range(len(self))]


def _pick(hosts: tuple[str, ...], idx: np.ndarray) -> list[str]:
    """``[hosts[i] for i in idx]``, gathered in C."""
    if idx.size < 2:
        return [hosts[i] for i in idx.tolist()]
    return list(itemgetter(*idx.tolist())(hosts))


@dataclass(frozen=True)
class FlowColumns:
    """Sources, destinations and bytes of the flows of many coflows, coflow by coflow."""

    src: list[str]
    dst: list[str]
    nbytes: np.ndarray  # float64 [flows]


def flow_columns(coflows: Sequence[Coflow]) -> FlowColumns:
    """The columns of every flow of ``coflows`` (blocks read as arrays, others per flow)."""
    src: list[str] = []
    dst: list[str] = []
    sizes: list[np.ndarray] = []
    for c in coflows:
        fl = c.flows
        if isinstance(fl, FlowBlock):
            src += fl.src_names()
            dst += fl.dst_names()
            sizes.append(fl.nbytes)
        else:
            src += [f.src for f in fl]
            dst += [f.dst for f in fl]
            sizes.append(np.fromiter((f.bytes for f in fl), np.int64, len(fl)))
    nbytes = np.concatenate(sizes).astype(np.float64) if sizes else np.zeros(0)
    return FlowColumns(src, dst, nbytes)


def flow_ids(coflows: Sequence[Coflow]) -> list[str]:
    """The id of every flow of ``coflows``, coflow by coflow."""
    out: list[str] = []
    for c in coflows:
        fl = c.flows
        out += fl.flow_ids() if isinstance(fl, FlowBlock) else [f.flow_id for f in fl]
    return out
