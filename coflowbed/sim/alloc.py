"""Rate allocation of the fluid model: strict priority across levels, max-min fairness
(progressive filling) within a level, optional per-flow caps, work conservation.

``paths`` is int32 [flows, width] of link indices (padding = a link of infinite
capacity), ``residual`` the free capacity of every link in bit/s.

Caps (a policy's own rates, e.g. Varys MADD) are honoured in a first pass, level by
level; a second pass then hands whatever capacity is left to the same flows, again
strictly by level and max-min fair within a level, so the allocation is work
conserving: a flow only stays below what its links could give it when a link it
crosses is full.  The arithmetic runs compiled (``kernel``); this module checks and
converts the arrays.
"""

from __future__ import annotations

import numpy as np

from coflowbed.sim import kernel


def waterfill(
    paths: np.ndarray,
    residual: np.ndarray,
    caps: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rates of the flows in ``paths`` on ``residual`` capacity (progressive
    filling), each flow at most ``caps`` (None = no caps).  Subtracts what it gives from
    ``residual`` (float64, in place) and returns the rates.  ``weights``: positive
    integer multiplicity of each row (a row then stands for that many identical flows;
    rates are per flow; not with caps)."""
    paths = _as_paths(paths)
    n = paths.shape[0]
    if caps is not None and weights is not None:
        raise ValueError("waterfill: caps and weights cannot be combined")
    if not n:
        return np.zeros(0)
    weight = (
        np.zeros(0, dtype=np.int64)
        if weights is None
        else np.ascontiguousarray(weights, dtype=np.int64)
    )
    eps = kernel.full_below(residual)
    return kernel.fill(
        paths, np.arange(n), weight, residual, eps, _as_caps(caps, n), np.zeros(n), caps is not None
    )


def allocate(
    paths: np.ndarray,
    levels: np.ndarray,
    capacity: np.ndarray,
    caps: np.ndarray | None = None,
    hard_caps: bool = False,
    path_id: np.ndarray | None = None,
) -> np.ndarray:
    """Rates (bit/s) of flows with ``paths`` at priority ``levels`` (0 = most urgent)
    on links of ``capacity``: strict priority by level, max-min within a level; with
    ``caps``, capped pass first and a work-conserving pass for the leftover, unless
    ``hard_caps`` (meters: a flow never exceeds its cap).  ``path_id`` (optional, ints
    >= 0, equal only for flows with equal ``paths`` rows) lets uncapped passes fill one
    row per distinct path and level, weighted by its flow count."""
    paths = _as_paths(paths)
    n = paths.shape[0]
    if caps is None:
        mode = kernel.NO_CAPS
    else:
        mode = kernel.HARD_CAPS if hard_caps else kernel.SOFT_CAPS
    pid = (
        np.zeros(0, dtype=np.int64)
        if path_id is None
        else np.ascontiguousarray(path_id, dtype=np.int64)
    )
    levels = np.ascontiguousarray(levels, dtype=np.int64)
    # The kernel does not check bounds: refuse arrays that do not match the flows.
    if levels.shape != (n,) or pid.shape not in ((0,), (n,)):
        raise ValueError(f"allocate: {n} flows but {levels.size} levels, {pid.size} path ids")
    return kernel.allocate_levels(
        paths, levels, np.ascontiguousarray(capacity, dtype=float), _as_caps(caps, n), mode, pid
    )


def _as_paths(paths: np.ndarray) -> np.ndarray:
    """``paths`` as a C-contiguous int32 [flows, width] array (one compiled signature)."""
    arr = np.ascontiguousarray(paths, dtype=np.int32)
    return arr if arr.ndim == 2 else arr.reshape(len(arr), -1)


def _as_caps(caps: np.ndarray | None, n: int) -> np.ndarray:
    """Per-flow caps as float64 (empty when there are none: then the kernel never
    reads them)."""
    if caps is None:
        return np.zeros(0)
    caps = np.ascontiguousarray(caps, dtype=float)
    if caps.shape != (n,):
        raise ValueError(f"caps: {caps.shape[0]} values for {n} flows")
    return caps
