"""The typed answers of the control plane's status and counter ops (``status``,
``tag_stats``, ``port_stats``, ``meter_stats``): built by the controller, serialised at
the socket (``to_wire``), parsed back by ``ControllerClient`` (``from_wire``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


def _build(cls, d: Any, where: str):
    """A ``cls`` from its JSON object; ValueError naming ``where`` and the key."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: must be an object")
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key")
    try:
        return cls(**d)
    except TypeError as e:
        raise ValueError(f"{where}: {e}") from None


@dataclass(frozen=True)
class Status:
    """Switches connected now, whether every switch is installed, the levels K."""

    switches: tuple[str, ...]
    ready: bool
    levels: int

    def to_wire(self) -> dict:
        """JSON form."""
        return {"switches": list(self.switches), "ready": self.ready, "levels": self.levels}

    @classmethod
    def from_wire(cls, d: Any) -> Status:
        """Parse the JSON form (the reply's ``ok`` already dropped)."""
        s = _build(cls, d, "status")
        return replace(s, switches=tuple(s.switches))


@dataclass(frozen=True)
class TagCount:
    """Bytes and packets a tag's rules counted (removed rules of its incarnation too)."""

    bytes: int
    packets: int


@dataclass(frozen=True)
class PortCount:
    """A switch port's counters."""

    rx_bytes: int
    tx_bytes: int
    rx_packets: int
    tx_packets: int

    def minus(self, before: PortCount | None) -> PortCount:
        """These counters less ``before`` (all kept when None)."""
        if before is None:
            return self
        return PortCount(*(getattr(self, f.name) - getattr(before, f.name) for f in fields(self)))


@dataclass(frozen=True)
class MeterRow:
    """One leaf meter's counters, labelled with its tag and host(s); ``retired``: the
    meter was removed by ``clear`` and these are its last counters."""

    switch: str
    meter_id: int
    tag: int | None
    src: str | None
    dst: str | None
    packets_in: int
    bytes_in: int
    drop_packets: int
    drop_bytes: int
    retired: bool = False


def tags_to_wire(tags: dict[int, TagCount]) -> dict:
    """``tag_stats`` reply body."""
    return {"tags": {str(t): asdict(c) for t, c in tags.items()}}


def tags_from_wire(d: Any) -> dict[int, TagCount]:
    """Parse a ``tag_stats`` reply body."""
    return {int(t): _build(TagCount, c, f"tags.{t}") for t, c in d["tags"].items()}


def ports_to_wire(ports: dict[str, dict[int, PortCount]]) -> dict:
    """``port_stats`` reply body."""
    return {
        "switches": {sw: {str(p): asdict(c) for p, c in pc.items()} for sw, pc in ports.items()}
    }


def ports_from_wire(d: Any) -> dict[str, dict[int, PortCount]]:
    """Parse a ``port_stats`` reply body."""
    return {
        sw: {int(p): _build(PortCount, c, f"switches.{sw}.{p}") for p, c in pc.items()}
        for sw, pc in d["switches"].items()
    }


def meters_to_wire(rows: list[MeterRow]) -> dict:
    """``meter_stats`` reply body."""
    return {"meters": [asdict(r) for r in rows]}


def meters_from_wire(d: Any) -> list[MeterRow]:
    """Parse a ``meter_stats`` reply body."""
    return [_build(MeterRow, r, f"meters[{i}]") for i, r in enumerate(d["meters"])]
