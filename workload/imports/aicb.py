"""SimAI/AICB workload text files (``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` and the other
transformer policy SimAI's ``Workload::initialize_workload`` reads): a header line of
``key: value`` pairs, the layer count, then the layer lines (workload.imports.layers).

Header keys: ``model_parallel_NPU_group`` (TP), ``ep``, ``pp``, ``vpp``, ``ga``,
``all_gpus``, ``pp_comm`` (bytes per rank across a stage boundary), ``checkpoints`` /
``checkpoint_initiates`` (a count then that many layer ids).  Compute times are in
nanoseconds (SimAI's Tick).
"""

from __future__ import annotations

from workload.imports.layers import line_error, parse_layers, read_lines
from workload.imports.model import ImportedWorkload, Layout

POLICIES = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER")
KEYS = ("model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "all_gpus", "pp_comm")
LISTS = ("checkpoints", "checkpoint_initiates")
NS = 1e-9
IGNORED = ("vpp", "checkpoints", "checkpoint_initiates")  # read, not modelled


def header_values(source: str, line: int, tokens: list[str]) -> dict[str, int]:
    """The header's ``key: value`` pairs (list keys consume their count of values)."""
    out: dict[str, int] = {}
    i = 0
    while i < len(tokens):
        key = tokens[i].rstrip(":")
        if key not in KEYS + LISTS:
            raise line_error(
                source, line, f"unknown header key {tokens[i]!r} (known: {', '.join(KEYS + LISTS)})"
            )
        if key in out:
            raise line_error(source, line, f"header key {key!r} given twice")
        out[key] = _int(source, line, key, tokens, i + 1)
        i += 2 + (out[key] if key in LISTS else 0)
        if key in LISTS:
            for j in range(i - out[key], i):
                _int(source, line, key, tokens, j)
    return out


def _int(source: str, line: int, key: str, tokens: list[str], at: int) -> int:
    """Token ``at`` as a non-negative integer value of ``key``."""
    if at >= len(tokens) or not tokens[at].isdigit():
        got = tokens[at] if at < len(tokens) else "nothing"
        raise line_error(source, line, f"header {key}: must be a non-negative integer, got {got!r}")
    return int(tokens[at])


def layout(source: str, line: int, v: dict[str, int]) -> Layout:
    """TP x DP x PP (and EP inside DP) from the header; DP = all_gpus / (tp x pp)."""
    for key in ("model_parallel_NPU_group", "all_gpus"):
        if key not in v:
            raise line_error(source, line, f"header needs {key}:")
    tp, pp, ep, gpus = (v.get(k, 1) for k in ("model_parallel_NPU_group", "pp", "ep", "all_gpus"))
    if min(tp, pp, ep, gpus) < 1:
        raise line_error(
            source, line, "header model_parallel_NPU_group, ep, pp, all_gpus must be >= 1"
        )
    if gpus % (tp * pp):
        raise line_error(source, line, f"all_gpus {gpus} is not a multiple of tp {tp} x pp {pp}")
    dp = gpus // (tp * pp)
    if dp % ep:
        raise line_error(source, line, f"ep {ep} does not divide dp = all_gpus/(tp*pp) = {dp}")
    if pp > 1 and not v.get("pp_comm"):
        raise line_error(source, line, f"pp {pp} needs pp_comm (bytes per stage boundary)")
    return Layout(tp, dp, pp, ep)


def read(path: str) -> ImportedWorkload:
    """Parse a SimAI/AICB workload file."""
    lines = read_lines(path)
    n, head = lines[0]
    tokens = head.split()
    if tokens[0] not in POLICIES:
        raise line_error(
            path,
            n,
            f"unsupported parallelism policy {tokens[0]!r} (supported: {', '.join(POLICIES)})",
        )
    v = header_values(path, n, tokens[1:])
    lay = layout(path, n, v)
    layers = parse_layers(path, lines, NS, suffixes=True, world=False)
    ignored = tuple(k for k in IGNORED if v.get(k, 0) > (k == "vpp"))
    return ImportedWorkload(
        path, "aicb", tokens[0], lay, layers, max(1, v.get("ga", 1)), v.get("pp_comm", 0), ignored
    )
