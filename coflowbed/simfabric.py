"""A scenario's ``sim_fabric``: a fabric only the flow-level simulator runs, at the sizes
and link rates of a real cluster (thousands of GPUs, 40-400 Gbit/s), beyond what the
emulated ``fabric`` can be (9 x 9 hosts, 10 Gbit/s).  With it, the workload is placed on
its hosts and ``coflowbed run`` refuses the scenario (docs/sweeps.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from coflowbed.config import Section, choice, integer, number

KINDS = ("leafspine", "bigswitch")
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

    @property
    def leaves(self) -> int:
        """Leaves of a leaf-spine (0 for a big switch)."""
        return self.hosts // self.hosts_per_leaf if self.kind == "leafspine" else 0

    @property
    def core_gbps(self) -> float:
        """Rate of one leaf-spine link: given, or the leaf's host bandwidth spread over
        its spine links and divided by the oversubscription ratio."""
        if self.fabric_gbps is not None:
            return self.fabric_gbps
        return self.hosts_per_leaf * self.host_gbps / (self.spines * self.oversubscription)

    def sized(self, needed: int) -> SimFabric:
        """This fabric with enough hosts for ``needed`` (whole leaves), unless fixed."""
        if self.hosts:
            return self
        per = self.hosts_per_leaf if self.kind == "leafspine" else 1
        return replace(self, hosts=math.ceil(needed / per) * per)

    def host_names(self) -> list[str]:
        """Hosts leaf by leaf (``h<leaf>_<n>``, 1-based), or ``p0..`` on a big switch."""
        if self.kind == "bigswitch":
            return [f"p{i}" for i in range(self.hosts)]
        k = self.hosts_per_leaf
        return [f"h{lf}_{n}" for lf in range(1, self.leaves + 1) for n in range(1, k + 1)]

    def job_hosts(self) -> list[str]:
        """Hosts in the order the workload fills them: leaf by leaf (``packed``), or one
        leaf after another per host (``spread``: neighbours in a group on other leaves)."""
        names = self.host_names()
        if self.placement == "packed" or self.kind == "bigswitch":
            return names
        k = self.hosts_per_leaf
        return [names[leaf * k + n] for n in range(k) for leaf in range(self.leaves)]

    def model(self):
        """The simulator's fabric model (``coflowbed.sim`` BigSwitch or LeafSpine)."""
        from coflowbed.sim import BigSwitch, LeafSpine

        if self.kind == "bigswitch":
            return BigSwitch(tuple(self.host_names()), self.host_gbps * GBPS)
        return LeafSpine(
            tuple(self.host_names()),
            self.hosts_per_leaf,
            self.spines,
            self.host_gbps * GBPS,
            self.core_gbps * GBPS,
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
    )
    _check(sec, spec)
    sec.done()
    return spec


def _check(sec: Section, spec: SimFabric) -> None:
    """Key combinations that contradict each other."""
    if spec.fabric_gbps is not None and sec.has("oversubscription"):
        raise sec.fail("oversubscription", "give fabric_gbps or oversubscription, not both")
    if spec.kind == "leafspine" and spec.hosts % spec.hosts_per_leaf:
        raise sec.fail("hosts", f"{spec.hosts} hosts do not fill leaves of {spec.hosts_per_leaf}")
