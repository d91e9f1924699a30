"""P4Runtime switch driver (BMv2 simple_switch_grpc) behind the SwitchDriver interface,
so the control plane, the policies and the orchestrator do not change with the switch.

A LeafDiff is written in phases, one Write RPC each, because P4Runtime may reorder the
updates inside one Write: meters (add/modify), rules (add/modify), then rule deletes
(their direct counters are read first and handed to ``on_removed``, as OpenFlow's
flow-removed message does), then meter resets.  P4Runtime meters cannot be deleted: a
freed cell is reset to its default (no policing) by a MODIFY without config.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait

from finsy.proto import p4r

from controller.coflow_table import LeafDiff, RuleKey, TagRule
from controller.p4runtime.artifacts import Artifacts
from controller.p4runtime.entities import EntityBuilder, N, rule_key_of
from controller.p4runtime.p4info import P4InfoIndex
from controller.p4runtime.readback import state_reads, switch_state
from controller.p4runtime.session import DELETE, INSERT, MODIFY, P4RuntimeSession, update
from controller.routing import Groups, leaf_groups
from controller.southbound.base import (
    MeterCounter,
    PortCounter,
    RemovedCallback,
    RuleCounter,
    SouthboundError,
    SwitchDriver,
    SwitchState,
)
from topo.plan import FabricPlan, SwitchPlan

log = logging.getLogger("controller.p4runtime")
GRPC_HOST = "127.0.0.1"


def apply_bound_s(timeout: float) -> float:
    """How long ``apply`` waits for all switches: one diff is a few writes of ``timeout``
    each (meters, rules, deletions), plus a second of slack."""
    return timeout * 4 + 1


def grpc_target(addr: int | str) -> str:
    """The gRPC channel target of a switch address: ``unix:/PATH`` as is, a port number
    on 127.0.0.1."""
    return addr if isinstance(addr, str) else f"{GRPC_HOST}:{addr}"


def switch_ports(plan: FabricPlan, sw: SwitchPlan) -> list[int]:
    """Port numbers of ``sw`` (hosts then uplinks on a leaf; leaves on a spine)."""
    n = plan.hosts_per_leaf + plan.spines if sw.role == "leaf" else plan.leaves
    return list(range(1, n + 1))


class P4RuntimeDriver(SwitchDriver):
    """One P4RuntimeSession per switch of ``plan``; switch ``name`` listens for gRPC on
    ``grpc_ports[name]`` (a ``unix:/PATH`` address, or a TCP port on 127.0.0.1) with
    device id = its dpid."""

    def __init__(
        self,
        plan: FabricPlan,
        artifacts: Artifacts,
        grpc_ports: Mapping[str, int | str],
        on_removed: RemovedCallback | None = None,
        election_id: int = 1,
    ) -> None:
        """Driver for ``plan`` pushing the pipeline in ``artifacts``."""
        missing = [sw.name for sw in plan.switches if sw.name not in grpc_ports]
        if missing:
            raise ValueError(f"grpc ports: no port for switch {missing[0]!r}")
        self.plan, self.ports, self.on_removed = plan, dict(grpc_ports), on_removed
        self.election_id = election_id
        self.index = P4InfoIndex.from_file(artifacts.p4info)
        self.build = EntityBuilder(self.index)
        self.device_json = artifacts.json.read_bytes()
        self._sessions: dict[str, P4RuntimeSession] = {}
        self._rules: dict[str, dict[RuleKey, int]] = {}  # switch -> rule -> cookie
        self._meters: dict[str, set[int]] = {}  # switch -> meter cells in use
        self._lock = threading.Lock()

    # --- connections -------------------------------------------------------------------
    def connect(
        self, name: str, timeout: float, on_lost: Callable[[str], None] | None = None
    ) -> None:
        """Open the session of ``name`` and become primary (SouthboundError otherwise)."""
        sw = self.plan.switch(name)
        sess = P4RuntimeSession(
            name,
            grpc_target(self.ports[name]),
            sw.dpid,
            self.election_id,
            on_lost=lambda n: self._lost(n, on_lost),
        )
        sess.open(timeout)
        with self._lock:
            old, self._sessions[name] = self._sessions.get(name), sess
        if old is not None:
            old.close()

    def _lost(self, name: str, on_lost: Callable[[str], None] | None) -> None:
        """The stream of ``name`` ended: forget the session, tell the owner."""
        with self._lock:
            sess = self._sessions.get(name)
            if sess is not None and sess.closed:
                del self._sessions[name]
        log.warning("%s: P4Runtime session lost", name)
        if on_lost is not None:
            on_lost(name)

    def connected(self) -> list[str]:
        """Names of the switches with a live primary session."""
        with self._lock:
            return sorted(n for n, s in self._sessions.items() if not s.closed)

    def session(self, name: str) -> P4RuntimeSession:
        """Live session of ``name`` or SouthboundError."""
        with self._lock:
            sess = self._sessions.get(name)
        if sess is None or sess.closed:
            raise SouthboundError(f"{name}: not connected")
        return sess

    def close(self) -> None:
        """Close every session."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            s.close()

    # --- writes ------------------------------------------------------------------------
    def install_base(self, switch: str, timeout: float) -> None:
        """Push the pipeline (wipes the switch), then routing and ECMP."""
        sess, sw = self.session(switch), self.plan.switch(switch)
        sess.set_pipeline(self.index.info, self.device_json, timeout)
        if sw.role == "leaf":
            sess.write(
                [
                    update(INSERT, action_profile_member=m)
                    for m in self.build.ecmp_members(self.plan)
                ],
                timeout,
            )
            groups = leaf_groups(self.plan, sw.index)
            sess.write(
                [
                    update(INSERT, action_profile_group=self.build.ecmp_group(d, spines))
                    for d, spines in groups.items()
                ],
                timeout,
            )
            sess.write(
                [update(INSERT, table_entry=self.build.ecmp_entry(d)) for d in groups], timeout
            )
        routes = self.build.route_entries(self.plan, sw)
        sess.write([update(INSERT, table_entry=e) for e in routes], timeout)
        with self._lock:
            self._rules[switch], self._meters[switch] = {}, set()
        log.info("%s: pipeline pushed, %d routes installed", switch, len(routes))

    def set_groups(self, groups: Mapping[str, Groups], timeout: float) -> int:
        """Modify the ECMP groups' members of each leaf (leaves in parallel)."""
        work = {n: g for n, g in groups.items() if g}
        if not work:
            return 0
        pool = ThreadPoolExecutor(max_workers=len(work))
        try:
            futures = [
                pool.submit(
                    self.session(n).write,
                    [
                        update(MODIFY, action_profile_group=self.build.ecmp_group(d, spines))
                        for d, spines in sorted(g.items())
                    ],
                    timeout,
                )
                for n, g in work.items()
            ]
            done, pending = wait(futures, timeout=apply_bound_s(timeout))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if pending:
            raise SouthboundError("group writes not confirmed in time")
        for f in done:
            f.result()
        for n, g in sorted(work.items()):
            for d, spines in sorted(g.items()):
                log.info("%s: group %d (to l%d) over spines %s", n, d, d, list(spines))
        return sum(len(g) for g in work.values())

    def apply(self, diffs: Mapping[str, LeafDiff], timeout: float) -> int:
        """Write every diff, the switches in parallel; return once all are applied, or
        raise SouthboundError once ``apply_bound_s(timeout)`` has passed (writes still
        under way then are left to their own per-write timeout, not waited for)."""
        work = {n: d for n, d in diffs.items() if d.count()}
        if not work:
            return 0
        bound = apply_bound_s(timeout)
        pool = ThreadPoolExecutor(max_workers=len(work))
        try:
            futures = [pool.submit(self._apply_one, n, d, timeout) for n, d in work.items()]
            done, pending = wait(futures, timeout=bound)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if pending:
            raise SouthboundError(f"writes not confirmed within {bound:.0f} s")
        for f in done:
            f.result()  # re-raises the first SouthboundError
        return sum(d.count() for d in work.values())

    def _apply_one(self, name: str, d: LeafDiff, timeout: float) -> None:
        """The phases of one switch's diff (see module docstring)."""
        sess, b = self.session(name), self.build
        sess.write(
            [
                update(MODIFY, meter_entry=b.meter_entry(mid, m))
                for mid, m in d.meters_add + d.meters_mod
            ],
            timeout,
        )
        ids = d.meter_ids

        def meter_of(r: TagRule) -> int | None:
            return None if r.meter is None else ids.get(r.meter)

        sess.write(
            [update(INSERT, table_entry=b.coflow_entry(r, meter_of(r))) for r in d.rules_add]
            + [update(MODIFY, table_entry=b.coflow_entry(r, meter_of(r))) for r in d.rules_mod],
            timeout,
        )
        with self._lock:
            rules = self._rules.setdefault(name, {})
            rules.update({r.key: r.cookie for r in d.rules_add + d.rules_mod})
            self._meters.setdefault(name, set()).update(mid for mid, _ in d.meters_add)
        if d.rules_del:
            self._report_removed(name, {r.key for r in d.rules_del}, timeout)
            sess.write(
                [update(DELETE, table_entry=b.coflow_entry(r, None)) for r in d.rules_del], timeout
            )
        sess.write(
            [update(MODIFY, meter_entry=b.meter_entry(mid, None)) for mid, _ in d.meters_del],
            timeout,
        )
        with self._lock:
            for r in d.rules_del:
                rules.pop(r.key, None)
            self._meters[name].difference_update(mid for mid, _ in d.meters_del)

    def _report_removed(self, name: str, keys: set, timeout: float) -> None:
        """Final counters of rules about to be deleted -> ``on_removed``."""
        if self.on_removed is None:
            return
        for c in self._coflow_counters(name, timeout, keys):
            self.on_removed(name, c.cookie, c.bytes, c.packets)

    # --- reads -------------------------------------------------------------------------
    def read_state(self, switch: str, timeout: float) -> SwitchState:
        """Every entry, ECMP member/group and configured meter of ``switch`` (one Read),
        as ``controller.p4runtime.readback.switch_state`` parses it; the driver's own
        record of the coflow rules' cookies and the meter cells in use is rebuilt
        from it (a restarted controller adopts them)."""
        ents = self.session(switch).read(state_reads(self.build), timeout)
        state = switch_state(self.build, self.plan, self.plan.switch(switch), ents)
        with self._lock:
            self._rules[switch] = {(r.tag, r.in_port, r.dst_ip): r.cookie for r in state.rules}
            self._meters[switch] = {m.meter_id for m in state.meters}
        return state

    def _coflow_counters(
        self, name: str, timeout: float, only: set | None = None
    ) -> list[RuleCounter]:
        """Direct counters of the coflow rules of ``name`` (optionally only ``only``)."""
        ents = self.session(name).read([p4r.Entity(table_entry=self.build.coflow_read())], timeout)
        with self._lock:
            cookies = dict(self._rules.get(name, {}))
        out = []
        for e in ents:
            key = rule_key_of(self.build, e.table_entry)
            if key in cookies and (only is None or key in only):
                data = e.table_entry.counter_data
                out.append(RuleCounter(cookies[key], data.byte_count, data.packet_count))
        return out

    def rule_counters(self, switch: str, timeout: float) -> list[RuleCounter]:
        """Counters of the coflow-table rules of ``switch``."""
        return self._coflow_counters(switch, timeout)

    def _cells(
        self, name: str, counter: str, indices: list[int], timeout: float
    ) -> dict[int, tuple[int, int]]:
        """index -> (bytes, packets) of ``counter`` cells ``indices``."""
        if not indices:
            return {}
        ents = self.session(name).read(
            [p4r.Entity(counter_entry=self.build.counter_read(counter, i)) for i in indices],
            timeout,
        )
        return {
            e.counter_entry.index.index: (
                e.counter_entry.data.byte_count,
                e.counter_entry.data.packet_count,
            )
            for e in ents
        }

    def port_counters(self, switch: str, timeout: float) -> list[PortCounter]:
        """rx (ingress) and tx (egress) counters of every port of ``switch``."""
        ports = switch_ports(self.plan, self.plan.switch(switch))
        rx = self._cells(switch, N.port_rx, ports, timeout)
        tx = self._cells(switch, N.port_tx, ports, timeout)
        return [
            PortCounter(
                p,
                rx.get(p, (0, 0))[0],
                tx.get(p, (0, 0))[0],
                rx.get(p, (0, 0))[1],
                tx.get(p, (0, 0))[1],
            )
            for p in ports
        ]

    def meter_counters(self, switch: str, timeout: float) -> list[MeterCounter]:
        """Traffic into, and dropped by, every meter cell in use on ``switch``."""
        with self._lock:
            ids = sorted(self._meters.get(switch, ()))
        seen = self._cells(switch, N.meter_in, ids, timeout)
        drop = self._cells(switch, N.meter_drop, ids, timeout)
        return [
            MeterCounter(
                i,
                seen.get(i, (0, 0))[1],
                seen.get(i, (0, 0))[0],
                drop.get(i, (0, 0))[1],
                drop.get(i, (0, 0))[0],
            )
            for i in ids
        ]
