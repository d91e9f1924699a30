"""ASTRA-sim 1.0 text workloads (``inputs/workload/*.txt`` of ASTRA-sim 1.0): the
parallelism policy (``DATA``, ``MODEL``, ``MICRO``, ``HYBRID_TRANSFORMER`` or
``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` with ``model_parallel_NPU_group: M``), the layer
count, then the layer lines (workload.imports.layers).  The NPU count is not in the
file (ASTRA-sim takes it from the network config): it is given on import.  Compute
times are cycles, taken as nanoseconds (1 GHz) unless a cycle time is given.
"""

from __future__ import annotations

from workload.imports.layers import line_error, parse_layers, read_lines
from workload.imports.model import ImportedWorkload, Layout

WORLD_POLICIES = ("DATA", "MODEL", "MICRO")  # every collective spans all NPUs
HYBRID = ("HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
GROUP_KEY = "model_parallel_NPU_group:"


def hybrid_tp(path: str, line: int, tokens: list[str]) -> int:
    """M of ``model_parallel_NPU_group: M`` (the only header key of the hybrid policies)."""
    if len(tokens) != 2 or tokens[0] != GROUP_KEY:
        raise line_error(
            path,
            line,
            f"{HYBRID[0]} needs exactly '{GROUP_KEY} <M>' after it, "
            f"got {' '.join(tokens) or 'nothing'!r}",
        )
    if not tokens[1].isdigit() or int(tokens[1]) < 1:
        raise line_error(path, line, f"{GROUP_KEY} must be a positive integer, got {tokens[1]!r}")
    return int(tokens[1])


def read(path: str, npus: int, cycle_s: float = 1e-9) -> ImportedWorkload:
    """Parse an ASTRA-sim 1.0 workload for ``npus`` NPUs."""
    lines = read_lines(path)
    n, head = lines[0]
    policy, *rest = head.split()
    if policy in WORLD_POLICIES:
        if rest:
            raise line_error(path, n, f"{policy} takes no header keys, got {' '.join(rest)!r}")
        tp = 1
    elif policy in HYBRID:
        tp = hybrid_tp(path, n, rest)
    else:
        raise line_error(
            path,
            n,
            f"unsupported parallelism policy {policy!r} "
            f"(supported: {', '.join(WORLD_POLICIES + HYBRID)})",
        )
    if npus % tp:
        raise line_error(path, n, f"{GROUP_KEY} {tp} does not divide the {npus} NPUs")
    layers = parse_layers(path, lines, cycle_s, suffixes=False, world=policy in WORLD_POLICIES)
    return ImportedWorkload(path, "astrasim", policy, Layout(tp, npus // tp), layers)
