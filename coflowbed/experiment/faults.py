"""Faults in scenarios: a leaf-spine link down (and up again), a switch restart, a
controller restart, at a time counted from the first release or after a coflow ends.

    faults:
      - {at_s: 1.5, link: [l1, s1], down_s: 2.0}   # a leaf-spine link down for 2 s
      - {at_s: 2.0, switch: s2, down_s: 1.0}        # a spine stops and restarts
      - {after: bulk, at_s: 0.5, controller: restart}

This module is pure: the scenario's ``faults`` list -> ``Fault`` specs (every bad entry
one ``UserError`` line, before anything starts), and the records of what happened
(``FaultRecord``: injected, detected, repaired, with times) -> ``faults.csv`` and the
``faults`` block of ``summary.json``.  The orchestrator's side (injecting them on the
executor's clock) is ``coflowbed.emulation.faults.ovs``.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from coflowbed.core.config import Section, number, string
from coflowbed.sim.fabric import LinkFault
from topo.plan import FabricPlan

KINDS = ("link", "switch", "controller")
CONTROLLER_ACTIONS = ("restart",)
CSV_NAME = "faults.csv"


@dataclass(frozen=True)
class Fault:
    """One fault of a scenario.  ``at_s`` counts from the first release, or from the end
    of coflow ``after`` when set.  ``down_s`` None: a link stays down to the end."""

    index: int
    kind: str  # one of KINDS
    target: str  # "l1-s1" (leaf-spine), "s2", "controller"
    at_s: float
    after: str | None = None
    down_s: float | None = None

    @property
    def leaf(self) -> str:
        """The leaf end of a link fault."""
        return self.target.split("-")[0]

    @property
    def spine(self) -> str:
        """The spine end of a link fault."""
        return self.target.split("-")[1]

    def links(self, plan: FabricPlan) -> list[tuple[int, int]]:
        """(leaf, spine) indices (1-based) of the leaf-spine links this fault takes down:
        one for a link, all of a switch's for a switch, none for the controller."""
        if self.kind == "link":
            return [(plan.switch(self.leaf).index, plan.switch(self.spine).index)]
        if self.kind == "switch":
            sw = plan.switch(self.target)
            if sw.role == "spine":
                return [(lf, sw.index) for lf in range(1, plan.leaves + 1)]
            return [(sw.index, s) for s in range(1, plan.spines + 1)]
        return []


def parse_faults(top: Section, plan: FabricPlan, coflow_ids: Iterable[str], timeout_s: float):
    """The scenario's ``faults`` list (empty when absent); UserError on a bad entry."""
    items = top.get("faults", [])
    if not isinstance(items, list):
        raise top.fail("faults", "must be a list of {at_s|after, link|switch|controller, ...}")
    ids = set(coflow_ids)
    faults = []
    for i, item in enumerate(items):
        fs = Section(item, top.source, f"faults[{i}]")
        faults.append(_parse_one(fs, i, plan, ids, timeout_s))
        fs.done()
    _check_overlaps(top, faults, plan)
    return tuple(faults)


def _parse_one(fs: Section, i: int, plan: FabricPlan, ids: set[str], timeout_s: float) -> Fault:
    kinds = [k for k in KINDS if fs.has(k)]
    for k in KINDS:
        fs.raw(k, None)  # mark read; a second kind is reported below, not as unknown
    if len(kinds) != 1:
        raise fs.fail(
            kinds[1] if kinds else "link", "needs exactly one of link, switch, controller"
        )
    kind = kinds[0]
    if not fs.has("at_s") and not fs.has("after"):
        raise fs.fail("at_s", "missing: a fault needs at_s (s from the first release) or after")
    at_s = fs.get("at_s", 0.0, number(lo=0))
    after = fs.get("after", None, string)
    if after is not None and after not in ids:
        raise fs.fail("after", f"unknown coflow {after!r}")
    down_s = fs.get("down_s", None, number(positive=True))
    if kind == "link":
        target = _link_target(fs, plan)
    elif kind == "switch":
        target = fs.get("switch", None, _switch(plan))
        if down_s is None:
            raise fs.fail("down_s", "missing: a switch restart needs down_s (s until it restarts)")
    else:
        action = fs.get("controller")
        if action not in CONTROLLER_ACTIONS:
            raise fs.fail(
                "controller", f"must be one of {', '.join(CONTROLLER_ACTIONS)}, got {action!r}"
            )
        if down_s is not None:
            raise fs.fail("down_s", "not for a controller restart (it is started again at once)")
        target = "controller"
    if at_s >= timeout_s:
        raise fs.fail("at_s", f"{at_s:g} s is not before the run's timeout_s ({timeout_s:g} s)")
    if after is None and down_s is not None and at_s + down_s >= timeout_s:
        raise fs.fail(
            "down_s",
            f"the fault ends at {at_s + down_s:g} s, not before timeout_s ({timeout_s:g} s)",
        )
    fault = Fault(i, kind, target, at_s, after, down_s)
    return fault


def _link_target(fs: Section, plan: FabricPlan) -> str:
    value = fs.get("link")
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise fs.fail("link", f"must be [leaf, spine], e.g. [l1, s1], got {value!r}")
    roles = {}
    for name in value:
        try:
            roles[plan.switch(name).role] = name
        except KeyError:
            if name in plan.host_names():
                raise fs.fail("link", f"{name} is a host: only leaf-spine links can fail") from None
            raise fs.fail(
                "link", f"unknown switch {name!r} (the fabric has {_names(plan)})"
            ) from None
    if set(roles) != {"leaf", "spine"}:
        raise fs.fail("link", f"{value[0]}-{value[1]} is not a leaf-spine link")
    return f"{roles['leaf']}-{roles['spine']}"


def _switch(plan: FabricPlan):
    def check(v: Any) -> str:
        if not isinstance(v, str) or v not in {sw.name for sw in plan.switches}:
            raise ValueError(f"unknown switch {v!r} (the fabric has {_names(plan)})")
        return v

    return check


def _names(plan: FabricPlan) -> str:
    return ", ".join(sw.name for sw in plan.switches)


def _disconnected(plan: FabricPlan, down: set[tuple[int, int]]) -> str | None:
    """'lA and lB' for the first pair of leaves that no spine joins with both links up
    (a leaf without any uplink is named alone), or None."""
    up = {
        lf: {s for s in range(1, plan.spines + 1) if (lf, s) not in down}
        for lf in range(1, plan.leaves + 1)
    }
    if plan.leaves == 1:
        return None
    for a, b in itertools.combinations(range(1, plan.leaves + 1), 2):
        if not up[a] & up[b]:
            return f"l{a} and l{b}"
    return None


def _check_overlaps(top: Section, faults: Sequence[Fault], plan: FabricPlan) -> None:
    """Faults with fixed times (no ``after``) on one element must not overlap, and the
    faults that last to the end (a link without ``down_s``) must not cut two leaves
    apart for good: their flows could never finish.  A cut that heals (a spine restart
    while a leaf's other uplink is down) is allowed: TCP retransmits once it heals."""
    timed = [f for f in faults if f.after is None and f.kind != "controller"]
    for a, b in itertools.combinations(timed, 2):
        if set(a.links(plan)) & set(b.links(plan)) and _overlap(a, b):
            raise top.fail(f"faults[{b.index}]", f"overlaps faults[{a.index}] on {a.target}")
    down: set[tuple[int, int]] = set()
    for f in faults:
        if f.down_s is None and f.kind == "link":
            down.update(f.links(plan))
            alone = _disconnected(plan, down)
            if alone:
                raise top.fail(
                    f"faults[{f.index}]",
                    f"{f.target} down to the end leaves {alone} without a path for good",
                )


def _end(f: Fault) -> float:
    return f.at_s + (f.down_s if f.down_s is not None else float("inf"))


def _overlap(a: Fault, b: Fault) -> bool:
    return a.at_s < _end(b) and b.at_s < _end(a)


def sim_faults(faults: Sequence[Fault], plan: FabricPlan) -> list[LinkFault]:
    """The faults the flow-level simulator models: every link a link or switch fault
    takes down (capacity 0, ECMP over the spines left).  A controller restart changes
    no capacity (switches keep forwarding in secure mode) and is left out."""
    return [
        LinkFault(_zero_based(f.links(plan)), f.at_s, f.down_s, f.after)
        for f in faults
        if f.links(plan)
    ]


def recorded_sim_faults(run_dir: Path, plan: FabricPlan) -> list[LinkFault]:
    """The link faults of an emulated run as they happened (``faults.csv``: the times
    they were injected and brought back), for the simulation of that run."""
    path = Path(run_dir) / CSV_NAME
    if not path.exists():
        return []
    out = []
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["kind"] == "controller" or not row["injected_s"]:
                continue
            f = Fault(int(row["index"]), row["kind"], row["target"], float(row["injected_s"]))
            at = float(row["injected_s"])
            down = float(row["up_s"]) - at if row["up_s"] else None
            out.append(LinkFault(_zero_based(f.links(plan)), at, down))
    return out


def _zero_based(links: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    return tuple((lf - 1, s - 1) for lf, s in links)


# --- records -------------------------------------------------------------------------


@dataclass
class FaultRecord:
    """What happened to one fault (seconds since the first release, the executor's time
    zero; None: did not happen).  ``detected_s``: the controller saw it (port status,
    disconnection); ``rerouted_s``: every leaf concerned confirmed its new ECMP groups (barrier), or
    for a restart, the element was back with its whole state; ``restored_*``: the
    same when it came back.  A controller restart: ``injected_s`` it was killed,
    ``up_s`` the new one was listening, ``resync_ms`` until it had taken every switch
    over, ``restored_s`` the scheduling connection resumed."""

    index: int
    kind: str
    target: str
    at_s: float
    after: str | None
    down_s: float | None
    injected_s: float | None = None  # the orchestrator issued it
    detected_s: float | None = None
    detect_ms: float | None = None  # injected -> detected
    rerouted_s: float | None = None
    reroute_ms: float | None = None  # detected -> every leaf concerned rerouted
    leaves_rerouted: str = ""  # leaves whose groups were rewritten, e.g. "l1 l2 l3 l4"
    up_s: float | None = None  # the orchestrator brought it back
    restored_s: float | None = None  # the controller saw it back and rewrote the groups
    restore_ms: float | None = None
    resync_ms: float | None = None  # a restart: brought back -> whole state installed/taken over
    tables_equal: bool | None = None  # a restart: every table after equals before
    detail: str = ""

    @classmethod
    def of(cls, f: Fault) -> FaultRecord:
        return cls(f.index, f.kind, f.target, f.at_s, f.after, f.down_s)


def write_csv(out_dir: Path, records: Sequence[FaultRecord]) -> None:
    """``faults.csv``: one row per fault (nothing when the scenario has none)."""
    if not records:
        return
    names = [f.name for f in fields(FaultRecord)]
    with (Path(out_dir) / CSV_NAME).open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names)
        w.writeheader()
        for r in records:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})


def summary_block(records: Sequence[FaultRecord]) -> list[Mapping[str, Any]] | None:
    """The ``faults`` list of summary.json (None when the scenario has none)."""
    return [asdict(r) for r in records] or None
