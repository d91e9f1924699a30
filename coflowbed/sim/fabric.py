"""Fabric models of the flow-level simulator: capacities of directed links and the
links each flow crosses.

Every model numbers its links 0..L-1 and appends one *dummy* link L of infinite
capacity, so that every flow's path is a fixed-width row of link indices (short paths
are padded with the dummy) and rate allocation can stay vectorised.

- ``BigSwitch``: a non-blocking switch; a flow crosses its source's uplink and its
  destination's downlink.
- ``LeafSpine``: host uplink, leaf->spine, spine->leaf, host downlink; a flow between
  hosts of one leaf only crosses the two host links.  The spine is chosen per flow by its
  ECMP slot (``workload.ecmp``, shared with the emulator) over the spines whose links
  to both leaves are up.
- ``Rail``: rail-optimised; every server has ``nics`` NICs, NIC i of every server on leaf
  (rail) i.  A flow between NICs of one rail crosses only that leaf; between rails it
  crosses a spine.  It is a leaf-spine whose "hosts" are the NIC endpoints
  (``<server>n<i>``, workload.nics), listed rail by rail.
- ``FatTree``: a full-bisection k-ary fat-tree (edge, aggregation, core), every link at
  one rate; ECMP per flow over the cores (or the aggregation switches inside a pod).

Link faults (``LinkFault``: scenario faults): a leaf-spine link that is down has
capacity 0 both ways (``capacity_with``), and flows move to their slot's spine among
the remaining ones (``paths(..., down)``), as the emulator's controller rewrites its
ECMP groups.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from controller.policies.base import FabricView
from topo.plan import FabricPlan
from workload import ecmp
from workload.marking import MAX_LEVELS
from workload.nics import endpoint_name

Down = frozenset[tuple[int, int]]  # leaf-spine links down: (leaf, spine), 0-based
NONE_DOWN: Down = frozenset()


@dataclass(frozen=True)
class LinkFault:
    """Leaf-spine ``links`` (0-based (leaf, spine)) down from ``at_s`` (simulated
    seconds, or after coflow ``after`` ends) for ``down_s`` (None: to the end)."""

    links: tuple[tuple[int, int], ...]
    at_s: float
    down_s: float | None = None
    after: str | None = None


def ecmp_spine(src: str, dst: str, flow_id: str, spines: int, seed: int = 0) -> int:
    """0-based spine of a flow when every spine is up: its slot (``workload.ecmp``:
    CRC-32 of ``src>dst>flow_id``, mixed with ``seed`` if one is given) modulo the spine
    count, the spine the emulator's leaf sends the flow's connection to.  (Unseeded,
    CRC-32 is linear, so flows whose keys differ in the same places share a spine always
    or never: docs/fabric.md, "Hermod's PP sum is the simulator's ECMP placement".)"""
    slot = ecmp.flow_slot(src, dst, flow_id, ecmp.slot_count(spines), seed)
    return ecmp.slot_spine(range(spines), slot)


@dataclass
class FabricModel:
    """Base: named hosts, per-link capacity (bit/s) with the dummy link last."""

    hosts: tuple[str, ...]
    capacity_bps: np.ndarray = field(init=False, repr=False)
    width: int = field(init=False, default=2)  # links per path row
    # whether ``paths`` reads the flow ids (ECMP hashing); the caller may pass () if not
    hashes_flow_ids: ClassVar[bool] = True
    description: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if len(set(self.hosts)) != len(self.hosts) or not self.hosts:
            raise ValueError("fabric hosts must be a non-empty list of distinct names")
        self._index = {h: i for i, h in enumerate(self.hosts)}

    @property
    def dummy(self) -> int:
        """Index of the padding link of infinite capacity."""
        return len(self.capacity_bps) - 1

    def host_indices(self, hosts: Sequence[str]) -> np.ndarray:
        """int64 position of every host in ``hosts`` (ValueError naming one missing)."""
        try:
            return np.fromiter(map(self._index.__getitem__, hosts), np.int64, len(hosts))
        except KeyError as exc:
            raise ValueError(
                f"host {exc.args[0]!r} is not on the fabric ({self.description})"
            ) from None

    def host_index(self, host: str) -> int:
        """Position of ``host``; ValueError naming it if the fabric lacks it."""
        try:
            return self._index[host]
        except KeyError:
            raise ValueError(f"host {host!r} is not on the fabric ({self.description})") from None

    def paths(
        self,
        src: Sequence[str],
        dst: Sequence[str],
        flow_ids: Sequence[str],
        down: Down = NONE_DOWN,
    ) -> np.ndarray:
        """int32 array [flows, width] of the links each flow crosses (avoiding the
        leaf-spine links ``down`` where another spine joins both leaves)."""
        raise NotImplementedError

    def capacity_with(self, down: Down) -> np.ndarray:
        """Link capacities with the leaf-spine links ``down`` at 0."""
        if down:
            raise ValueError(f"{self.description}: has no leaf-spine links to fail")
        return self.capacity_bps

    def view(self, levels: int = MAX_LEVELS) -> FabricView:
        """Host port capacities as policies see them."""
        raise NotImplementedError


@dataclass
class BigSwitch(FabricModel):
    """Non-blocking switch; host i's uplink is link i, its downlink link H+i."""

    hashes_flow_ids: ClassVar[bool] = False
    port_bps: float = 1e9

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.port_bps > 0:
            raise ValueError(f"port rate must be > 0 bit/s, got {self.port_bps}")
        n = len(self.hosts)
        self.capacity_bps = np.append(np.full(2 * n, float(self.port_bps)), np.inf)
        self.width = 2
        self.description = f"bigswitch {n} ports x {self.port_bps:g} bit/s"

    def paths(self, src, dst, flow_ids, down: Down = NONE_DOWN) -> np.ndarray:
        """Uplink of the source, downlink of the destination."""
        if down:
            raise ValueError(f"{self.description}: has no leaf-spine links to fail")
        s, d = self.host_indices(src), self.host_indices(dst)
        return np.stack([s, d + len(self.hosts)], axis=1).astype(np.int32)

    def view(self, levels: int = MAX_LEVELS) -> FabricView:
        """Every port at ``port_bps`` each way."""
        return FabricView.uniform(self.hosts, self.port_bps, levels)


@dataclass
class LeafSpine(FabricModel):
    """Leaf-spine fabric: ``hosts`` listed leaf by leaf, ``hosts_per_leaf`` each."""

    hosts_per_leaf: int = 1
    spines: int = 1
    host_bps: float = 1e9
    fabric_bps: float = 1e9
    # which ECMP placement (workload.ecmp; 0: the plain CRC-32); keyword only, so a
    # subclass's fields stay positional after the rates
    ecmp_seed: int = field(default=0, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        h, k, s = len(self.hosts), self.hosts_per_leaf, self.spines
        if k < 1 or s < 1 or h % k:
            raise ValueError(f"{h} hosts do not fill leaves of {k}; spines {s}")
        if not (self.host_bps > 0 and self.fabric_bps > 0):
            raise ValueError("link rates must be > 0 bit/s")
        self.leaves = h // k
        core = np.full(2 * self.leaves * s, float(self.fabric_bps))
        self.capacity_bps = np.concatenate([np.full(2 * h, float(self.host_bps)), core, [np.inf]])
        self.width = 4
        self.description = (
            f"leafspine {self.leaves} leaves x {k} hosts, {s} spines, "
            f"host {self.host_bps:g} / fabric {self.fabric_bps:g} bit/s{self._seed_text()}"
        )

    def _seed_text(self) -> str:
        """``, ECMP seed N`` for a seeded placement ('' for the plain one)."""
        return f", ECMP seed {self.ecmp_seed}" if self.ecmp_seed else ""

    def paths(self, src, dst, flow_ids, down: Down = NONE_DOWN) -> np.ndarray:
        """Host up, leaf->spine, spine->leaf, host down (the middle two are the dummy
        link for flows that stay on one leaf).  With links ``down``, a flow takes its
        slot's spine among those both its leaves reach (all spines if none: it then
        waits at 0)."""
        h, k, s = len(self.hosts), self.hosts_per_leaf, self.spines
        si, di = self.host_indices(src), self.host_indices(dst)
        sl, dl = si // k, di // k
        if down:
            live = {
                (a, b): [x for x in range(s) if (a, x) not in down and (b, x) not in down]
                for a in range(self.leaves)
                for b in range(self.leaves)
            }
            n, seed = ecmp.slot_count(s), self.ecmp_seed
            picks = (
                ecmp.slot_spine(live[a, b] or range(s), ecmp.flow_slot(x, y, f, n, seed))
                for a, b, x, y, f in zip(sl.tolist(), dl.tolist(), src, dst, flow_ids)
            )
            sp = np.fromiter(picks, np.int64, len(src))
        else:
            spines = (ecmp_spine(a, b, f, s, self.ecmp_seed) for a, b, f in zip(src, dst, flow_ids))
            sp = np.fromiter(spines, np.int64, len(src))
        up = 2 * h + sl * s + sp
        back = 2 * h + self.leaves * s + dl * s + sp
        local = sl == dl
        up[local] = self.dummy
        back[local] = self.dummy
        return np.stack([si, up, back, di + h], axis=1).astype(np.int32)

    def capacity_with(self, down: Down) -> np.ndarray:
        """Capacities with both directions of every link in ``down`` at 0."""
        cap = self.capacity_bps.copy()
        base, s = 2 * len(self.hosts), self.spines
        for leaf, spine in down:
            cap[base + leaf * s + spine] = 0.0  # leaf -> spine
            cap[base + self.leaves * s + leaf * s + spine] = 0.0  # spine -> leaf
        return cap

    def view(self, levels: int = MAX_LEVELS) -> FabricView:
        """Host links at ``host_bps``; the core is assumed non-blocking by policies."""
        return FabricView.uniform(self.hosts, self.host_bps, levels)

    @classmethod
    def from_plan(cls, plan: FabricPlan) -> LeafSpine:
        """The leaf-spine of a scenario's fabric plan (Mbit/s -> bit/s)."""
        return cls(
            tuple(plan.host_names()),
            plan.hosts_per_leaf,
            plan.spines,
            plan.host_bw_mbps * 1e6,
            plan.fabric_bw_mbps * 1e6,
            ecmp_seed=plan.ecmp_seed,
        )


@dataclass
class Rail(LeafSpine):
    """Rail-optimised fabric of ``servers`` with ``nics`` NICs each (build with
    ``Rail.of``); leaf i is rail i, ``hosts`` are the NIC endpoints rail by rail."""

    servers: tuple[str, ...] = ()
    nics: int = 1

    def __post_init__(self) -> None:
        """Check the hosts are the servers' endpoints; describe the fabric."""
        super().__post_init__()
        if self.hosts != rail_endpoints(self.servers, self.nics):
            raise ValueError("rail hosts must be the servers' NIC endpoints, rail by rail")
        self.description = (
            f"rail {len(self.servers)} servers x {self.nics} NICs, {self.spines} spines, "
            f"NIC {self.host_bps:g} / core {self.fabric_bps:g} bit/s{self._seed_text()}"
        )

    @classmethod
    def of(
        cls,
        servers: Sequence[str],
        nics: int,
        spines: int,
        nic_bps: float,
        core_bps: float,
        ecmp_seed: int = 0,
    ) -> Rail:
        """The rail fabric of ``servers`` (distinct names), ``nics`` rails, ``spines``."""
        if nics < 1 or not servers:
            raise ValueError(f"a rail fabric needs servers and >= 1 NIC, got {nics}")
        ends = rail_endpoints(servers, nics)
        args = (ends, len(servers), spines, nic_bps, core_bps, tuple(servers), nics)
        return cls(*args, ecmp_seed=ecmp_seed)


@dataclass
class FatTree(FabricModel):
    """Full-bisection k-ary fat-tree (Al-Fares et al. 2008): k pods of k/2 edge and k/2
    aggregation switches, (k/2)^2 cores, k/2 hosts per edge, every link at ``link_bps``
    (up to k^3/4 hosts; ``hosts`` fill edges in order, a prefix of a full tree).  A flow
    crosses host up, then edge->agg, agg->core, core->agg, agg->edge as far as its
    destination needs, then host down (padded with the dummy to 6 links).  ECMP picks
    the core of an inter-pod flow (which fixes its aggregation switches) and the
    aggregation switch of an intra-pod one by the flow's slot (``ecmp_spine``)."""

    k: int = 4
    link_bps: float = 1e9
    ecmp_seed: int = field(default=0, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        k, h = self.k, len(self.hosts)
        if k < 2 or k % 2 or h > k**3 // 4:
            raise ValueError(f"a fat-tree needs an even k >= 2 and <= k^3/4 hosts; k {k}, {h}")
        if not self.link_bps > 0:
            raise ValueError("link rates must be > 0 bit/s")
        half = k // 2
        self._tier = k * half * half  # links of one tier in one direction
        links = 2 * h + 4 * self._tier
        self.capacity_bps = np.concatenate([np.full(links, float(self.link_bps)), [np.inf]])
        self.width = 6
        self.description = (
            f"fattree k={k} ({h} hosts), {self.link_bps:g} bit/s per link{self._seed_text()}"
        )

    def _seed_text(self) -> str:
        """``, ECMP seed N`` for a seeded placement ('' for the plain one)."""
        return f", ECMP seed {self.ecmp_seed}" if self.ecmp_seed else ""

    def paths(self, src, dst, flow_ids, down: Down = NONE_DOWN) -> np.ndarray:
        """The links of each flow (see the class doc); no link faults."""
        if down:
            raise ValueError(f"{self.description}: link faults are not modelled")
        h, half, t = len(self.hosts), self.k // 2, self._tier
        si, di = self.host_indices(src), self.host_indices(dst)
        se, de = si // half, di // half  # global edge switch
        sp, dp = se // half, de // half  # pod
        n = half * half
        pick = (ecmp_spine(a, b, f, n, self.ecmp_seed) for a, b, f in zip(src, dst, flow_ids))
        core = np.fromiter(pick, np.int64, len(src))
        agg = np.where(sp == dp, core % half, core // half)  # core c joins agg c // half
        port = core % half  # the core's link on that aggregation switch
        e_up, a_up = 2 * h, 2 * h + t  # edge->agg, agg->core
        c_dn, a_dn = 2 * h + 2 * t, 2 * h + 3 * t  # core->agg, agg->edge
        rows = np.full((len(src), 6), self.dummy, dtype=np.int64)
        rows[:, 0], rows[:, 5] = si, di + h
        cross_edge, cross_pod = se != de, sp != dp
        rows[:, 1] = np.where(cross_edge, e_up + se * half + agg, self.dummy)
        rows[:, 4] = np.where(cross_edge, a_dn + de * half + agg, self.dummy)
        rows[:, 2] = np.where(cross_pod, a_up + (sp * half + agg) * half + port, self.dummy)
        rows[:, 3] = np.where(cross_pod, c_dn + (dp * half + agg) * half + port, self.dummy)
        return rows.astype(np.int32)

    def view(self, levels: int = MAX_LEVELS) -> FabricView:
        """Host links at ``link_bps``; the core is non-blocking for policies."""
        return FabricView.uniform(self.hosts, self.link_bps, levels)


def rail_endpoints(servers: Sequence[str], nics: int) -> tuple[str, ...]:
    """NIC endpoints of ``servers``, rail by rail (NIC 0 of every server first)."""
    return tuple(endpoint_name(s, i, nics) for i in range(nics) for s in servers)


_RATE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kMGT]?)(i?)bps$")


def parse_rate(text: str, binary: bool = False) -> float:
    """``"1Gbps"`` -> bit/s.  Prefixes k/M/G/T are decimal unless ``binary`` (the trace
    model's 1 Gbps = 2^30 bit/s); ``Gibps`` is always binary."""
    m = _RATE.match(text.strip())
    if not m:
        raise ValueError(f"rate {text!r} must look like 100Mbps, 1Gbps or 1Gibps")
    power = " kMGT".index(m.group(2) or " ")
    base = 1024 if (binary or m.group(3)) else 1000
    value = float(m.group(1)) * base**power
    if not value > 0:
        raise ValueError(f"rate {text!r} must be > 0")
    return value


def parse_fabric_spec(spec: str, binary: bool = False) -> BigSwitch | LeafSpine:
    """``bigswitch:<N>x<rate>``,
    ``leafspine:<leaves>x<hosts>x<spines>:<host rate>[/<fabric rate>]`` or
    ``rail:<servers>x<nics>x<spines>:<nic rate>[/<core rate>]``.
    Big-switch hosts are named ``p0..p<N-1>``, leaf-spine hosts ``h<l>_<n>`` (1-based),
    rail servers ``h1..h<N>`` with NIC endpoints ``h<s>n<i>`` (NIC i 0-based)."""
    kind, _, rest = spec.partition(":")
    if kind == "rail":
        return _parse_rail(spec, rest, binary)
    if kind == "bigswitch":
        n, sep, rate = rest.partition("x")
        if not sep or not n.isdigit() or int(n) < 1:
            raise ValueError(
                f"fabric {spec!r}: expected bigswitch:<ports>x<rate>, e.g. bigswitch:150x1Gbps"
            )
        return BigSwitch(tuple(f"p{i}" for i in range(int(n))), parse_rate(rate, binary))
    if kind == "leafspine":
        dims, _, rates = rest.partition(":")
        parts = dims.split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts) or not rates:
            raise ValueError(
                f"fabric {spec!r}: expected leafspine:<leaves>x<hosts>x<spines>:<rate>[/<rate>]"
            )
        leaves, hpl, spines = (int(p) for p in parts)
        host_rate, _, core_rate = rates.partition("/")
        hb = parse_rate(host_rate, binary)
        fb = parse_rate(core_rate, binary) if core_rate else hb
        hosts = tuple(f"h{lf}_{n}" for lf in range(1, leaves + 1) for n in range(1, hpl + 1))
        return LeafSpine(hosts, hpl, spines, hb, fb)
    raise ValueError(f"fabric {spec!r}: kind must be bigswitch, leafspine or rail")


def _parse_rail(spec: str, rest: str, binary: bool) -> Rail:
    """The ``<servers>x<nics>x<spines>:<nic rate>[/<core rate>]`` part of a rail spec."""
    dims, _, rates = rest.partition(":")
    parts = dims.split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts) or not rates:
        raise ValueError(
            f"fabric {spec!r}: expected rail:<servers>x<nics>x<spines>:<nic rate>[/<core rate>],"
            " e.g. rail:4x2x2:100Gbps/200Gbps"
        )
    servers, nics, spines = (int(p) for p in parts)
    nic_rate, _, core_rate = rates.partition("/")
    nb = parse_rate(nic_rate, binary)
    cb = parse_rate(core_rate, binary) if core_rate else nb
    names = tuple(f"h{i}" for i in range(1, servers + 1))
    return Rail.of(names, nics, spines, nb, cb)
