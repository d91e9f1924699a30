"""Name -> id lookups and value encoding from a P4Info.

P4Runtime entities carry numeric ids and byte strings; this module turns the names used
in p4src/coflowbed.p4 (``CoflowIngress.coflow``, match field ``tag``, ...) into ids and
widths, and encodes integers into byte strings of exactly the field's width (the
form every P4Runtime server accepts; BMv2's PI also accepts the canonical shortest
form, but padding keeps the widths checkable).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from finsy.proto import p4i
from google.protobuf import text_format


@dataclass(frozen=True)
class FieldInfo:
    """One match field or action parameter."""

    id: int
    name: str
    bitwidth: int
    match_type: int = 0  # p4i.MatchField.MatchType for match fields


def encode_uint(value: int, bitwidth: int) -> bytes:
    """``value`` as a big-endian byte string of ceil(bitwidth / 8) bytes."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"value must be an int, got {value!r}")
    if not 0 <= value < (1 << bitwidth):
        raise ValueError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes((bitwidth + 7) // 8, "big")


def decode_uint(data: bytes) -> int:
    """Inverse of :func:`encode_uint` (any length, canonical or padded)."""
    return int.from_bytes(data, "big")


def ip_to_int(ip: str) -> int:
    """Dotted IPv4 address -> int."""
    return int(ipaddress.IPv4Address(ip))


class P4InfoIndex:
    """Lookups into one P4Info message."""

    def __init__(self, info: p4i.P4Info) -> None:
        """Index ``info`` by fully qualified and by short names."""
        self.info = info
        self._ids: dict[tuple[str, str], int] = {}
        self._fields: dict[tuple[int, str], FieldInfo] = {}
        self._params: dict[tuple[int, str], FieldInfo] = {}
        for kind in (
            "tables",
            "actions",
            "meters",
            "counters",
            "direct_counters",
            "action_profiles",
        ):
            for obj in getattr(info, kind):
                self._add_name(kind, obj.preamble)
        for t in info.tables:
            for mf in t.match_fields:
                self._fields[(t.preamble.id, mf.name)] = FieldInfo(
                    mf.id, mf.name, mf.bitwidth, mf.match_type
                )
        for a in info.actions:
            for prm in a.params:
                self._params[(a.preamble.id, prm.name)] = FieldInfo(prm.id, prm.name, prm.bitwidth)

    def _add_name(self, kind: str, preamble) -> None:
        """Register the full name, and the last component as an alias (if unique)."""
        self._ids[(kind, preamble.name)] = preamble.id
        short = preamble.name.rsplit(".", 1)[-1]
        if (kind, short) in self._ids and self._ids[(kind, short)] != preamble.id:
            self._ids[(kind, short)] = -1  # ambiguous: only the full name works
        else:
            self._ids[(kind, short)] = preamble.id

    @classmethod
    def from_file(cls, path: Path) -> P4InfoIndex:
        """Parse a text-format P4Info file; ValueError naming the file on bad content."""
        info = p4i.P4Info()
        try:
            text_format.Parse(Path(path).read_text(), info)
        except (OSError, text_format.ParseError) as e:
            raise ValueError(f"{path}: not a P4Info text file: {e}") from None
        return cls(info)

    def id(self, kind: str, name: str) -> int:
        """Id of the ``kind`` (``tables``, ``actions``, ``meters``, ``counters``,
        ``direct_counters``, ``action_profiles``) called ``name``; KeyError otherwise."""
        got = self._ids.get((kind, name))
        if got is None:
            raise KeyError(f"P4Info has no {kind[:-1]} named {name!r}")
        if got < 0:
            raise KeyError(f"P4Info {kind[:-1]} name {name!r} is ambiguous; use the full name")
        return got

    def match_field(self, table: str, field: str) -> FieldInfo:
        """Match field ``field`` of table ``table``."""
        got = self._fields.get((self.id("tables", table), field))
        if got is None:
            raise KeyError(f"P4Info table {table!r} has no match field {field!r}")
        return got

    def param(self, action: str, param: str) -> FieldInfo:
        """Parameter ``param`` of action ``action``."""
        got = self._params.get((self.id("actions", action), param))
        if got is None:
            raise KeyError(f"P4Info action {action!r} has no parameter {param!r}")
        return got

    def size(self, kind: str, name: str) -> int:
        """Declared size of a table, meter or counter."""
        pid = self.id(kind, name)
        for obj in getattr(self.info, kind):
            if obj.preamble.id == pid:
                return obj.size
        raise KeyError(name)  # unreachable: id() found it
