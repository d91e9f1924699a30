"""The fabric plan: names, dpids, ports, IP and MAC addresses of a leaf-spine fabric,
computed purely from its dimensions.  The Mininet ``Topo``, the controller and the
orchestrator all read this one plan, so they can never disagree on a port number.

Addressing (documented in docs/fabric.md):

- leaves ``l1..lL`` (dpid ``0x1000 + l``), spines ``s1..sS`` (dpid ``0x2000 + s``);
- hosts ``h<l><n>`` (leaf l, n-th host, both 1..9): IP ``10.0.<l>.<n>/16``,
  MAC ``00:00:00:00:<l>:<n>`` (hex);
- on leaf l: port n faces host h<l><n>, port ``H + s`` faces spine s;
- on spine s: port l faces leaf l.

Every interface of the fabric (both veth ends of every link) has the plan's ``mtu``
(default 9000: at 1500 the two cores of a test machine saturate long before the links).

Rail-optimised (``nics`` > 1): ``hosts_per_leaf`` servers ``h<n>``, each with ``nics``
NICs, NIC i on leaf i+1 (so ``leaves == nics``).  Every NIC is a ``HostPlan`` of its own
(an *endpoint*: ``h<n>n<i>``, IP ``10.0.<i+1>.<n>``, port n of its leaf), so routing sees
a plain leaf-spine; ``node``/``port`` say which Mininet host (the server) and which of
its interfaces (``h<n>-eth<i>``) it is.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import asdict, dataclass, field

MAX_LEAVES = 9
MAX_HOSTS_PER_LEAF = 9
MAX_SPINES = 8
MIN_MTU, MAX_MTU = 1500, 9000
DEFAULT_MTU = 9000
LEGACY_MTU = 1500  # what a recorded plan without "mtu" (older than the key) ran at
ETH_HEADER_BYTES = 14  # a frame on the wire (no FCS on a veth) is mtu + this
FABRIC_NET = "10.0.0.0"  # every host is on this /FABRIC_PREFIX_LEN
FABRIC_PREFIX_LEN = 16
LEAF_PREFIX_LEN = 24  # leaf l's hosts are 10.0.l.0/24


def host_ip(leaf: int, index: int) -> str:
    """IP address of the ``index``-th host of leaf ``leaf``."""
    return f"10.0.{leaf}.{index}"


def leaf_subnet(leaf: int) -> str:
    """Network address of leaf ``leaf``'s /LEAF_PREFIX_LEN."""
    return host_ip(leaf, 0)


def prefix_mask(prefix_len: int) -> str:
    """Dotted netmask of an IPv4 prefix length (16 -> ``255.255.0.0``)."""
    return str(ipaddress.IPv4Network(f"0.0.0.0/{prefix_len}").netmask)


@dataclass(frozen=True)
class HostPlan:
    """One host: name, leaf index, position on the leaf, addresses."""

    name: str
    leaf: int
    index: int
    ip: str
    mac: str
    node: str = ""  # Mininet host (namespace) holding this NIC; "" = ``name``
    port: int = 0  # its interface number on that host

    @property
    def host_node(self) -> str:
        """Mininet host whose interface this is."""
        return self.node or self.name

    @property
    def leaf_port(self) -> int:
        """Port number on its leaf."""
        return self.index


@dataclass(frozen=True)
class SwitchPlan:
    """One switch: name, role ("leaf"/"spine"), index and dpid."""

    name: str
    role: str
    index: int
    dpid: int

    @property
    def dpid_str(self) -> str:
        """16-hex-digit dpid, as Mininet and OVS spell it."""
        return f"{self.dpid:016x}"


@dataclass(frozen=True)
class LinkPlan:
    """One link between two nodes, with port numbers on both ends and its rate."""

    node1: str
    port1: int
    node2: str
    port2: int
    bw_mbps: float


@dataclass(frozen=True)
class FabricPlan:
    """A leaf-spine fabric: dimensions, rates and everything derived from them."""

    spines: int
    leaves: int
    hosts_per_leaf: int
    host_bw_mbps: float
    fabric_bw_mbps: float
    mtu: int = DEFAULT_MTU
    nics: int = 1  # NICs per server: > 1 is a rail-optimised fabric (leaves == nics)
    ecmp_seed: int = 0  # which ECMP placement (workload.ecmp; 0: the plain CRC-32)
    hosts: tuple[HostPlan, ...] = field(init=False)
    switches: tuple[SwitchPlan, ...] = field(init=False)
    links: tuple[LinkPlan, ...] = field(init=False)

    def __post_init__(self) -> None:
        _check_dims(self.spines, self.leaves, self.hosts_per_leaf)
        for key in ("host_bw_mbps", "fabric_bw_mbps"):
            if not getattr(self, key) > 0:
                raise ValueError(f"{key} must be > 0, got {getattr(self, key)}")
        check_mtu(self.mtu)
        if self.nics > 1 and self.nics != self.leaves:
            raise ValueError(
                f"a rail fabric has one leaf per NIC: nics {self.nics}, leaves {self.leaves}"
            )
        object.__setattr__(self, "hosts", tuple(self._make_hosts()))
        object.__setattr__(self, "switches", tuple(self._make_switches()))
        object.__setattr__(self, "links", tuple(self._make_links()))

    def _make_hosts(self):
        for lf in range(1, self.leaves + 1):
            for n in range(1, self.hosts_per_leaf + 1):
                mac = f"00:00:00:00:{lf:02x}:{n:02x}"
                if self.nics == 1:
                    yield HostPlan(f"h{lf}{n}", lf, n, host_ip(lf, n), mac)
                else:
                    yield HostPlan(f"h{n}n{lf - 1}", lf, n, host_ip(lf, n), mac, f"h{n}", lf - 1)

    def _make_switches(self):
        for lf in range(1, self.leaves + 1):
            yield SwitchPlan(f"l{lf}", "leaf", lf, 0x1000 + lf)
        for s in range(1, self.spines + 1):
            yield SwitchPlan(f"s{s}", "spine", s, 0x2000 + s)

    def _make_links(self):
        for h in self.hosts:
            yield LinkPlan(h.host_node, h.port, f"l{h.leaf}", h.leaf_port, self.host_bw_mbps)
        for lf in range(1, self.leaves + 1):
            for s in range(1, self.spines + 1):
                yield LinkPlan(f"l{lf}", self.uplink_port(s), f"s{s}", lf, self.fabric_bw_mbps)

    @property
    def frame_bytes(self) -> int:
        """Bytes of a full-size Ethernet frame at this plan's MTU."""
        return self.mtu + ETH_HEADER_BYTES

    def uplink_port(self, spine: int) -> int:
        """Port number on every leaf that faces spine ``spine`` (1-based)."""
        return self.hosts_per_leaf + spine

    def host(self, name: str) -> HostPlan:
        """The host called ``name``; KeyError naming it otherwise."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"unknown host {name!r}")

    def host_names(self) -> list[str]:
        """Names of all hosts (rail: NIC endpoints), leaf by leaf."""
        return [h.name for h in self.hosts]

    def server_names(self) -> list[str]:
        """Mininet hosts (rail: the servers), in order of first appearance."""
        return list(dict.fromkeys(h.host_node for h in self.hosts))

    def switch(self, name: str) -> SwitchPlan:
        """The switch called ``name``."""
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(f"unknown switch {name!r}")

    def to_dict(self) -> dict:
        """JSON-ready dict with the dimensions and everything derived."""
        d = {
            k: getattr(self, k)
            for k in ("spines", "leaves", "hosts_per_leaf", "host_bw_mbps", "fabric_bw_mbps", "mtu")
        }
        if self.nics > 1:
            d["nics"] = self.nics
        if self.ecmp_seed:
            d["ecmp_seed"] = self.ecmp_seed
        d["hosts"] = [asdict(h) for h in self.hosts]
        d["switches"] = [asdict(s) for s in self.switches]
        d["links"] = [asdict(k) for k in self.links]
        return d

    def to_json(self) -> str:
        """The plan as JSON text (the controller reads this)."""
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_dict(cls, d: dict) -> FabricPlan:
        """Rebuild a plan from ``to_dict`` output (derived parts are recomputed); a
        dict without ``mtu`` was recorded before the key existed, at LEGACY_MTU."""
        return cls(
            d["spines"],
            d["leaves"],
            d["hosts_per_leaf"],
            d["host_bw_mbps"],
            d["fabric_bw_mbps"],
            d.get("mtu", LEGACY_MTU),
            d.get("nics", 1),
            d.get("ecmp_seed", 0),
        )


def check_mtu(mtu: int) -> None:
    """ValueError unless ``mtu`` is an integer in MIN_MTU..MAX_MTU."""
    if not isinstance(mtu, int) or isinstance(mtu, bool) or not MIN_MTU <= mtu <= MAX_MTU:
        raise ValueError(f"mtu must be an integer in {MIN_MTU}..{MAX_MTU}, got {mtu!r}")


def _check_dims(spines: int, leaves: int, hosts_per_leaf: int) -> None:
    """ValueError naming the first dimension out of its range."""
    for key, val, hi in (
        ("spines", spines, MAX_SPINES),
        ("leaves", leaves, MAX_LEAVES),
        ("hosts_per_leaf", hosts_per_leaf, MAX_HOSTS_PER_LEAF),
    ):
        if not isinstance(val, int) or isinstance(val, bool) or not 1 <= val <= hi:
            raise ValueError(f"{key} must be an integer in 1..{hi}, got {val!r}")
