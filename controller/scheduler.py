"""The coflow scheduler's decisions: policy ranks -> levels, tags and the minimal writes,
without doing I/O (``controller.scheduler_service`` runs it inside the controller; the
simulator calls the same policy objects in-process).

Two modes:

- **dynamic** (FIFO, SEBF, D-CLAS, Sincronia, user policies): every active coflow has its
  own tag (``controller.tags``: an id, and on each sending host a DSCP no other
  coflow of that host holds; recycled).
  On every arrival, completion or byte-threshold crossing the scheduler asks the
  policy, compresses ranks onto the K levels and returns only what changed: controller
  entries to set, tags to clear, host socket priorities.
- **static** (policies with ``ranks_by_identity = True``: fair, Hermod, Lina,
  ByteScheduler, the X-first rules): ranks depend only on coflow identity, so levels are
  assigned once for the whole DAG (compressed over every rank in it, e.g. Hermod's MID
  buckets first) and the tag of a coflow is its level's tag ``1 + level``.  The tag table
  is written once per level used; nothing is written while coflows come and go, as with
  the static tag -> priority tables of the published LLM schedulers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from controller.coflow_table import FlowRate, TagEntry
from controller.compress import compress, keep_levels
from controller.messages import HostLevel, HostRate, HostUpdates
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.static import StaticPolicy
from controller.tags import TagPool
from workload.dag import Coflow
from workload.marking import TAG_ID_MAX, TAG_MIN, check_level

log = logging.getLogger("scheduler")


class PolicyError(Exception):
    """The policy raised or returned something invalid; the run must stop."""


@dataclass
class Changes:
    """What the fabric must apply after one scheduling decision."""

    entries: list[TagEntry] = field(default_factory=list)  # controller 'set' entries
    clear_tags: list[int] = field(default_factory=list)
    host_levels: list[HostLevel] = field(default_factory=list)
    host_rates: list[HostRate] = field(default_factory=list)  # pacing mode: changed pairs

    def __bool__(self) -> bool:
        return bool(self.entries or self.clear_tags or self.host_levels or self.host_rates)

    def hosts(self) -> HostUpdates:
        """The host part, as the control API answers it."""
        return HostUpdates(tuple(self.host_levels), tuple(self.host_rates))


@dataclass(frozen=True)
class Installed:
    """What is installed for one coflow: its level and per-(src,dst) rates in Mbit/s."""

    level: int
    rate_mbps: float | None
    flow_rates: tuple[tuple[str, str, float], ...]


class LiveScheduler:
    """Policy -> levels/rates for the active coflows; emits minimal ``Changes``."""

    def __init__(
        self,
        policy: Policy,
        fabric: FabricView,
        levels: int,
        all_coflows: list[Coflow] | None = None,
        pacing: bool = False,
        tag_max: int = TAG_ID_MAX,
    ) -> None:
        """``policy`` decides (the scenario's ``static`` levels too: ``StaticPolicy``);
        ``all_coflows`` lets identity-ranked policies fix levels for the whole DAG;
        ``tag_max``: the largest tag the switches take (``TagPool``)."""
        self.policy, self.fabric, self.levels = policy, fabric, levels
        # policy (MADD) rates: switch meters, or (pacing) paced at the sending host
        self.pacing = pacing
        self.states: dict[str, CoflowState] = {}
        self.tags: dict[str, int] = {}
        self.installed: dict[str, Installed] = {}
        self.last_level: dict[str, int] = {}  # kept after completion, for results
        self.last_rank: dict[str, tuple] = {}
        self._flow_coflow: dict[str, str] = {}  # flow id -> its active coflow
        self._pool = TagPool(tag_max)
        self._seq = 0
        self.moved_up = self.moved_down = 0  # level changes of active coflows
        self.fixed: dict[str, int] | None = None  # static mode: coflow -> level
        self._fixed_written: set[int] = set()
        if policy.ranks_by_identity and all_coflows:
            self.fixed = self._levels_for_dag(all_coflows)

    @property
    def is_static(self) -> bool:
        """Whether levels were fixed for the whole DAG (no writes while running)."""
        return self.fixed is not None

    def arrive(self, coflow: Coflow, now: float) -> Changes:
        """Register ``coflow`` (gets a tag) and re-decide."""
        self.states[coflow.coflow_id] = CoflowState(
            coflow, now, self._seq, 0, {f.flow_id: f.bytes for f in coflow.flows}
        )
        self._seq += 1
        self._flow_coflow.update((f.flow_id, coflow.coflow_id) for f in coflow.flows)
        if self.fixed is not None:
            return self._arrive_static(coflow.coflow_id, self.fixed[coflow.coflow_id])
        senders = {f.src for f in coflow.flows}
        tag = self._pool.take(senders)
        reclaimed = []
        if tag is None:
            reclaimed = self._pool.reclaim()
            tag = self._pool.take_clean(senders)
        self.tags[coflow.coflow_id] = tag
        changes = self._decide(now)
        changes.clear_tags[:0] = reclaimed  # applied before the new entries
        return changes

    def _levels_for_dag(self, coflows: list[Coflow]) -> dict[str, int]:
        """Static mode: one policy call over every coflow of the DAG, compressed once."""
        states = [
            CoflowState(cf, cf.release_s, i, 0, {f.flow_id: f.bytes for f in cf.flows})
            for i, cf in enumerate(coflows)
        ]
        decisions = self._call_policy(states, 0.0)
        how = self.policy.dag_compression or self.policy.compression
        return self._compress({cid: d.rank for cid, d in decisions.items()}, how)

    def preinstall(self) -> Changes:
        """Static mode: the entries of every level the DAG uses, to write before the
        iteration, so that no release waits for a controller write ({} when dynamic)."""
        if self.fixed is None:
            return Changes()
        entries = []
        for level in sorted(set(self.fixed.values())):
            tag = TAG_MIN + level
            if tag not in self._fixed_written:
                self._fixed_written.add(tag)
                entries.append(_entry(tag, Installed(level, None, ())))
        return Changes(entries=entries)

    def _arrive_static(self, cid: str, level: int) -> Changes:
        """The coflow's tag is its level's; write that tag's entry on first use only."""
        tag = TAG_MIN + level
        self.tags[cid] = tag
        self.installed[cid] = Installed(level, None, ())
        self.last_level[cid] = level
        if tag in self._fixed_written:
            return Changes()
        self._fixed_written.add(tag)
        return Changes(entries=[_entry(tag, self.installed[cid])])

    def flow_done(self, flow_id: str) -> None:
        """A flow delivered everything: clairvoyant policies see 0 remaining."""
        st = self.states.get(self._flow_coflow.get(flow_id, ""))
        if st is not None:
            st.remaining[flow_id] = 0

    def finish(self, cid: str, now: float) -> Changes:
        """Coflow ``cid`` completed: its tag becomes dirty; re-decide the rest."""
        st = self.states.pop(cid, None)
        for f in st.coflow.flows if st is not None else ():
            self._flow_coflow.pop(f.flow_id, None)
        self.installed.pop(cid, None)
        tag = self.tags.pop(cid)
        if self.fixed is not None:
            return Changes()  # the level's tag stays installed for the next coflow
        self._pool.give(tag)
        return self._decide(now, room=True) if self.states else Changes()

    def bytes_sent(self, sent_by_tag: dict[int, int], now: float) -> Changes:
        """Counter update (bytes per tag, read from the switches); re-decide only if a
        coflow crossed a policy threshold.  Policies without thresholds see the fresh
        bytes at their next decision (an arrival or a completion)."""
        crossed = False
        thresholds = self.policy.byte_thresholds
        for cid, tag in self.tags.items():
            st = self.states[cid]
            new = max(st.bytes_sent, int(sent_by_tag.get(tag, 0)))
            crossed |= any(st.bytes_sent < th <= new for th in thresholds)
            st.bytes_sent = new
        return self._decide(now) if crossed else Changes()

    def wants_counters(self) -> bool:
        """Whether the policy decides here live and reads ``bytes_sent`` (it declares
        ``reads_bytes_sent`` or ``byte_thresholds``): the tag counters must be read."""
        policy = self.policy
        return self.fixed is None and (policy.reads_bytes_sent or bool(policy.byte_thresholds))

    def wants_progress(self) -> bool:
        """Whether a clairvoyant policy decides here live (it should see bytes left)."""
        return self.fixed is None and self.policy.clairvoyant

    def active_senders(self) -> list[str]:
        """Hosts sending flows of the active coflows."""
        return sorted({f.src for st in self.states.values() for f in st.coflow.flows})

    def progress(self, sent: Mapping[str, int], now: float) -> Changes:
        """Bytes acknowledged so far per flow id (agent reports): refresh what clairvoyant
        policies see as left.  Policies that allocate rates are asked again, because hard
        caps drift from what TCP really achieved (a flow held back earlier stays behind its
        MADD schedule until the next arrival or completion); rank-only policies see the
        fresh bytes at their next arrival or completion, as in Varys and Sincronia."""
        for st in self.states.values():
            for f in st.coflow.flows:
                if f.flow_id in sent and st.remaining.get(f.flow_id, f.bytes) > 0:
                    st.remaining[f.flow_id] = max(f.bytes - int(sent[f.flow_id]), 0)
        rates = any(inst.flow_rates for inst in self.installed.values())
        return self._decide(now) if rates else Changes()

    def dscps_of(self, coflow_id: str) -> tuple[tuple[str, int], ...]:
        """(sender, DSCP) of an active coflow's senders that do not mark it with its
        tag's own DSCP (``controller.tags``); () in static mode."""
        if self.fixed is not None:
            return ()
        return tuple(sorted(self._pool.dscps_of(self.tags[coflow_id]).items()))

    def level_of(self, coflow_id: str) -> int:
        """The level currently installed for an active coflow."""
        return self.installed[coflow_id].level

    def _decide(self, now: float, room: bool = False) -> Changes:
        """Ask the policy, compress, diff against what is installed (``room``: a
        completion, where levels are packed if the lowest is used: ``keep_levels``)."""
        changes = Changes()
        for cid, inst in self._wanted(now, room).items():
            old = self.installed.get(cid)
            if old is not None:
                inst = _keep_close_rates(old, inst)
            if old == inst:
                continue
            self.installed[cid] = inst
            self.last_level[cid] = inst.level
            tag = self.tags[cid]
            if (
                old is None
                or old.level != inst.level
                or old.rate_mbps != inst.rate_mbps
                or (not self.pacing and old.flow_rates != inst.flow_rates)
            ):
                # a dynamic tag belongs to one coflow: rules on its senders' ports only
                senders = sorted({f.src for f in self.states[cid].coflow.flows})
                entry = _entry(tag, inst, not self.pacing, senders)
                changes.entries.append(replace(entry, dscps=self.dscps_of(cid)))
            if old is None:
                continue
            if old.level != inst.level:
                self.moved_up += inst.level < old.level
                self.moved_down += inst.level > old.level
                hosts = sorted({f.src for f in self.states[cid].coflow.flows})
                changes.host_levels.extend(HostLevel(h, tag, inst.level) for h in hosts)
            if self.pacing and old.flow_rates != inst.flow_rates:
                changes.host_rates.extend(_rate_changes(tag, old, inst))
        return changes

    def pair_rate(self, coflow_id: str, src: str, dst: str) -> float | None:
        """Pacing mode: the Mbit/s a new flow src->dst of the coflow starts at."""
        if not self.pacing:
            return None
        rates = {(s, d): r for s, d, r in self.installed[coflow_id].flow_rates}
        return rates.get((src, dst))

    def _wanted(self, now: float, room: bool = False) -> dict[str, Installed]:
        """Installed state every active coflow should have now."""
        states = list(self.states.values())
        if isinstance(self.policy, StaticPolicy):  # levels and per-host meters as given
            return {
                s.coflow_id: Installed(
                    self.policy.level_of(s.coflow_id),
                    _mbps(self.policy.host_rate_bps(s.coflow_id)),
                    (),
                )
                for s in states
            }
        decisions = self._call_policy(states, now)
        levels = self._compress({cid: d.rank for cid, d in decisions.items()})
        held = {cid: inst.level for cid, inst in self.installed.items()}
        levels = keep_levels(levels, held, self.levels, room)
        return {
            cid: Installed(levels[cid], None, _flow_rates(self.states[cid], decisions[cid]))
            for cid in decisions
        }

    def _call_policy(self, states: list[CoflowState], now: float) -> dict[str, Decision]:
        name = self.policy.name or type(self.policy).__name__
        try:
            decisions = self.policy.decide(states, self.fabric, now)
        except Exception as exc:  # a user policy may raise anything: report, stop the run
            raise PolicyError(f"policy {name!r} raised {type(exc).__name__}: {exc}") from exc
        missing = {s.coflow_id for s in states} - set(decisions or {})
        if missing:
            raise PolicyError(f"policy {name!r} returned no decision for {sorted(missing)[:3]}")
        for cid, d in decisions.items():
            if not isinstance(d, Decision) or not isinstance(d.rank, tuple):
                raise PolicyError(f"policy {name!r} returned an invalid decision for {cid}: {d!r}")
        self.last_rank.update((cid, d.rank) for cid, d in decisions.items())
        return decisions

    def _compress(self, ranks: dict[str, tuple], how: str | None = None) -> dict[str, int]:
        how = how or self.policy.compression
        levels = compress(ranks, self.levels, how=how)
        for cid, lv in levels.items():
            try:
                check_level(lv, self.levels)
            except ValueError as exc:
                raise PolicyError(f"invalid level for {cid}: {exc}") from None
        return levels


def _mbps(bps: float | None) -> float | None:
    """bit/s -> Mbit/s (None stays None)."""
    return None if bps is None else bps / 1e6


def _flow_rates(state: CoflowState, d: Decision) -> tuple[tuple[str, str, float], ...]:
    """Per (src, dst) rates in Mbit/s from a decision's per-flow bit/s (summed per pair)."""
    if not d.flow_rates_bps:
        return ()
    pairs: dict[tuple[str, str], float] = {}
    for f in state.coflow.flows:
        bps = d.flow_rates_bps.get(f.flow_id)
        if bps is None or state.remaining.get(f.flow_id, 0) <= 0:
            continue
        if not bps >= 0:
            raise PolicyError(f"flow {f.flow_id}: rate must be >= 0, got {bps}")
        if bps > 0:  # 0 = "waits": no cap; its level keeps it behind (work conservation)
            pairs[(f.src, f.dst)] = pairs.get((f.src, f.dst), 0.0) + bps / 1e6
    # Below 0.5 kbit/s a rate rounds to 0: that pair waits like a 0 rate (no cap written).
    return tuple(sorted((s, d_, round(r, 3)) for (s, d_), r in pairs.items() if round(r, 3) > 0))


RATE_MARGIN = 0.1  # a pair's rate is rewritten only when it moves by more than this


def _keep_close_rates(old: Installed, new: Installed) -> Installed:
    """``new`` with every pair rate within ``RATE_MARGIN`` of the installed one kept as
    installed: re-deciding on progress moves every MADD rate a little, and rewriting
    them all would cost writes (and lag) for no effect."""
    before = {(s, d): r for s, d, r in old.flow_rates}
    rates = tuple(
        (
            s,
            d,
            before[(s, d)]
            if (s, d) in before and abs(r - before[(s, d)]) <= RATE_MARGIN * before[(s, d)]
            else r,
        )
        for s, d, r in new.flow_rates
    )
    return Installed(new.level, new.rate_mbps, rates)


def _entry(
    tag: int, inst: Installed, with_flow_rates: bool = True, senders: list[str] | None = None
) -> TagEntry:
    """A controller 'set' entry (per-pair meters only when rates are not paced; rules
    only on ``senders``' ports when given, else on every host port)."""
    pairs = inst.flow_rates if with_flow_rates else ()
    return TagEntry(
        tag,
        inst.level,
        inst.rate_mbps,
        tuple(FlowRate(s, d, r) for s, d, r in pairs),
        None if senders is None else frozenset(senders),
    )


def _rate_changes(tag: int, old: Installed, new: Installed) -> list[HostRate]:
    """The new paced rate (None: unpaced) of every pair whose rate changed."""
    before = {(s, d): r for s, d, r in old.flow_rates}
    after = {(s, d): r for s, d, r in new.flow_rates}
    return [
        HostRate(s, tag, d, after.get((s, d)))
        for (s, d) in sorted(before.keys() | after.keys())
        if before.get((s, d)) != after.get((s, d))
    ]
