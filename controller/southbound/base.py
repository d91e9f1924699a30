"""The southbound interface: what the control plane needs from a switch driver.

The control plane (controller/control_plane.py) decides *what* each switch holds; a
driver (OpenFlow 1.3 via os-ken here; P4Runtime for BMv2) writes it and reads
counters.  Every write method returns only after the switch confirmed it (OpenFlow:
barrier reply) or raises ``SouthboundError``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from controller.coflow_table import LeafDiff
from controller.routing import Groups
from workload.marking import TAG_MAX


class SouthboundError(RuntimeError):
    """A switch refused a write, disconnected, or did not answer in time."""


@dataclass(frozen=True)
class RuleCounter:
    """Counters of one coflow-table rule (identified by its cookie)."""

    cookie: int
    bytes: int
    packets: int


@dataclass(frozen=True)
class PortCounter:
    """Counters of one switch port."""

    port: int
    rx_bytes: int
    tx_bytes: int
    rx_packets: int
    tx_packets: int


@dataclass(frozen=True)
class MeterCounter:
    """Counters of one meter: traffic in, and what its drop band dropped."""

    meter_id: int
    packets_in: int
    bytes_in: int
    drop_packets: int
    drop_bytes: int


@dataclass(frozen=True)
class InstalledRule:
    """A coflow-table rule as a switch holds it (read back after a controller restart)."""

    tag: int
    in_port: int
    dst_ip: str | None
    level: int
    meter_id: int | None
    cookie: int
    dscp: int | None = None  # the DSCP it matches (None: the tag's own, tag_dscp)


@dataclass(frozen=True)
class InstalledMeter:
    """A drop-band meter as a switch holds it."""

    meter_id: int
    rate_kbps: int
    burst_kbit: int


@dataclass(frozen=True)
class SwitchState:
    """What a switch holds, read back (``SwitchDriver.read_state``): whether its static
    pipeline is there entry for entry with nothing foreign beside it (``foreign`` says
    what differs when not), its coflow rules and meters, and its ECMP groups."""

    base_ok: bool
    foreign: str
    rules: tuple[InstalledRule, ...] = ()
    meters: tuple[InstalledMeter, ...] = ()
    groups: Groups = field(default_factory=dict)


# Called with (switch, cookie, bytes, packets) when a rule leaves a switch.
RemovedCallback = Callable[[str, int, int, int], None]


class SwitchDriver(ABC):
    """Writes pipelines and reads counters of the switches of one fabric plan."""

    # The largest coflow tag id the pipeline tells apart: tags sharing a DSCP
    # (``workload.marking.tag_dscp``) need rules that match the ingress port with it and
    # counters per rule; a pipeline counting per DSCP (BMv2's) keeps 1..TAG_MAX.
    max_tag: int = TAG_MAX

    @abstractmethod
    def connected(self) -> list[str]:
        """Names of the switches connected now."""

    @abstractmethod
    def install_base(self, switch: str, timeout: float) -> None:
        """Wipe ``switch`` and install its static pipeline (defaults, routing, ECMP)."""

    @abstractmethod
    def apply(self, diffs: Mapping[str, LeafDiff], timeout: float) -> int:
        """Write every diff (switch -> changes) in parallel; return after all are
        confirmed; the number of writes."""

    @abstractmethod
    def rule_counters(self, switch: str, timeout: float) -> list[RuleCounter]:
        """Counters of the coflow-table rules of ``switch``."""

    @abstractmethod
    def port_counters(self, switch: str, timeout: float) -> list[PortCounter]:
        """Counters of every port of ``switch``."""

    @abstractmethod
    def meter_counters(self, switch: str, timeout: float) -> list[MeterCounter]:
        """Counters of every meter of ``switch``."""

    def set_groups(self, groups: Mapping[str, Groups], timeout: float) -> int:
        """Rewrite ECMP groups (leaf -> {destination leaf: spines}) in place, the leaves
        in parallel; return after all are confirmed; the number of writes.  Drivers
        that cannot reroute raise SouthboundError."""
        raise SouthboundError(f"{type(self).__name__}: rerouting around a link is not supported")

    def read_state(self, switch: str, timeout: float) -> SwitchState:
        """What ``switch`` holds now (a restarted controller takes it over instead of
        wiping it).  Drivers that cannot read it back raise SouthboundError."""
        raise SouthboundError(f"{type(self).__name__}: reading a switch's state is not supported")
