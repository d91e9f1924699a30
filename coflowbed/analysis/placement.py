"""Cross-check of the ECMP placement: the bytes each leaf-spine link carried in an
emulated run (the switches' port counters, ``counters.json``) against the bytes the
fluid model puts on it (every cross-leaf flow on its slot's spine, ``workload.ecmp``).

A link's ratio is switch bytes / model payload bytes: about 1.01 when the emulator
placed the flows where the model does (Ethernet, IP and TCP headers on jumbo frames,
and the ACKs of flows the other way), far from it when the switches chose other spines
(BMv2 hashes the 5-tuple).  Runs with link faults are not checked: flows move between
spines during the run, which one counter per link cannot tell apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from coflowbed.sim.fabric import ecmp_spine
from topo.plan import FabricPlan
from workload.dag import Coflow

MIN_MODEL_BYTES = 1_000_000  # links the model gives less are not compared (ACKs dominate)


@dataclass(frozen=True)
class LinkBytes:
    """One direction of a leaf-spine link: ``l1-s2`` (leaf 1 up to spine 2) or ``s2-l1``
    (spine 2 down to leaf 1); payload bytes the model puts on it, bytes its switch port
    sent, and their ratio (None below ``MIN_MODEL_BYTES`` of model bytes)."""

    link: str
    model_bytes: int
    switch_bytes: int
    ratio: float | None


def model_link_bytes(coflows: Iterable[Coflow], plan: FabricPlan) -> dict[str, int]:
    """Payload bytes per leaf-spine link direction under the model's placement."""
    leaf = {h.name: h.leaf for h in plan.hosts}
    out: Counter[str] = Counter()
    for cf in coflows:
        for f in cf.flows:
            a, b = leaf[f.src], leaf[f.dst]
            if a == b:
                continue
            s = ecmp_spine(f.src, f.dst, f.flow_id, plan.spines, plan.ecmp_seed) + 1
            out[f"l{a}-s{s}"] += f.bytes
            out[f"s{s}-l{b}"] += f.bytes
    return dict(out)


def switch_link_bytes(ports: Mapping[str, Any], plan: FabricPlan) -> dict[str, int]:
    """Bytes sent per leaf-spine link direction from ``counters.json``'s ``ports``
    (switch -> port -> counters)."""
    out = {}
    for a in range(1, plan.leaves + 1):
        for s in range(1, plan.spines + 1):
            out[f"l{a}-s{s}"] = int(ports[f"l{a}"][str(plan.uplink_port(s))]["tx_bytes"])
            out[f"s{s}-l{a}"] = int(ports[f"s{s}"][str(a)]["tx_bytes"])
    return out


def compare_links(
    coflows: Iterable[Coflow], plan: FabricPlan, ports: Mapping[str, Any]
) -> list[LinkBytes]:
    """Every leaf-spine link direction: model bytes, switch bytes and their ratio."""
    model, switch = model_link_bytes(coflows, plan), switch_link_bytes(ports, plan)
    return [
        LinkBytes(
            link,
            model.get(link, 0),
            sent,
            sent / model[link] if model.get(link, 0) >= MIN_MODEL_BYTES else None,
        )
        for link, sent in switch.items()
    ]


def ratio_range(rows: Iterable[LinkBytes]) -> tuple[float, float] | None:
    """(smallest, largest) ratio of the links compared (None: none was)."""
    ratios = [r.ratio for r in rows if r.ratio is not None]
    return (min(ratios), max(ratios)) if ratios else None
