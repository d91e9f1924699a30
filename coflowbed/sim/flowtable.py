"""The flows of a DAG as numpy arrays, laid out coflow by coflow so that coflow ``c``
owns flow indices ``offsets[c]:offsets[c+1]``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from coflowbed.sim.fabric import NONE_DOWN, Down, FabricModel
from workload.dag import Coflow
from workload.flowblock import flow_columns, flow_ids


@dataclass
class FlowTable:
    """Static per-flow arrays plus the mutable ``remaining`` bytes and timestamps."""

    coflows: list[Coflow]
    offsets: np.ndarray  # int64 [C+1]
    coflow_of: np.ndarray  # int32 [F]
    size: np.ndarray  # float64 bytes [F]
    paths: np.ndarray  # int32 [F, width]
    path_id: np.ndarray = field(init=False)  # int64 [F]: equal iff the paths rows are equal
    remaining: np.ndarray = field(init=False)
    start_s: np.ndarray = field(init=False)
    finish_s: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.remaining = self.size.copy()
        self.path_id = _path_ids(self.paths)
        self.start_s = np.full(self.size.shape, np.nan)
        self.finish_s = np.full(self.size.shape, np.nan)
        self._ids: dict[int, list[str]] = {}
        self._local: dict[int, dict[str, int]] = {}

    @classmethod
    def build(cls, coflows: list[Coflow], fabric: FabricModel) -> FlowTable:
        """Arrays for ``coflows`` on ``fabric`` (ValueError if a host is not on it)."""
        counts = np.fromiter((len(c.flows) for c in coflows), np.int64, len(coflows))
        offsets = np.concatenate([[0], np.cumsum(counts)])
        coflow_of = np.repeat(np.arange(len(coflows), dtype=np.int32), counts)
        cols = flow_columns(coflows)  # no Flow objects for array-backed coflows
        ids = flow_ids(coflows) if fabric.hashes_flow_ids else ()
        paths = fabric.paths(cols.src, cols.dst, ids)
        n = cols.nbytes.shape[0]
        return cls(coflows, offsets, coflow_of, cols.nbytes, paths.reshape(n, fabric.width))

    def repath(self, fabric: FabricModel, down: Down = NONE_DOWN) -> None:
        """Every flow's path again, around the leaf-spine links ``down``."""
        cols = flow_columns(self.coflows)
        paths = fabric.paths(cols.src, cols.dst, flow_ids(self.coflows), down)
        self.paths = paths.reshape(len(cols.src), fabric.width)
        self.path_id = _path_ids(self.paths)

    def __len__(self) -> int:
        """Number of flows."""
        return self.size.shape[0]

    def span(self, c: int) -> np.ndarray:
        """Flow indices of coflow ``c``."""
        return np.arange(self.offsets[c], self.offsets[c + 1])

    def flow_ids(self, c: int) -> list[str]:
        """Flow ids of coflow ``c`` in index order (cached)."""
        ids = self._ids.get(c)
        if ids is None:
            ids = self._ids[c] = [f.flow_id for f in self.coflows[c].flows]
        return ids

    def local_index(self, c: int) -> dict[str, int]:
        """{flow id: position within coflow ``c``} (cached)."""
        idx = self._local.get(c)
        if idx is None:
            idx = self._local[c] = {f: i for i, f in enumerate(self.flow_ids(c))}
        return idx

    def remaining_dict(self, c: int) -> dict[str, int]:
        """{flow id: bytes still to deliver} of coflow ``c`` (rounded up: a flow with
        any byte left is not done)."""
        lo, hi = self.offsets[c], self.offsets[c + 1]
        left = whole_bytes(self.remaining[lo:hi]).astype(np.int64).tolist()
        return dict(zip(self.flow_ids(c), left))


def whole_bytes(left: np.ndarray) -> np.ndarray:
    """Bytes left as a policy sees them: whole bytes, rounded up (a flow with any byte
    left is not done); round-off of the fluid model (1e-6 B) does not count.  In
    place on one copy (``clip`` took ten times as long on 3 * 10^5 flows)."""
    out = left - 1e-6
    np.ceil(out, out=out)
    return np.maximum(out, 0.0, out=out)


def _path_ids(paths: np.ndarray) -> np.ndarray:
    """Dense id per distinct row of ``paths`` (lets the allocator fill flows that share a
    path as one weighted row); rows packed into one int64 key when they fit."""
    if paths.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    base = int(paths.max()) + 1
    if base ** paths.shape[1] < 2**62:
        key = np.zeros(paths.shape[0], dtype=np.int64)
        for k in range(paths.shape[1]):
            key = key * base + paths[:, k]
        return np.unique(key, return_inverse=True)[1].astype(np.int64)
    return np.unique(paths, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
