"""Taking a fabric over after a controller restart: what a leaf holds, read back by
the driver (``SwitchState``), as the ``LeafTable`` the control plane diffs against, and
the tag incarnations (epochs) its rule cookies carry.  Pure: no switch, no socket.

A restarted controller wipes nothing: it learns its desired entries from the old
controller's event log (``SchedulerService.restore``), the tables and epochs from the
switches, and writes only what differs, so a restart that found every write done
writes nothing and the switches' tables after it equal those before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.coflow_table import LeafTable, MeterKey, MeterSpec, TagRule, cookie_epoch
from controller.southbound.base import SwitchState
from topo.plan import FabricPlan
from workload.marking import tag_dscp


def adopted_table(plan: FabricPlan, leaf_name: str, state: SwitchState) -> LeafTable:
    """Leaf ``leaf_name``'s coflow rules and meters as it holds them.  Meter keys are
    rebuilt as ``leaf_state`` makes them (the sender host from the rule's port, the
    receiver from its destination address); a rule whose meter is missing gets a key
    no desired rule has (so it is rewritten), a meter no rule uses too (so it is
    deleted)."""
    leaf = plan.switch(leaf_name).index
    by_port = {h.leaf_port: h.name for h in plan.hosts if h.leaf == leaf}
    by_ip = {h.ip: h.name for h in plan.hosts}
    meters = {m.meter_id: m for m in state.meters}
    table, used = LeafTable(), set()
    for r in state.rules:
        key: MeterKey | None = None
        if r.meter_id is not None:
            src = by_port.get(r.in_port, "?")
            key = (
                ("host", r.tag, src)
                if r.dst_ip is None
                else ("pair", r.tag, src, by_ip.get(r.dst_ip, "?"))
            )
            m = meters.get(r.meter_id)
            if m is None or r.meter_id in used:
                key = ("missing", r.tag, r.in_port, r.dst_ip)
            else:
                table.meters[key] = MeterSpec(key, m.rate_kbps, m.burst_kbit)
                table.meter_ids[key] = r.meter_id
                used.add(r.meter_id)
        remap = None if r.dscp in (None, tag_dscp(r.tag)) else r.dscp
        rule = TagRule(r.tag, r.in_port, r.dst_ip, r.level, key, r.cookie, remap)
        table.rules[rule.key] = rule
    for mid, m in meters.items():
        if mid not in used:
            orphan = ("orphan", mid)
            table.meters[orphan] = MeterSpec(orphan, m.rate_kbps, m.burst_kbit)
            table.meter_ids[orphan] = mid
    return table


def adopted_epochs(
    tables: Iterable[LeafTable], tags: Iterable[int], next_epoch: int
) -> tuple[dict[int, int], int]:
    """(epoch per desired tag, the next free epoch): a tag's incarnation as the leaves'
    rule cookies carry it (the newest if they disagree: the others are rewritten), a new
    one for a tag no leaf holds yet."""
    seen: dict[int, int] = {}
    for t in tables:
        for r in t.rules.values():
            seen[r.tag] = max(seen.get(r.tag, 0), cookie_epoch(r.cookie))
    nxt = max([next_epoch, *(e + 1 for e in seen.values())])
    epochs: dict[int, int] = {}
    for tag in sorted(tags):
        if tag in seen:
            epochs[tag] = seen[tag]
        else:
            epochs[tag], nxt = nxt, nxt + 1
    return epochs, nxt


def groups_complete(plan: FabricPlan, leaf: int, groups: Mapping[int, tuple[int, ...]]) -> bool:
    """Leaf ``leaf`` holds one ECMP group for every other leaf (their buckets may differ:
    the control plane rewrites those around the links down now)."""
    return set(groups) == {d for d in range(1, plan.leaves + 1) if d != leaf}
