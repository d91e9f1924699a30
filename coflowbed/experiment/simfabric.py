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
from dataclasses import dataclass, replace

from coflowbed.core.config import Section, choice, integer, number
from coflowbed.sim import BigSwitch, LeafSpine, Rail
from coflowbed.sim.fabric import FatTree
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
