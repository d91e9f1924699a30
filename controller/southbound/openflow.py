"""OpenFlow 1.3 switch driver (os-ken datapaths) behind the SwitchDriver interface."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from controller.coflow_table import LeafDiff
from controller.routing import Groups
from controller.southbound import of_messages as ofm
from controller.southbound.base import (
    InstalledMeter,
    InstalledRule,
    MeterCounter,
    PortCounter,
    RemovedCallback,
    RuleCounter,
    SouthboundError,
    SwitchDriver,
    SwitchState,
)
from controller.southbound.of_session import OFSession
from topo.plan import FabricPlan
from workload.marking import TAG_ID_MAX

log = logging.getLogger("controller.southbound")


class OpenFlowDriver(SwitchDriver):
    """Keeps one OFSession per connected switch of ``plan``."""

    max_tag = TAG_ID_MAX  # rules match (in_port, DSCP); counters per rule cookie

    def __init__(self, plan: FabricPlan, on_removed: RemovedCallback | None = None) -> None:
        """Driver for the switches of ``plan``; ``on_removed`` gets removal counters."""
        self.plan = plan
        self.on_removed = on_removed
        self._by_dpid = {sw.dpid: sw for sw in plan.switches}
        self._sessions: dict[str, OFSession] = {}
        self._lock = threading.Lock()

    # --- connection bookkeeping (event thread) ---------------------------------------
    def attach(self, dp) -> str | None:
        """A datapath finished its handshake: open a session; its switch name, or None
        for a dpid not in the plan (ignored, logged)."""
        sw = self._by_dpid.get(dp.id)
        if sw is None:
            log.warning("ignoring unknown switch dpid %016x", dp.id or 0)
            return None
        with self._lock:
            old = self._sessions.get(sw.name)
            self._sessions[sw.name] = OFSession(dp, sw.name)
        if old is not None:
            old.close()
        log.info("%s connected (dpid %s)", sw.name, sw.dpid_str)
        return sw.name

    def detach(self, dp) -> str | None:
        """A datapath went away: close its session (if it is still the current one)."""
        sess = self._session_of(dp)
        if sess is None:
            return None
        with self._lock:
            if self._sessions.get(sess.name) is sess:
                del self._sessions[sess.name]
        sess.close()
        log.warning("%s disconnected", sess.name)
        return sess.name

    def name_of(self, dp) -> str | None:
        """The switch name of a live datapath (None if it has no session)."""
        sess = self._session_of(dp)
        return None if sess is None else sess.name

    def connected(self) -> list[str]:
        """Names of the switches with a live session."""
        with self._lock:
            return sorted(self._sessions)

    def _session_of(self, dp) -> OFSession | None:
        """The session wrapping exactly this datapath object."""
        with self._lock:
            return next((s for s in self._sessions.values() if s.dp is dp), None)

    def session(self, switch: str) -> OFSession:
        """Live session of ``switch`` or SouthboundError."""
        with self._lock:
            sess = self._sessions.get(switch)
        if sess is None:
            raise SouthboundError(f"{switch}: not connected")
        return sess

    # --- events (event thread) --------------------------------------------------------
    def on_reply(self, msg) -> None:
        """Barrier or multipart reply."""
        sess = self._session_of(msg.datapath)
        if sess is not None:
            more = bool(getattr(msg, "flags", 0) & msg.datapath.ofproto.OFPMPF_REPLY_MORE)
            sess.on_reply(msg, more)

    def on_error(self, msg) -> None:
        """Error message."""
        sess = self._session_of(msg.datapath)
        if sess is not None:
            sess.on_error(msg)

    def on_flow_removed(self, msg) -> None:
        """A coflow rule left the switch: pass its final counters on."""
        sess = self._session_of(msg.datapath)
        if sess is not None and self.on_removed is not None and msg.cookie:
            self.on_removed(sess.name, msg.cookie, msg.byte_count, msg.packet_count)

    # --- writes -----------------------------------------------------------------------
    def _confirm(self, written: Mapping[str, list[int]], timeout: float) -> None:
        """Barrier on every switch in ``written`` (sent together, then awaited)."""
        pending = []
        for name in written:
            sess = self.session(name)
            barrier = sess.dp.ofproto_parser.OFPBarrierRequest(sess.dp)
            pending.append((sess, *sess.start_request(barrier)))
        deadline = time.monotonic() + timeout
        for sess, xid, waiter in pending:
            sess.finish(xid, waiter, max(0.0, deadline - time.monotonic()), "barrier")
            sess.check_errors(written[sess.name])

    def install_base(self, switch: str, timeout: float) -> None:
        """Wipe and install defaults and routing on ``switch``."""
        sess = self.session(switch)
        msgs = ofm.base_msgs(sess.dp, self.plan, self.plan.switch(switch))
        xids = sess.send_writes(msgs)
        self._confirm({switch: xids}, timeout)
        log.info("%s: base pipeline installed (%d writes)", switch, len(msgs))

    def apply(self, diffs: Mapping[str, LeafDiff], timeout: float) -> int:
        """Write all diffs, then confirm them all with barriers."""
        written, total = {}, 0
        for name, diff in diffs.items():
            if diff.count() == 0:
                continue
            sess = self.session(name)
            _log_diff(name, diff)
            msgs = ofm.diff_msgs(sess.dp, diff)
            written[name] = sess.send_writes(msgs)
            total += len(msgs)
        self._confirm(written, timeout)
        return total

    def set_groups(self, groups: Mapping[str, Groups], timeout: float) -> int:
        """Modify the given select groups of each leaf, then barriers on all of them."""
        written, total = {}, 0
        for name, leaf_groups in groups.items():
            sess = self.session(name)
            msgs = ofm.groups_msgs(sess.dp, self.plan, leaf_groups)
            written[name] = sess.send_writes(msgs)
            total += len(msgs)
            for d, spines in sorted(leaf_groups.items()):
                log.info("%s: group %d (to l%d) over spines %s", name, d, d, list(spines))
        self._confirm(written, timeout)
        return total

    # --- reads ------------------------------------------------------------------------
    def rule_counters(self, switch: str, timeout: float) -> list[RuleCounter]:
        """Counters of the coflow rules (cookie != 0) of table 0."""
        sess = self.session(switch)
        replies = sess.request(ofm.flow_stats_request(sess.dp), timeout, "flow stats")
        return [
            RuleCounter(s.cookie, s.byte_count, s.packet_count)
            for r in replies
            for s in r.body
            if s.cookie
        ]

    def read_state(self, switch: str, timeout: float) -> SwitchState:
        """Every flow, group and meter of ``switch``: the static pipeline checked entry
        for entry against ``base_msgs``, the coflow rules and meters parsed back."""
        sess = self.session(switch)
        dp, sw = sess.dp, self.plan.switch(switch)
        flows = [
            s
            for r in sess.request(
                ofm.flow_stats_request(dp, dp.ofproto.OFPTT_ALL), timeout, "flow stats"
            )
            for s in r.body
        ]
        groups = [
            g for r in sess.request(ofm.group_desc_request(dp), timeout, "groups") for g in r.body
        ]
        meters = [
            m for r in sess.request(ofm.meter_config_request(dp), timeout, "meters") for m in r.body
        ]
        rules, base = [], set()
        for s in flows:
            parsed = ofm.parse_tag_rule(dp, s) if s.cookie else None
            if parsed is None:
                base.add(ofm.stats_flow_key(s))
            else:
                tag, port, dst, level, meter, dscp = parsed
                rules.append(InstalledRule(tag, port, dst, level, meter, s.cookie, dscp))
        want = ofm.base_flow_keys(dp, self.plan, sw)
        foreign = _difference(want, base, "base flows")
        spines = {g.group_id: ofm.group_spines(dp, self.plan, g) for g in groups}
        if any(v is None for v in spines.values()):
            foreign = foreign or "a group that is not an ECMP group over the uplinks"
        per_leaf, wrong = ofm.split_groups(
            self.plan, {g: sp for g, sp in spines.items() if sp is not None}
        )
        foreign = foreign or wrong
        return SwitchState(
            not foreign,
            foreign,
            tuple(rules),
            tuple(_installed_meter(m) for m in meters),
            per_leaf,
        )

    def port_counters(self, switch: str, timeout: float) -> list[PortCounter]:
        """Counters of the switch's ports (the LOCAL port excluded)."""
        sess = self.session(switch)
        replies = sess.request(ofm.port_stats_request(sess.dp), timeout, "port stats")
        local = sess.dp.ofproto.OFPP_LOCAL
        return [
            PortCounter(s.port_no, s.rx_bytes, s.tx_bytes, s.rx_packets, s.tx_packets)
            for r in replies
            for s in r.body
            if s.port_no != local
        ]

    def meter_counters(self, switch: str, timeout: float) -> list[MeterCounter]:
        """Counters of every meter (drop band = first band)."""
        sess = self.session(switch)
        replies = sess.request(ofm.meter_stats_request(sess.dp), timeout, "meter stats")
        out = []
        for r in replies:
            for s in r.body:
                band = s.band_stats[0] if s.band_stats else None
                out.append(
                    MeterCounter(
                        s.meter_id,
                        s.packet_in_count,
                        s.byte_in_count,
                        band.packet_band_count if band else 0,
                        band.byte_band_count if band else 0,
                    )
                )
        return out


def _difference(want: set, have: set, what: str) -> str:
    """'' when ``have`` equals ``want``, else how many are missing and extra."""
    if want == have:
        return ""
    return f"{what}: {len(want - have)} missing, {len(have - want)} extra"


def _installed_meter(m) -> InstalledMeter:
    """An OFPMeterConfigStats as an InstalledMeter (its first band: the drop band)."""
    band = m.bands[0] if m.bands else None
    return InstalledMeter(m.meter_id, band.rate if band else 0, band.burst_size if band else 0)


def _log_diff(switch: str, diff: LeafDiff) -> None:
    """One log line per write, with the switch name."""
    for verb, items in (
        ("add", diff.meters_add),
        ("modify", diff.meters_mod),
        ("delete", diff.meters_del),
    ):
        for mid, m in items:
            log.info(
                "%s: %s meter %d %s rate %d kbit/s burst %d kbit",
                switch,
                verb,
                mid,
                m.key,
                m.rate_kbps,
                m.burst_kbit,
            )
    for verb, rules in (
        ("add", diff.rules_add),
        ("modify", diff.rules_mod),
        ("delete", diff.rules_del),
    ):
        for r in rules:
            log.info(
                "%s: %s rule tag %d in_port %d dst %s -> level %d meter %s",
                switch,
                verb,
                r.tag,
                r.in_port,
                r.dst_ip or "*",
                r.level,
                diff.meter_ids.get(r.meter) if r.meter else None,
            )
