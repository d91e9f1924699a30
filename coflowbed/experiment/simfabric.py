"""A scenario's ``sim_fabric``: a fabric only the flow-level simulator runs, at the sizes
and link rates of a real cluster (thousands of GPUs, 40-400 Gbit/s), beyond what the
emulated ``fabric`` can be (9 x 9 hosts, 10 Gbit/s).  With it, the workload is placed on
its hosts and ``coflowbed run`` refuses the scenario (docs/sweeps.md).

``kind: rail`` is rail-optimised: ``hosts`` servers of ``nics`` NICs (``host_gbps``
each), NIC i of every server on leaf i, ``spines`` joining the leaves; the job's hosts
are ``slots`` GPU slots per server, filled server by server (``packed``) or slot q of
every server first (``spread``) (workload.nics, docs/fabric.md).  ``kind: fattree`` is a
full-bisection k-ary fat-tree of ``hosts`` (the smallest even k that holds them), every
link at ``host_gbps`` (coflowbed.sim.fabric.FatTree)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from coflowbed.core.config import Section, choice, integer, number
from coflowbed.core.errors import UserError
from coflowbed.sim import BigSwitch, LeafSpine, Rail
from coflowbed.sim.fabric import FatTree, parse_rate
from workload import ecmp
from workload.nics import slot_name

KINDS = ("leafspine", "bigswitch", "rail", "fattree")
RAIL_ONLY = ("nics", "slots")
NOT_RAIL = ("hosts_per_leaf",)  # a rail leaf holds one NIC of every server
# a fat-tree's shape follows from its hosts, and every link runs at host_gbps
NOT_FATTREE = (*RAIL_ONLY, *NOT_RAIL, "spines", "fabric_gbps", "oversubscription", "placement")
PLACEMENTS = ("packed", "spread")  # consecutive job hosts on one leaf, or round-robin
GBPS = 1e9


@dataclass(frozen=True)
class SimFabric:
    """A simulator-only fabric; ``hosts`` 0 until the workload says how many it needs."""

    kind: str
    host_gbps: float
    hosts: int = 0
    hosts_per_leaf: int = 1
    spines: int = 1
    fabric_gbps: float | None = None
    oversubscription: float = 1.0
    placement: str = "packed"
    nics: int = 1  # NICs per server (rail)
    slots: int = 1  # job hosts (GPU slots) per server (rail)
    ecmp_seed: int = 0  # which ECMP placement (workload.ecmp; 0: the plain CRC-32)

    @property
    def leaves(self) -> int:
        """Leaves of a leaf-spine, rails of a rail fabric (0 for a big switch)."""
        if self.kind == "rail":
            return self.nics
        return self.hosts // self.hosts_per_leaf if self.kind == "leafspine" else 0

    @property
    def core_gbps(self) -> float:
        """Rate of one leaf-spine link: given, or the leaf's host bandwidth spread over
        its spine links and divided by the oversubscription ratio (a rail leaf has one
        NIC of every server)."""
        if self.fabric_gbps is not None:
            return self.fabric_gbps
        per_leaf = self.hosts if self.kind == "rail" else self.hosts_per_leaf
        return per_leaf * self.host_gbps / (self.spines * self.oversubscription)

    def sized(self, needed: int) -> SimFabric:
        """This fabric with enough hosts for ``needed`` (whole leaves), unless fixed."""
        if self.hosts:
            return self
        per = {"leafspine": self.hosts_per_leaf, "rail": self.slots}.get(self.kind, 1)
        if self.kind == "rail":
            return replace(self, hosts=math.ceil(needed / per))
        return replace(self, hosts=math.ceil(needed / per) * per)

    def host_names(self) -> list[str]:
        """Hosts leaf by leaf (``h<leaf>_<n>``, 1-based), ``p0..`` on a big switch, or
        rail servers ``h1..`` (their NIC endpoints are ``h<s>n<i>``)."""
        if self.kind == "bigswitch":
            return [f"p{i}" for i in range(self.hosts)]
        if self.kind == "fattree":
            return [f"t{i}" for i in range(self.hosts)]
        if self.kind == "rail":
            return [f"h{i}" for i in range(1, self.hosts + 1)]
        k = self.hosts_per_leaf
        return [f"h{lf}_{n}" for lf in range(1, self.leaves + 1) for n in range(1, k + 1)]

    def job_hosts(self) -> list[str]:
        """Hosts in the order the workload fills them: leaf by leaf (``packed``), or one
        leaf after another per host (``spread``: neighbours in a group on other leaves);
        on a rail fabric its servers' slots, server by server or slot by slot."""
        names = self.host_names()
        if self.kind == "rail":
            return self._rail_slots(names)
        if self.placement == "packed" or self.kind != "leafspine":
            return names
        k = self.hosts_per_leaf
        return [names[leaf * k + n] for n in range(k) for leaf in range(self.leaves)]

    def _rail_slots(self, servers: list[str]) -> list[str]:
        """Slot names of ``servers``: all of one server first (packed), or slot q of
        every server before slot q + 1 (spread)."""
        q = range(self.slots)
        if self.placement == "packed":
            return [slot_name(s, i, self.slots) for s in servers for i in q]
        return [slot_name(s, i, self.slots) for i in q for s in servers]

    def model(self):
        """The simulator's fabric model (``coflowbed.sim`` BigSwitch, LeafSpine, Rail, FatTree)."""
        if self.kind == "bigswitch":
            return BigSwitch(tuple(self.host_names()), self.host_gbps * GBPS)
        if self.kind == "fattree":
            k = fattree_k(self.hosts)
            return FatTree(
                tuple(self.host_names()), k, self.host_gbps * GBPS, ecmp_seed=self.ecmp_seed
            )
        if self.kind == "rail":
            names = self.host_names()
            rates = (self.host_gbps * GBPS, self.core_gbps * GBPS)
            return Rail.of(names, self.nics, self.spines, *rates, ecmp_seed=self.ecmp_seed)
        return LeafSpine(
            tuple(self.host_names()),
            self.hosts_per_leaf,
            self.spines,
            self.host_gbps * GBPS,
            self.core_gbps * GBPS,
            ecmp_seed=self.ecmp_seed,
        )


def parse_sim_fabric(sec: Section) -> SimFabric:
    """The ``sim_fabric`` section (strict)."""
    kind = sec.get("kind", "leafspine", choice(KINDS))
    spec = SimFabric(
        kind,
        sec.need("host_gbps", number(positive=True)),
        sec.get("hosts", 0, integer(1)),
        sec.get("hosts_per_leaf", 1, integer(1)),
        sec.get("spines", 1, integer(1)),
        sec.get("fabric_gbps", None, number(positive=True)),
        sec.get("oversubscription", 1.0, number(positive=True)),
        sec.get("placement", "packed", choice(PLACEMENTS)),
        sec.get("nics", 1, integer(1)),
        sec.get("slots", 1, integer(1)),
        sec.get("ecmp_seed", 0, integer(0, ecmp.MAX_SEED)),
    )
    _check(sec, spec)
    sec.done()
    return spec


def _check(sec: Section, spec: SimFabric) -> None:
    """Key combinations that contradict each other."""
    if spec.fabric_gbps is not None and sec.has("oversubscription"):
        raise sec.fail("oversubscription", "give fabric_gbps or oversubscription, not both")
    wrong = {"rail": NOT_RAIL, "fattree": NOT_FATTREE}.get(spec.kind, RAIL_ONLY)
    for key in wrong:
        if sec.has(key):
            raise sec.fail(key, f"not a key of a {spec.kind} sim_fabric")
    if spec.kind == "leafspine" and spec.hosts % spec.hosts_per_leaf:
        raise sec.fail("hosts", f"{spec.hosts} hosts do not fill leaves of {spec.hosts_per_leaf}")


def fattree_k(hosts: int) -> int:
    """The smallest even k whose fat-tree holds ``hosts`` hosts (k^3/4 of them)."""
    k = 2
    while k**3 // 4 < hosts:
        k += 2
    return k


# --fabric, the one grammar of every command that takes a fabric (docs/simulator.md):
#   KIND                              the scenario's (or run's) own fabric, simulated as KIND
#   [leafspine:]SxLxH[@RATE[/RATE]]   spines x leaves x hosts per leaf, the order of a
#                                     scenario's fabric keys; host rate / leaf-spine rate
#                                     (default: the host rate, or the sim_fabric's)
#   rail:HxNxS[@RATE[/RATE]]          hosts (servers) x NICs x spines (fabric kind rail's)
#   bigswitch:N[@RATE], fattree:N[@RATE]   N hosts
FLAG_SHAPES = {"leafspine": "SxLxH", "rail": "HxNxS", "bigswitch": "N", "fattree": "N"}
FLAG_GRAMMAR = (
    "KIND, or [leafspine:]SxLxH[@RATE[/RATE]] (spines x leaves x hosts per leaf), "
    "rail:HxNxS[@RATE[/RATE]] (hosts x NICs x spines), bigswitch:N[@RATE] or fattree:N[@RATE]"
)
SHAPE_KEYS = ("hosts", "hosts_per_leaf", "spines", "nics")  # a sim_fabric's sizes
_DIMS = re.compile(r"^[0-9]+(?:x[0-9]+)*$")


@dataclass(frozen=True)
class FabricFlag:
    """A parsed ``--fabric``: a ``kind`` alone (``dims`` empty), or a kind with its
    sizes in the grammar's order and optional rates (bit/s; ``core_bps`` the leaf-spine
    links')."""

    text: str
    kind: str
    dims: tuple[int, ...] = ()
    host_bps: float | None = None
    core_bps: float | None = None

    def error(self, reason: str) -> UserError:
        """A UserError naming the flag and what was written."""
        return UserError("--fabric", self.text, reason)

    def sim_fabric(self) -> SimFabric:
        """The fabric the flag describes, at its rate (which it must give)."""
        if not self.dims or self.host_bps is None:
            raise self.error(f"give its size and rate, e.g. {_example(self.kind)}")
        core = (self.core_bps or self.host_bps) / GBPS  # default: the host rate
        return replace(
            SimFabric(self.kind, self.host_bps / GBPS, fabric_gbps=core), **self._shape()
        )

    def _shape(self) -> dict[str, Any]:
        """The ``sim_fabric`` keys of the flag's sizes."""
        d = self.dims
        if self.kind == "leafspine":
            return {"hosts": d[1] * d[2], "hosts_per_leaf": d[2], "spines": d[0]}
        if self.kind == "rail":
            return {"hosts": d[0], "nics": d[1], "spines": d[2]}
        return {"hosts": d[0]}

    def emulated_overrides(self) -> dict[str, Any]:
        """Scenario overrides setting its emulated ``fabric`` to this one (rates, when
        given, in Mbit/s); UserError for a kind the emulator has not."""
        d = self.dims
        if self.kind == "leafspine":
            out: dict[str, Any] = {"kind": "leafspine", "spines": d[0], "leaves": d[1]}
            out |= {"hosts_per_leaf": d[2], "hosts": None, "nics": None}
        elif self.kind == "rail":
            out = {"kind": "rail", "hosts": d[0], "nics": d[1], "spines": d[2]}
            out |= {"leaves": None, "hosts_per_leaf": None}
        else:
            raise self.error(
                f"a scenario without sim_fabric is a leafspine or rail; write {self.kind} "
                "alone to simulate its hosts on one"
                if self.kind == "bigswitch"
                else f"a scenario without sim_fabric is a leafspine or rail, not {self.kind}"
            )
        rates = {"host_bw_mbps": self.host_bps, "fabric_bw_mbps": self.core_bps}
        out |= {k: v / 1e6 for k, v in rates.items() if v is not None}
        return {f"fabric.{k}": v for k, v in out.items()}

    def sim_overrides(self) -> dict[str, Any]:
        """Scenario overrides setting its ``sim_fabric`` to this one (without sizes, a
        bigswitch or fattree sized to the workload); keys of another kind removed, the
        rest (placement, ECMP seed, a rate the flag does not give) kept."""
        if not self.dims and self.kind in ("leafspine", "rail"):
            raise self.error(f"give the sim_fabric's sizes, e.g. {_example(self.kind)}")
        out: dict[str, Any] = {"kind": self.kind, **dict.fromkeys(SHAPE_KEYS)}
        out |= self._shape() if self.dims else {}
        if self.kind != "rail":
            out["slots"] = None
        if self.kind in ("bigswitch", "fattree"):
            out |= dict.fromkeys(("fabric_gbps", "oversubscription"))
        if self.kind == "fattree":
            out["placement"] = None
        if self.host_bps is not None:
            out["host_gbps"] = self.host_bps / GBPS
        if self.core_bps is not None:
            out |= {"fabric_gbps": self.core_bps / GBPS, "oversubscription": None}
        return {f"sim_fabric.{k}": v for k, v in out.items()}


def parse_fabric_flag(text: str, binary: bool = False) -> FabricFlag:
    """``--fabric`` as written (grammar above; rates' k/M/G binary with ``binary``, as
    a coflow-benchmark trace's model has them); UserError naming the flag, with the new
    spelling for the older ones (``simulate``'s ``leafspine:LxHxS:RATE``, spines last,
    is refused; ``bigswitch:NxRATE`` and ``rail:HxNxS:RATE`` are still read)."""
    kind, colon, rest = text.partition(":")
    if not colon and _DIMS.match(kind.partition("@")[0]):  # SxLxH: a leaf-spine
        kind, rest = "leafspine", text
    if kind not in FLAG_SHAPES:
        raise UserError("--fabric", text, f"expected {FLAG_GRAMMAR}")
    if not rest:
        return FabricFlag(text, kind)
    dims, rates = _split(kind, rest, text)
    want = FLAG_SHAPES[kind].count("x") + 1
    if not _DIMS.match(dims) or dims.count("x") + 1 != want or "0" in dims.split("x"):
        raise UserError("--fabric", text, f"expected {kind}:{FLAG_SHAPES[kind]}, sizes >= 1")
    host, _, core = rates.partition("/")
    try:
        host_bps = parse_rate(host, binary) if host else None
        core_bps = parse_rate(core, binary) if core else None
    except ValueError as exc:
        raise UserError("--fabric", text, str(exc)) from None
    if core_bps is not None and (host_bps is None or kind in ("bigswitch", "fattree")):
        raise UserError("--fabric", text, f"expected {kind}:{FLAG_SHAPES[kind]}@RATE")
    return FabricFlag(text, kind, tuple(int(x) for x in dims.split("x")), host_bps, core_bps)


def _split(kind: str, rest: str, text: str) -> tuple[str, str]:
    """The sizes and rates of ``rest`` (after ``KIND:``), reading the older spellings."""
    dims, at, rates = rest.partition("@")
    if at:
        return dims, rates
    if kind == "bigswitch" and "x" in rest and not _DIMS.match(rest):  # bigswitch:150x1Gbps
        n, _, rate = rest.partition("x")
        return n, rate
    dims, colon, rates = rest.partition(":")
    if colon and kind == "leafspine":
        parts = dims.split("x")
        new = f"leafspine:{'x'.join([parts[-1], *parts[:-1]])}@{rates}" if len(parts) == 3 else ""
        raise UserError(
            "--fabric",
            text,
            "the spines now come first, as in a scenario's fabric keys: "
            f"write {new or 'leafspine:SxLxH@RATE'} (spines x leaves x hosts per leaf)",
        )
    return dims, rates  # rail:HxNxS:RATE, the older spelling, in the same order


def _example(kind: str) -> str:
    """A complete ``--fabric`` of ``kind``."""
    return {
        "leafspine": "leafspine:2x4x2@100Gbps",
        "rail": "rail:4x2x2@100Gbps/200Gbps",
        "bigswitch": "bigswitch:150@1Gbps",
        "fattree": "fattree:16@100Gbps",
    }[kind]
