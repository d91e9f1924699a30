"""Which spines a leaf may send through, given the leaf-spine links that are down (pure).

Every leaf holds one ECMP select group per other leaf (group id = that leaf's index):
traffic for leaf d's hosts from leaf l hashes over the spines s whose links l-s and
d-s are both up.  A link l-s going down therefore changes every group of leaf l (it
stops hashing onto the dead uplink) and group l of every other leaf (they stop sending
l's traffic through s, which can no longer reach l).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from topo.plan import FabricPlan

Link = tuple[int, int]  # (leaf index, spine index), 1-based
Groups = dict[int, tuple[int, ...]]  # destination leaf -> spines (1-based), in order


def link_name(link: Link) -> str:
    """``l1-s2``."""
    return f"l{link[0]}-s{link[1]}"


def link_of_port(plan: FabricPlan, switch: str, port: int) -> Link | None:
    """The leaf-spine link behind ``port`` of ``switch`` (None: a host port, or not a
    port of the plan)."""
    sw = plan.switch(switch)
    if sw.role == "leaf":
        spine = port - plan.hosts_per_leaf
        return (sw.index, spine) if 1 <= spine <= plan.spines else None
    return (port, sw.index) if 1 <= port <= plan.leaves else None


def leaf_groups(plan: FabricPlan, leaf: int, down: Iterable[Link] = ()) -> Groups:
    """Leaf ``leaf``'s ECMP groups: for every other leaf, the spines both can use."""
    dead = set(down)
    return {
        d: tuple(
            s for s in range(1, plan.spines + 1) if (leaf, s) not in dead and (d, s) not in dead
        )
        for d in range(1, plan.leaves + 1)
        if d != leaf
    }


def changed_groups(
    plan: FabricPlan, installed: Mapping[int, Groups], down: Iterable[Link]
) -> dict[int, Groups]:
    """Per leaf, the groups that differ from ``installed`` (leaf -> its groups) under
    ``down``; leaves with no change are left out."""
    dead = set(down)
    out = {}
    for leaf, groups in installed.items():
        want = leaf_groups(plan, leaf, dead)
        diff = {d: spines for d, spines in want.items() if groups.get(d) != spines}
        if diff:
            out[leaf] = diff
    return out


@dataclass(frozen=True)
class LinkEvent:
    """A leaf-spine link changed state, and what the controller did about it (times:
    CLOCK_MONOTONIC seconds, shared by every process of the machine).  ``rerouted_s``:
    every leaf in ``leaves`` confirmed its rewritten groups (barrier); ``leaves`` empty:
    no group had to change (a switch being installed gets the current groups then)."""

    link: str  # "l1-s1"
    down: bool
    detected_s: float
    reported_by: str  # "l1 port 3"
    rerouted_s: float | None = None
    leaves: tuple[str, ...] = ()
    writes: int = 0
    error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """JSON form (the control API's ``link_events`` op)."""
        return {**asdict(self), "leaves": list(self.leaves)}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> LinkEvent:
        """Back from ``to_wire``; ValueError on anything else."""
        try:
            return cls(**{**d, "leaves": tuple(d["leaves"])})
        except (TypeError, KeyError) as e:
            raise ValueError(f"not a link event: {e}") from None


@dataclass(frozen=True)
class SwitchEvent:
    """A switch ``disconnected``, ``connected`` again, or was ``ready`` (its whole state
    installed and confirmed), at ``t_s`` (CLOCK_MONOTONIC seconds)."""

    switch: str
    event: str
    t_s: float

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> SwitchEvent:
        try:
            return cls(**d)
        except TypeError as e:
            raise ValueError(f"not a switch event: {e}") from None


@dataclass(frozen=True)
class FabricEvents:
    """What the control API's ``fabric_events`` op answers: link changes and their
    reroutes, and switch (re)connections, oldest first."""

    links: tuple[LinkEvent, ...] = ()
    switches: tuple[SwitchEvent, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {
            "links": [e.to_wire() for e in self.links],
            "switches": [e.to_wire() for e in self.switches],
        }

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> FabricEvents:
        try:
            return cls(
                tuple(LinkEvent.from_wire(e) for e in d["links"]),
                tuple(SwitchEvent.from_wire(e) for e in d["switches"]),
            )
        except (KeyError, TypeError) as e:
            raise ValueError(f"not fabric events: {e}") from None
