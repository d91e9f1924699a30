"""The layer lines shared by SimAI/AICB and ASTRA-sim 1.0 text workloads:

``name reserved  fwd_time fwd_comm fwd_size  ig_time ig_comm ig_size
wg_time wg_comm wg_size  update_time`` (whitespace separated), after a line with the
layer count.  Errors name the file and line: ``<file>: line <n>: <reason>``.
"""

from __future__ import annotations

from collections.abc import Sequence

from workload.imports.model import COMM_TYPES, PASSES, Layer, Pass
from workload.schema import SpecError

FIELDS = (
    "layer name",
    "reserved",
    *(f"{p} {what}" for p in PASSES for what in ("compute time", "comm type", "comm size")),
    "update time",
)
SUFFIXES = {"": None, "_EP": "ep", "_DP_EP": "dp_ep"}
PLAIN_GROUP = {"fwd": "tp", "ig": "tp", "wg": "dp"}

Lines = Sequence[tuple[int, str]]  # (line number, text) of the non-blank lines


def line_error(source: str, line: int, reason: str) -> SpecError:
    """The one-line error for ``line`` of ``source``."""
    return SpecError(source, f"line {line}", reason)


def parse_count(source: str, lines: Lines) -> int:
    """The layer count (second line of the file)."""
    if len(lines) < 2:
        raise line_error(source, lines[-1][0] if lines else 1, "missing the layer count line")
    n, text = lines[1]
    if not text.strip().isdigit() or int(text) < 1:
        raise line_error(source, n, f"layer count must be a positive integer, got {text.strip()!r}")
    return int(text)


def parse_layers(
    source: str, lines: Lines, unit_s: float, suffixes: bool, world: bool
) -> tuple[Layer, ...]:
    """The layer lines after the count; ``unit_s`` = seconds per time unit, ``suffixes``
    whether ``_EP``/``_DP_EP`` group suffixes are allowed, ``world`` whether every
    collective spans all ranks (data/model-parallel policies)."""
    count = parse_count(source, lines)
    body = lines[2:]
    if len(body) < count:
        last = body[-1][0] if body else lines[1][0]
        raise line_error(source, last, f"file ends after {len(body)} of {count} layer lines")
    if len(body) > count:
        raise line_error(source, body[count][0], f"more lines than the layer count {count}")
    return tuple(_layer(source, n, text, unit_s, suffixes, world) for n, text in body)


def _layer(source: str, n: int, text: str, unit_s: float, suffixes: bool, world: bool) -> Layer:
    """One layer line."""
    tok = text.split()
    if len(tok) != len(FIELDS):
        raise line_error(
            source, n, f"expected {len(FIELDS)} fields ({', '.join(FIELDS)}), got {len(tok)}"
        )
    passes = [
        _pass(source, n, tok, 2 + 3 * i, p, unit_s, suffixes, world) for i, p in enumerate(PASSES)
    ]
    update = _number(source, n, tok, 11) * unit_s
    return Layer(tok[0], n, passes[0], passes[1], passes[2], update)


def _pass(
    source: str, n: int, tok: list[str], at: int, name: str, unit_s: float, sfx: bool, world: bool
) -> Pass:
    """The (compute time, comm type, comm size) triple starting at field ``at``."""
    compute = _number(source, n, tok, at) * unit_s
    size = _integer(source, n, tok, at + 2)
    kind = tok[at + 1]
    if kind == "NONE":
        return Pass(compute, "", "", 0)
    base, group = _comm_type(source, n, kind, name, sfx)
    return Pass(compute, COMM_TYPES[base], "world" if world else group, size)


def _comm_type(source: str, n: int, kind: str, name: str, sfx: bool) -> tuple[str, str]:
    """(base type, group) of a comm type token such as ``ALLTOALL_EP``."""
    for suffix, group in SUFFIXES.items():
        base = kind[: len(kind) - len(suffix)] if suffix else kind
        if kind.endswith(suffix) and base in COMM_TYPES and (sfx or not suffix):
            return base, group or PLAIN_GROUP[name]
    known = [f"{b}{s}" for b in COMM_TYPES for s in (SUFFIXES if sfx else [""])]
    raise line_error(
        source, n, f"{name} comm type: unknown {kind!r} (known: NONE, {', '.join(known)})"
    )


def _number(source: str, n: int, tok: list[str], at: int) -> float:
    """Field ``at`` as a non-negative finite number."""
    try:
        v = float(tok[at])
    except ValueError:
        v = -1.0
    if not 0 <= v < float("inf"):
        raise line_error(source, n, f"{FIELDS[at]} must be a non-negative number, got {tok[at]!r}")
    return v


def _integer(source: str, n: int, tok: list[str], at: int) -> int:
    """Field ``at`` as a non-negative integer."""
    if not tok[at].isdigit():
        raise line_error(
            source, n, f"{FIELDS[at]} must be a non-negative integer (bytes), got {tok[at]!r}"
        )
    return int(tok[at])


def read_lines(path: str) -> list[tuple[int, str]]:
    """The file's non-blank lines with their numbers; one-line error if unreadable."""
    try:
        text = open(path, encoding="utf-8").read()  # noqa: PTH123 (path may be a str)
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise SpecError(path, None, f"not a text file: {exc.reason}") from exc
    lines = [(i, t) for i, t in enumerate(text.splitlines(), 1) if t.strip()]
    if not lines:
        raise SpecError(path, None, "empty file")
    return lines
