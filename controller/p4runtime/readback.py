"""What a BMv2 switch holds, read back over P4Runtime (pure given a session).

Two uses: a restarted controller takes a switch over (``read_state`` -> the
``SwitchState`` the control plane adopts), and the orchestrator checks that a restart
left the tables as they were (``dump``: every entry of every table, action profile
and meter as one sorted list of lines, counters left out).

Values are compared as integers, never as bytes: a P4Runtime server may return the
canonical (shortest) byte string of a value written padded (P4Runtime 1.3, "Bytestrings").
A coflow rule's cookie travels in its entry's ``controller_metadata``, so a new
controller knows the tag incarnation of what it reads.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from finsy.proto import p4i, p4r

from controller.p4runtime.entities import EntityBuilder, N, rule_key_of
from controller.p4runtime.p4info import decode_uint
from controller.routing import leaf_groups
from controller.southbound.base import InstalledMeter, InstalledRule, SwitchState
from topo.plan import FabricPlan, SwitchPlan

BYTES_PER_KBIT = 125  # meter rates: kbit/s <-> byte/s (entities.meter_entry)


def match_text(m: p4r.FieldMatch) -> str:
    """One match field as ``id=value[/len]`` (integers)."""
    kind = m.WhichOneof("field_match_type")
    if kind == "exact":
        return f"{m.field_id}={decode_uint(m.exact.value)}"
    if kind == "lpm":
        return f"{m.field_id}={decode_uint(m.lpm.value)}/{m.lpm.prefix_len}"
    return f"{m.field_id}:{m.SerializeToString(deterministic=True).hex()}"


def action_text(a: p4r.Action) -> str:
    """An action as ``id(param=value,...)``."""
    params = ",".join(f"{p.param_id}={decode_uint(p.value)}" for p in sorted(a.params, key=_pid))
    return f"{a.action_id}({params})"


def _pid(p: p4r.Action.Param) -> int:
    """Sort key of an action parameter."""
    return p.param_id


def entry_text(te: p4r.TableEntry) -> str:
    """A table entry without its counters: table, match, action or group, priority,
    controller metadata (the cookie)."""
    match = " ".join(sorted(match_text(m) for m in te.match))
    act = te.action
    what = (
        f"group {act.action_profile_group_id}"
        if act.WhichOneof("type") == "action_profile_group_id"
        else action_text(act.action)
    )
    return (
        f"table {te.table_id} [{match}] -> {what} prio {te.priority} meta {te.controller_metadata}"
    )


def member_text(m: p4r.ActionProfileMember) -> str:
    """An action profile member."""
    return f"member {m.action_profile_id}/{m.member_id} -> {action_text(m.action)}"


def group_text(g: p4r.ActionProfileGroup) -> str:
    """An action profile group (its members sorted)."""
    members = ",".join(f"{x.member_id}x{x.weight}" for x in sorted(g.members, key=_mid))
    return f"group {g.action_profile_id}/{g.group_id} [{members}]"


def _mid(m: p4r.ActionProfileGroup.Member) -> int:
    """Sort key of a group member."""
    return m.member_id


def meter_text(m: p4r.MeterEntry) -> str:
    """A configured meter cell (rates in bytes/s, bursts in bytes)."""
    c = m.config
    return f"meter {m.meter_id}[{m.index.index}] cir {c.cir}/{c.cburst} pir {c.pir}/{c.pburst}"


def configured(m: p4r.MeterEntry) -> bool:
    """Whether a meter cell read back carries a rate (a reset cell has none)."""
    return m.HasField("config") and (m.config.cir > 0 or m.config.pir > 0)


def entity_text(e: p4r.Entity) -> str:
    """Any entity read back, as one line."""
    kind = e.WhichOneof("entity")
    if kind == "table_entry":
        return entry_text(e.table_entry)
    if kind == "action_profile_member":
        return member_text(e.action_profile_member)
    if kind == "action_profile_group":
        return group_text(e.action_profile_group)
    if kind == "meter_entry":
        return meter_text(e.meter_entry)
    raise ValueError(f"no text form for a {kind} entity")


def state_reads(b: EntityBuilder) -> list[p4r.Entity]:
    """One wildcard read of every table, the ECMP profile and the coflow meters."""
    ix, prof = b.ix, b.ix.id("action_profiles", N.ecmp_selector)
    return [
        p4r.Entity(table_entry=p4r.TableEntry(table_id=0)),
        p4r.Entity(action_profile_member=p4r.ActionProfileMember(action_profile_id=prof)),
        p4r.Entity(action_profile_group=p4r.ActionProfileGroup(action_profile_id=prof)),
        p4r.Entity(meter_entry=p4r.MeterEntry(meter_id=ix.id("meters", N.tag_meter))),
    ]


def dump_lines(entities: Iterable[p4r.Entity], p4info_digest: str) -> list[str]:
    """What a switch holds as sorted lines (unconfigured meter cells left out), the
    pipeline's P4Info digest first."""
    lines = [
        entity_text(e)
        for e in entities
        if not (e.WhichOneof("entity") == "meter_entry" and not configured(e.meter_entry))
    ]
    return [f"pipeline {p4info_digest}", *sorted(lines)]


def p4info_digest(p4info: p4i.P4Info | None) -> str:
    """sha256 of a P4Info (deterministic serialization); ``none`` without one."""
    if p4info is None:
        return "none"
    return hashlib.sha256(p4info.SerializeToString(deterministic=True)).hexdigest()[:16]


def is_coflow_state(b: EntityBuilder, line: str) -> bool:
    """Whether a dump line is a coflow rule or meter (what the policy changes)."""
    coflow = b.ix.id("tables", N.coflow)
    return line.startswith((f"table {coflow} ", "meter "))


def base_texts(b: EntityBuilder, plan: FabricPlan, sw: SwitchPlan) -> Counter[str]:
    """The static pipeline ``install_base`` writes on ``sw`` (groups left out: their
    members follow the links down), as entity lines."""
    out = Counter(entry_text(e) for e in b.route_entries(plan, sw))
    if sw.role == "leaf":
        out.update(member_text(m) for m in b.ecmp_members(plan))
        out.update(entry_text(b.ecmp_entry(d)) for d in leaf_groups(plan, sw.index))
    return out


def switch_state(
    b: EntityBuilder, plan: FabricPlan, sw: SwitchPlan, entities: Iterable[p4r.Entity]
) -> SwitchState:
    """``SwitchState`` of ``sw`` from what it returned for ``state_reads``."""
    coflow = b.ix.id("tables", N.coflow)
    base: Counter[str] = Counter()
    rules, meters, groups = [], [], {}
    for e in entities:
        kind = e.WhichOneof("entity")
        if kind == "table_entry" and e.table_entry.table_id == coflow:
            rules.append(installed_rule(b, e.table_entry))
        elif kind == "action_profile_group":
            g = e.action_profile_group
            groups[g.group_id] = tuple(sorted(m.member_id for m in g.members))
        elif kind == "meter_entry":
            if configured(e.meter_entry):
                meters.append(installed_meter(e.meter_entry))
        else:
            base[entity_text(e)] += 1
    foreign = _difference(base_texts(b, plan, sw), base)
    bad = [d for d, sp in groups.items() if not set(sp) <= set(range(1, plan.spines + 1))]
    if bad and not foreign:
        foreign = f"group {bad[0]} has a member that is no spine uplink"
    return SwitchState(not foreign, foreign, tuple(rules), tuple(meters), groups)


def _difference(want: Counter[str], have: Counter[str]) -> str:
    """'' when equal, else how the static entries differ."""
    missing, extra = want - have, have - want
    if not missing and not extra:
        return ""
    return f"static entries differ: {sum(missing.values())} missing, {sum(extra.values())} extra"


def installed_rule(b: EntityBuilder, te: p4r.TableEntry) -> InstalledRule:
    """A coflow-table entry read back (the cookie from its controller metadata)."""
    tag, in_port, dst = rule_key_of(b, te)
    act = te.action.action
    name = (
        N.set_level_metered
        if act.action_id == b.ix.id("actions", N.set_level_metered)
        else N.set_level
    )
    params = {p.param_id: decode_uint(p.value) for p in act.params}
    level = params[b.ix.param(name, "level").id]
    meter = params[b.ix.param(name, "meter_idx").id] if name == N.set_level_metered else None
    return InstalledRule(int(tag), int(in_port), dst, level, meter, te.controller_metadata)


def installed_meter(m: p4r.MeterEntry) -> InstalledMeter:
    """A configured meter cell read back (``entities.meter_entry`` inverted, rounded:
    BMv2 keeps rates as bytes per microsecond in a double, so a rate may come back a
    byte/s off)."""
    return InstalledMeter(
        m.index.index, round(m.config.cir / BYTES_PER_KBIT), round(m.config.cburst / BYTES_PER_KBIT)
    )
