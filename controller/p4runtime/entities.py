"""Pure builders of the P4Runtime entities of the coflowbed pipeline (p4src/coflowbed.p4).

Mirrors the OpenFlow pipeline (controller/southbound/of_messages.py):

- routing: leaf l: own host /32 -> its port; rest of its own /24 -> drop (no loop via
  the spines); another leaf d's /24 -> ECMP group d whose members forward to the uplinks
  of the spines both leaves reach (``controller.routing``; one member per spine).
  Spine s: 10.0.l.0/24 -> port l.  Everything else: the table's default (drop).
- coflow table: one entry per TagRule (in_port, tag, dst /32 or wildcard) -> level
  [+ meter index]; meters are byte meters with CIR = PIR = rate, so RED = above rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from finsy.proto import p4r

from controller.coflow_table import MeterSpec, TagRule
from controller.p4runtime.p4info import P4InfoIndex, encode_uint, ip_to_int
from topo.plan import (
    LEAF_PREFIX_LEN,
    FabricPlan,
    SwitchPlan,
    leaf_subnet,
)


@dataclass(frozen=True)
class Names:
    """Names of the P4 objects the driver uses (checked against the P4Info in tests)."""

    coflow: str = "CoflowIngress.coflow"
    set_level: str = "CoflowIngress.set_level"
    set_level_metered: str = "CoflowIngress.set_level_metered"
    route: str = "CoflowIngress.route"
    forward: str = "CoflowIngress.forward"
    to_ecmp: str = "CoflowIngress.to_ecmp"
    drop: str = "CoflowIngress.drop"
    ecmp: str = "CoflowIngress.ecmp"
    ecmp_selector: str = "CoflowIngress.ecmp_selector"
    tag_meter: str = "CoflowIngress.tag_meter"
    meter_in: str = "CoflowIngress.meter_in"
    meter_drop: str = "CoflowIngress.meter_drop"
    tag_counter: str = "CoflowIngress.tag_counter"
    port_rx: str = "CoflowIngress.port_rx"
    port_tx: str = "CoflowEgress.port_tx"
    coflow_counter: str = "CoflowIngress.coflow_counter"


N = Names()


class EntityBuilder:
    """Builds entities with ids and widths from one P4Info."""

    def __init__(self, index: P4InfoIndex) -> None:
        """Builder over ``index``."""
        self.ix = index

    # --- primitives --------------------------------------------------------------------
    def exact(self, table: str, field: str, value: int) -> p4r.FieldMatch:
        """Exact match of ``field`` = ``value``."""
        f = self.ix.match_field(table, field)
        return p4r.FieldMatch(
            field_id=f.id, exact=p4r.FieldMatch.Exact(value=encode_uint(value, f.bitwidth))
        )

    def lpm(self, table: str, field: str, ip: str, prefix_len: int) -> p4r.FieldMatch:
        """LPM match of ``field`` on ``ip/prefix_len`` (host bits zeroed)."""
        f = self.ix.match_field(table, field)
        if not 0 < prefix_len <= f.bitwidth:
            raise ValueError(f"prefix length {prefix_len} invalid for {f.bitwidth} bits")
        mask = ((1 << prefix_len) - 1) << (f.bitwidth - prefix_len)
        return p4r.FieldMatch(
            field_id=f.id,
            lpm=p4r.FieldMatch.LPM(
                value=encode_uint(ip_to_int(ip) & mask, f.bitwidth), prefix_len=prefix_len
            ),
        )

    def action(self, name: str, **params: int) -> p4r.Action:
        """Action ``name`` with integer parameters."""
        return p4r.Action(
            action_id=self.ix.id("actions", name),
            params=[
                p4r.Action.Param(
                    param_id=(f := self.ix.param(name, k)).id, value=encode_uint(v, f.bitwidth)
                )
                for k, v in params.items()
            ],
        )

    def table_entry(
        self, table: str, matches, action: p4r.Action | None = None, group_id: int | None = None
    ) -> p4r.TableEntry:
        """Entry of ``table``: a direct action or an action-profile group."""
        ta = (
            p4r.TableAction(action=action)
            if group_id is None
            else p4r.TableAction(action_profile_group_id=group_id)
        )
        return p4r.TableEntry(table_id=self.ix.id("tables", table), match=list(matches), action=ta)

    # --- routing -----------------------------------------------------------------------
    def route_entries(self, plan: FabricPlan, sw: SwitchPlan) -> list[p4r.TableEntry]:
        """Routing table of ``sw`` (see module docstring)."""
        if sw.role == "spine":
            return [
                self.table_entry(
                    N.route,
                    [self.lpm(N.route, "dst", leaf_subnet(leaf), LEAF_PREFIX_LEN)],
                    self.action(N.forward, port=leaf),
                )
                for leaf in range(1, plan.leaves + 1)
            ]
        out = [
            self.table_entry(
                N.route,
                [self.lpm(N.route, "dst", h.ip, 32)],
                self.action(N.forward, port=h.leaf_port),
            )
            for h in plan.hosts
            if h.leaf == sw.index
        ]
        out.append(
            self.table_entry(
                N.route,
                [self.lpm(N.route, "dst", leaf_subnet(sw.index), LEAF_PREFIX_LEN)],
                self.action(N.drop),
            )
        )
        out += [
            self.table_entry(
                N.route,
                [self.lpm(N.route, "dst", leaf_subnet(d), LEAF_PREFIX_LEN)],
                self.action(N.to_ecmp, group=d),
            )
            for d in range(1, plan.leaves + 1)
            if d != sw.index
        ]
        return out

    def ecmp_members(self, plan: FabricPlan) -> list[p4r.ActionProfileMember]:
        """One member per spine: forward to that uplink (member id = spine index)."""
        prof = self.ix.id("action_profiles", N.ecmp_selector)
        return [
            p4r.ActionProfileMember(
                action_profile_id=prof,
                member_id=s,
                action=self.action(N.forward, port=plan.uplink_port(s)),
            )
            for s in range(1, plan.spines + 1)
        ]

    def ecmp_group(self, group: int, spines: tuple[int, ...]) -> p4r.ActionProfileGroup:
        """ECMP group ``group`` (traffic for leaf ``group``) over the members of ``spines``."""
        return p4r.ActionProfileGroup(
            action_profile_id=self.ix.id("action_profiles", N.ecmp_selector),
            group_id=group,
            max_size=self.ix.size("action_profiles", N.ecmp_selector),
            members=[p4r.ActionProfileGroup.Member(member_id=s, weight=1) for s in spines],
        )

    def ecmp_entry(self, group: int) -> p4r.TableEntry:
        """ECMP table: group key ``group`` -> the selector group of the same id."""
        return self.table_entry(N.ecmp, [self.exact(N.ecmp, "group", group)], group_id=group)

    # --- coflow table ------------------------------------------------------------------
    def coflow_match(self, tag: int, in_port: int, dst_ip: str | None) -> list:
        """Match of a coflow rule; a wildcard destination is an omitted LPM field."""
        m = [self.exact(N.coflow, "in_port", in_port), self.exact(N.coflow, "tag", tag)]
        if dst_ip is not None:
            m.append(self.lpm(N.coflow, "dst", dst_ip, 32))
        return m

    def coflow_entry(self, rule: TagRule, meter_id: int | None) -> p4r.TableEntry:
        """Entry of ``rule`` (its cookie as the entry's controller metadata);
        ``meter_id`` is its meter index (None: unmetered)."""
        act = (
            self.action(N.set_level, level=rule.level)
            if meter_id is None
            else self.action(N.set_level_metered, level=rule.level, meter_idx=meter_id)
        )
        entry = self.table_entry(
            N.coflow, self.coflow_match(rule.tag, rule.in_port, rule.dst_ip), act
        )
        entry.controller_metadata = rule.cookie  # read back by a restarted controller
        return entry

    def coflow_read(self) -> p4r.TableEntry:
        """Wildcard read of the coflow table with its direct counters."""
        return p4r.TableEntry(
            table_id=self.ix.id("tables", N.coflow), counter_data=p4r.CounterData()
        )

    def meter_entry(self, meter_id: int, spec: MeterSpec | None) -> p4r.MeterEntry:
        """Meter cell ``meter_id`` at ``spec``'s rate (kbit/s -> byte/s); None resets it."""
        cells = self.ix.size("meters", N.tag_meter)
        if not 0 <= meter_id < cells:
            raise ValueError(f"meter index {meter_id} outside 0..{cells - 1}")
        entry = p4r.MeterEntry(
            meter_id=self.ix.id("meters", N.tag_meter), index=p4r.Index(index=meter_id)
        )
        if spec is not None:
            rate, burst = spec.rate_kbps * 125, spec.burst_kbit * 125
            entry.config.CopyFrom(p4r.MeterConfig(cir=rate, cburst=burst, pir=rate, pburst=burst))
        return entry

    def counter_read(self, counter: str, index: int | None = None) -> p4r.CounterEntry:
        """Read of one cell (or all cells when ``index`` is None) of ``counter``."""
        entry = p4r.CounterEntry(counter_id=self.ix.id("counters", counter))
        if index is not None:
            entry.index.index = index
        return entry


def rule_key_of(builder: EntityBuilder, entry: p4r.TableEntry) -> tuple:
    """RuleKey ``(tag, in_port, dst_ip or None)`` of a coflow-table entry read back."""
    ix = builder.ix
    ids = {ix.match_field(N.coflow, n).id: n for n in ("in_port", "tag", "dst")}
    vals: dict[str, object] = {"dst": None}
    for m in entry.match:
        name = ids.get(m.field_id)
        if name == "dst":
            vals[name] = str(_int_to_ip(int.from_bytes(m.lpm.value, "big")))
        elif name is not None:
            vals[name] = int.from_bytes(m.exact.value, "big")
    return (vals["tag"], vals["in_port"], vals["dst"])


def _int_to_ip(value: int) -> str:
    """int -> dotted IPv4."""
    return ".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0))
