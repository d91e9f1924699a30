"""The coflow table as data: what each leaf must hold for a set of tag entries, and the
minimal changes from what it holds now.  Pure (no switch, no socket): the OpenFlow and
P4Runtime drivers both translate these rules, meters and diffs.

Per leaf and per *sender host* on it (every host, or the entry's ``senders``), a tag
entry gives one rule
``(in_port = host port, DSCP = tag) -> DSCP := 56 + level [, meter]``; with
``flow_rates`` also one more specific rule per listed (src, dst) pair that matches the
destination IP too and uses the pair's meter.  ``rate_mbps`` limits each sender host's
aggregate of the tag (one meter per (tag, host)); for pairs listed in ``flow_rates``
the pair meter applies instead (one meter per OpenFlow rule).

Rule cookies are ``(epoch << 12) | tag`` (``rule_cookie``, ``cookie_tag``,
``cookie_epoch``): the epoch is the tag's incarnation (a new one after every clear), so
counters of removed rules can be credited to the right tag.

A rule matches the DSCP its sender marks the tag with: ``tag_dscp(tag)`` unless the
entry's ``dscps`` remaps that sender (``controller.tags``); two tags may share a DSCP on
different senders.  ``wire_clash`` finds two entries that would land on the same (port,
DSCP) of a leaf.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from topo.plan import FabricPlan
from workload.marking import TAG_ID_MAX, TAG_MAX, TAG_MIN, check_level, check_tag, tag_dscp

ENTRY_KEYS = {"tag", "level", "rate_mbps", "flow_rates", "senders", "dscps"}
FLOW_RATE_KEYS = {"src", "dst", "rate_mbps"}
COOKIE_TAG_BITS = 12  # low bits of a rule cookie: the tag (TAG_ID_MAX < 4096)
assert TAG_ID_MAX < 1 << COOKIE_TAG_BITS, "a tag id must fit in a rule cookie's low bits"
DEFAULT_BURST_S = 0.25  # TCP needs a burst >= 0.25 s of the rate (docs/fabric.md)


@dataclass(frozen=True)
class FlowRate:
    """A meter on one (sender, receiver) pair of a tag."""

    src: str
    dst: str
    rate_mbps: float


@dataclass(frozen=True)
class TagEntry:
    """What the control API's ``set`` asks for one tag."""

    tag: int
    level: int
    rate_mbps: float | None = None
    flow_rates: tuple[FlowRate, ...] = ()
    senders: frozenset[str] | None = None  # hosts that send with this tag (None: all)
    dscps: tuple[tuple[str, int], ...] = ()  # (sender, DSCP) where not tag_dscp(tag)

    def dscp_of(self, host: str) -> int:
        """The DSCP ``host`` marks this tag with."""
        return dict(self.dscps).get(host, tag_dscp(self.tag))

    def remap_of(self, host: str) -> int | None:
        """``host``'s DSCP for this tag if it is not the tag's own, else None (the form
        ``TagRule.dscp`` takes, so rules compare alike however they were built)."""
        return dict(self.dscps).get(host)

    def to_wire(self) -> dict:
        """The entry as the control API's ``set`` carries it (``parse_entry`` reads it
        back); ``dscps`` only when some sender is remapped (so older logs read alike)."""
        pairs = [{"src": p.src, "dst": p.dst, "rate_mbps": p.rate_mbps} for p in self.flow_rates]
        out: dict[str, Any] = {
            "tag": self.tag,
            "level": self.level,
            "rate_mbps": self.rate_mbps,
            "flow_rates": pairs or None,
            "senders": None if self.senders is None else sorted(self.senders),
        }
        if self.dscps:
            out["dscps"] = dict(self.dscps)
        return out


MeterKey = tuple  # ("host", tag, host) or ("pair", tag, src, dst)
RuleKey = tuple  # (tag, in_port, dst_ip or None)


@dataclass(frozen=True)
class MeterSpec:
    """A drop-band meter: rate in kbit/s and burst in kbit."""

    key: MeterKey
    rate_kbps: int
    burst_kbit: int


@dataclass(frozen=True)
class TagRule:
    """One coflow-table rule on a leaf (see module docstring)."""

    tag: int
    in_port: int
    dst_ip: str | None
    level: int
    meter: MeterKey | None
    cookie: int
    dscp: int | None = None  # the DSCP matched when not the tag's own (None: tag_dscp(tag))

    @property
    def wire_dscp(self) -> int:
        """The DSCP this rule matches."""
        return tag_dscp(self.tag) if self.dscp is None else self.dscp

    @property
    def key(self) -> RuleKey:
        """Identity of the rule in the switch (its match)."""
        return (self.tag, self.in_port, self.dst_ip)


def _positive_rate(value, where: str) -> float:
    """``value`` as a float > 0, else ValueError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{where}: must be a number > 0, got {value!r}")
    return float(value)


def _check_keys(d, allowed: set[str], required: set[str], where: str) -> None:
    """Reject non-dicts, unknown keys and missing keys with a one-line error."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: must be an object, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key (allowed: {sorted(allowed)})")
    for key in sorted(required - set(d)):
        raise ValueError(f"{where}.{key}: missing")


def _parse_flow_rate(d, plan: FabricPlan, where: str) -> FlowRate:
    """One ``flow_rates`` item."""
    _check_keys(d, FLOW_RATE_KEYS, FLOW_RATE_KEYS, where)
    names = set(plan.host_names())
    for key in ("src", "dst"):
        if d[key] not in names:
            raise ValueError(f"{where}.{key}: unknown host {d[key]!r}")
    if d["src"] == d["dst"]:
        raise ValueError(f"{where}: src and dst are the same host {d['src']!r}")
    return FlowRate(d["src"], d["dst"], _positive_rate(d["rate_mbps"], f"{where}.rate_mbps"))


def parse_entry(d, plan: FabricPlan, levels: int, where: str) -> TagEntry:
    """Validate one ``set`` entry (unknown keys rejected) into a TagEntry."""
    _check_keys(d, ENTRY_KEYS, {"tag", "level"}, where)
    try:
        tag, level = check_tag(d["tag"]), check_level(d["level"], levels)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    rate = d.get("rate_mbps")
    rate = None if rate is None else _positive_rate(rate, f"{where}.rate_mbps")
    raw = d.get("flow_rates") or []
    if not isinstance(raw, list):
        raise ValueError(f"{where}.flow_rates: must be a list or null")
    pairs = tuple(_parse_flow_rate(x, plan, f"{where}.flow_rates[{i}]") for i, x in enumerate(raw))
    if len({(p.src, p.dst) for p in pairs}) != len(pairs):
        raise ValueError(f"{where}.flow_rates: a (src, dst) pair appears twice")
    senders = _parse_senders(d.get("senders"), plan, where)
    return TagEntry(tag, level, rate, pairs, senders, _parse_dscps(d.get("dscps"), plan, where))


def _parse_dscps(raw, plan: FabricPlan, where: str) -> tuple[tuple[str, int], ...]:
    """Optional ``dscps``: {sender host: DSCP 1..55} for remapped senders."""
    if raw is None:
        return ()
    names = set(plan.host_names())
    if not isinstance(raw, dict) or not all(
        h in names and type(d) is int and TAG_MIN <= d <= TAG_MAX for h, d in raw.items()
    ):
        raise ValueError(
            f"{where}.dscps: must map host names of the fabric to DSCPs {TAG_MIN}..{TAG_MAX}"
        )
    return tuple(sorted(raw.items()))


def _parse_senders(raw, plan: FabricPlan, where: str) -> frozenset[str] | None:
    """Optional ``senders``: the only hosts that get rules for the tag (fewer writes)."""
    if raw is None:
        return None
    names = set(plan.host_names())
    if not isinstance(raw, list) or not all(isinstance(h, str) and h in names for h in raw):
        raise ValueError(f"{where}.senders: must be a list of host names of the fabric or null")
    return frozenset(raw)


def parse_entries(raw, plan: FabricPlan, levels: int) -> list[TagEntry]:
    """Validate the ``entries`` list of a ``set`` request; one tag at most once."""
    if not isinstance(raw, list):
        raise ValueError("entries: must be a list")
    entries = [parse_entry(d, plan, levels, f"entries[{i}]") for i, d in enumerate(raw)]
    tags = [e.tag for e in entries]
    dup = sorted({t for t in tags if tags.count(t) > 1})
    if dup:
        raise ValueError(f"entries: tag {dup[0]} appears more than once")
    return entries


def parse_tags(raw) -> list[int]:
    """Validate the ``tags`` list of a ``clear`` request."""
    if not isinstance(raw, list):
        raise ValueError("tags: must be a list")
    try:
        return [check_tag(t) for t in raw]
    except ValueError as e:
        raise ValueError(f"tags: {e}") from None


def wire_clash(entries: Iterable[TagEntry], plan: FabricPlan) -> str | None:
    """A one-line reason if two of ``entries`` share a DSCP on a sending host (their
    rules would be one match on that host's leaf port), else None."""
    seen: dict[tuple[str, int], int] = {}
    everyone = frozenset(plan.host_names())
    for e in sorted(entries, key=lambda e: e.tag):
        for h in sorted(everyone if e.senders is None else e.senders):
            other = seen.setdefault((h, e.dscp_of(h)), e.tag)
            if other != e.tag:
                return f"tags {other} and {e.tag} share DSCP {e.dscp_of(h)} on host {h}"
    return None


def meter_spec(key: MeterKey, rate_mbps: float, burst_s: float) -> MeterSpec:
    """Meter of ``rate_mbps`` with a burst of ``burst_s`` seconds of that rate."""
    kbps = max(1, int(round(rate_mbps * 1000)))
    return MeterSpec(key, kbps, max(1, int(round(kbps * burst_s))))


def rule_cookie(tag: int, epoch: int) -> int:
    """Cookie of the rules of incarnation ``epoch`` of ``tag``."""
    return (epoch << COOKIE_TAG_BITS) | check_tag(tag)


def cookie_tag(cookie: int) -> int:
    """The tag a rule cookie belongs to."""
    return cookie & ((1 << COOKIE_TAG_BITS) - 1)


def cookie_epoch(cookie: int) -> int:
    """The tag incarnation a rule cookie belongs to."""
    return cookie >> COOKIE_TAG_BITS


def leaf_state(
    plan: FabricPlan,
    leaf: int,
    entries: Iterable[TagEntry],
    epochs: Mapping[int, int],
    burst_s: float = DEFAULT_BURST_S,
) -> tuple[dict[RuleKey, TagRule], dict[MeterKey, MeterSpec]]:
    """Rules and meters leaf ``leaf`` must hold for ``entries``."""
    rules: dict[RuleKey, TagRule] = {}
    meters: dict[MeterKey, MeterSpec] = {}
    hosts = [h for h in plan.hosts if h.leaf == leaf]
    for e in entries:
        cookie = rule_cookie(e.tag, epochs[e.tag])
        for h in hosts:
            if e.senders is not None and h.name not in e.senders:
                continue
            mkey: MeterKey | None = None
            if e.rate_mbps is not None:
                mkey = ("host", e.tag, h.name)
                meters[mkey] = meter_spec(mkey, e.rate_mbps, burst_s)
            rule = TagRule(e.tag, h.leaf_port, None, e.level, mkey, cookie, e.remap_of(h.name))
            rules[rule.key] = rule
        for fr in e.flow_rates:
            src = plan.host(fr.src)
            if src.leaf != leaf:
                continue
            mkey = ("pair", e.tag, fr.src, fr.dst)
            meters[mkey] = meter_spec(mkey, fr.rate_mbps, burst_s)
            dst = plan.host(fr.dst).ip
            rule = TagRule(e.tag, src.leaf_port, dst, e.level, mkey, cookie, e.remap_of(fr.src))
            rules[rule.key] = rule
    return rules, meters


@dataclass
class LeafDiff:
    """Changes that take a leaf from its installed state to the desired one, in the
    order a driver must apply them (meters before the rules that use them, rules
    before the meters they stop using).  Meter ids are resolved for the driver."""

    meters_add: list[tuple[int, MeterSpec]] = field(default_factory=list)
    meters_mod: list[tuple[int, MeterSpec]] = field(default_factory=list)
    rules_add: list[TagRule] = field(default_factory=list)
    rules_mod: list[TagRule] = field(default_factory=list)
    rules_del: list[TagRule] = field(default_factory=list)
    meters_del: list[tuple[int, MeterSpec]] = field(default_factory=list)
    meter_ids: dict[MeterKey, int] = field(default_factory=dict)  # after applying

    def count(self) -> int:
        """Number of writes in this diff."""
        return sum(
            len(x)
            for x in (
                self.meters_add,
                self.meters_mod,
                self.rules_add,
                self.rules_mod,
                self.rules_del,
                self.meters_del,
            )
        )


@dataclass
class LeafTable:
    """What one leaf holds now (rules, meters and their ids)."""

    rules: dict[RuleKey, TagRule] = field(default_factory=dict)
    meters: dict[MeterKey, MeterSpec] = field(default_factory=dict)
    meter_ids: dict[MeterKey, int] = field(default_factory=dict)

    def meter_id(self, key: MeterKey | None) -> int | None:
        """Installed or planned id of meter ``key``."""
        return None if key is None else self.meter_ids[key]

    def _allocate(self, keys: Iterable[MeterKey]) -> dict[MeterKey, int]:
        """Ids for new meter keys: the lowest ids not used by installed meters."""
        used, out, nxt = set(self.meter_ids.values()), {}, 1
        for key in keys:
            while nxt in used:
                nxt += 1
            out[key] = nxt
            used.add(nxt)
        return out

    def diff(
        self, rules: Mapping[RuleKey, TagRule], meters: Mapping[MeterKey, MeterSpec]
    ) -> tuple[LeafDiff, dict[MeterKey, int]]:
        """Changes to reach (rules, meters), and the meter ids after applying them."""
        new_ids = self._allocate(k for k in meters if k not in self.meters)
        ids = {**{k: v for k, v in self.meter_ids.items() if k in meters}, **new_ids}
        d = LeafDiff(meter_ids=ids)
        d.meters_add = [(new_ids[k], m) for k, m in meters.items() if k in new_ids]
        d.meters_mod = [
            (ids[k], m) for k, m in meters.items() if k in self.meters and self.meters[k] != m
        ]
        d.rules_add = [r for k, r in rules.items() if k not in self.rules]
        d.rules_mod = [r for k, r in rules.items() if k in self.rules and self.rules[k] != r]
        d.rules_del = [r for k, r in self.rules.items() if k not in rules]
        d.meters_del = [(self.meter_ids[k], m) for k, m in self.meters.items() if k not in meters]
        return d, ids

    def commit(
        self,
        rules: Mapping[RuleKey, TagRule],
        meters: Mapping[MeterKey, MeterSpec],
        ids: Mapping[MeterKey, int],
    ) -> None:
        """Record that the switch now holds (rules, meters) with meter ids ``ids``."""
        self.rules, self.meters, self.meter_ids = dict(rules), dict(meters), dict(ids)
