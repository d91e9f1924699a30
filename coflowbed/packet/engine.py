"""The packet engine's event loop: it walks the coflow DAG as the fluid engine does
(``coflowbed.sim.dagstate``: dependencies, compute delays, release times, iterations),
starts a coflow's flows on a packet fabric (a ``Bed``: ns-3 in ``ns3bed``, a fake in
unit tests) when it is released, and asks the policy at the same events as the fluid
engine (a coflow released or completed; a byte threshold crossed, checked every
``decide_every_s``).  Levels are re-marked on the flows' senders; a policy whose rates
are limits (meters) has them paced at the sender.  The bed runs until the next DAG
event or until a flow's last byte arrives."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from coflowbed.packet.config import PacketConfig, band_of_level, hashed_spine, scaled_bytes
from coflowbed.sim.dagstate import DagState
from coflowbed.sim.fabric import BigSwitch, FabricModel, LeafSpine, ecmp_spine
from coflowbed.sim.levels import assign_levels
from coflowbed.sim.outcome import CoflowOutcome
from controller.policies.base import CoflowState, Decision, Policy
from workload.dag import Dag
from workload.marking import MAX_LEVELS

log = logging.getLogger("packet")

RUN_CAP_S = 1e6  # the furthest one bed run goes when no DAG event is due
TIME_RES_S = 2e-9  # ns-3 keeps time in nanoseconds: a DAG time is reached within this


class Bed(Protocol):
    """A packet fabric with TCP flows between numbered hosts (``ns3bed.Ns3Bed``)."""

    def add_flow(self, src: int, dst: int, plane: int, nbytes: int, band: int) -> int:
        """Register a flow (not started); its index."""
        ...

    def start_flow(self, i: int) -> None:
        """Open flow ``i``'s connection now."""
        ...

    def set_band(self, i: int, band: int) -> None:
        """Mark flow ``i``'s packets for ``band`` from now on."""
        ...

    def set_rate(self, i: int, bps: float) -> None:
        """Pace flow ``i`` at ``bps`` from now (0: unpaced)."""
        ...

    def run_until(self, t: float) -> None:
        """Run until ``t`` or until some flow delivers its last byte."""
        ...

    def take_done(self) -> list[int]:
        """Flows finished since the last call, in finishing order."""
        ...

    def now(self) -> float:
        """Simulated time (s)."""
        ...

    def received(self, i: int) -> int:
        """Bytes flow ``i``'s receiver has got."""
        ...

    def first_byte(self, i: int) -> float:
        """When flow ``i``'s first byte arrived (NaN: not yet)."""
        ...

    def finish(self, i: int) -> float:
        """When flow ``i``'s last byte arrived (NaN: not yet)."""
        ...

    def retransmitted(self, i: int) -> int:
        """Bytes flow ``i``'s sender sent again."""
        ...


@dataclass
class PacketStats:
    """Counters of one packet-level run (``events``, ``drops_per_band``, ``retransmits``
    are the bed's, filled in by ``ns3bed``)."""

    events: int = 0
    policy_calls: int = 0
    remarks: int = 0  # level changes of flows after their first decision (re-marks)
    wall_s: float = 0.0
    sim_end_s: float = 0.0
    finished: bool = False
    drops_per_band: list[int] = field(default_factory=list)
    retransmits: int = 0


@dataclass
class FlowArrays:
    """Per-flow timing, in the DAG's flow order (coflow by coflow)."""

    start_s: np.ndarray
    finish_s: np.ndarray
    received: np.ndarray  # bytes delivered (the DAG's bytes, unscaled)
    retrans: np.ndarray  # bytes sent again (unscaled)


@dataclass
class PacketEngine:
    """Runs ``dag`` on ``bed`` (built for ``fabric``) under ``policy`` with ``levels``
    hardware queues (None: ranks compressed onto the 8 bands)."""

    dag: Dag
    fabric: FabricModel
    policy: Policy
    levels: int | None
    config: PacketConfig
    bed: Bed
    stats: PacketStats = field(default_factory=PacketStats)

    def __post_init__(self) -> None:
        self.config.check()
        self.flows = [(c, f) for c, cf in enumerate(self.dag.coflows) for f in cf.flows]
        sizes = [len(cf.flows) for cf in self.dag.coflows]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.left = np.asarray(sizes, dtype=np.int64)
        self.dagstate = DagState(self.dag)
        self.outcomes = [CoflowOutcome() for _ in self.dag.coflows]
        self.view = self.fabric.view(self.levels or MAX_LEVELS)
        self.bed_index = np.full(len(self.flows), -1, dtype=np.int64)  # DAG flow -> bed flow
        self.dag_flow: list[int] = []  # bed flow -> DAG flow
        self.band = np.zeros(len(self.flows), dtype=np.int64)
        self.decided = np.zeros(len(self.flows), dtype=bool)  # marked by a decision yet
        self.rate = np.zeros(len(self.flows))
        self.arrays = FlowArrays(
            np.full(len(self.flows), math.nan),
            np.full(len(self.flows), math.nan),
            np.zeros(len(self.flows), dtype=np.int64),
            np.zeros(len(self.flows), dtype=np.int64),
        )
        self.states: dict[int, CoflowState] = {}  # active coflows in release order
        self.thresholds = np.asarray(sorted(self.policy.byte_thresholds or ()), dtype=float)
        self.buckets: dict[int, int] = {}  # coflow -> threshold bucket at the last decision
        self.changed = False  # coflows released or completed since the last decision
        self._ended_at = 0.0  # when a flow last ended (simulated s): the stall check
        self._seq = 0
        self.planes = [self._plane(f) for _, f in self.flows]

    def _plane(self, f) -> int:
        """The spine (address plane) a flow crosses (0 on a single switch)."""
        fab = self.fabric
        if not isinstance(fab, LeafSpine):
            return 0
        if self.config.ecmp == "hash":
            return hashed_spine(f.src, f.dst, f.flow_id, fab.spines, self.config.hash_seed)
        return ecmp_spine(f.src, f.dst, f.flow_id, fab.spines, fab.ecmp_seed)

    # --- the loop ---------------------------------------------------------------

    def run(self) -> PacketEngine:
        """Run until every DAG node is done (or the horizon); returns self."""
        t0 = time.perf_counter()
        self.dagstate.start()
        self._settle(0.0)
        self._decide_if_changed(0.0)
        horizon = self.config.horizon_s
        while not self.dagstate.all_done():
            now = self.bed.now()
            self._check_stall(now)
            target = min(self.dagstate.next_time(), now + min(RUN_CAP_S, self.config.stall_s))
            if self.thresholds.size and self.states:
                target = min(target, now + self.config.decide_every_s)
            if not self.states and not math.isfinite(self.dagstate.next_time()):
                raise RuntimeError(f"packet engine stalled at t={now:.6f}s: nothing to run")
            target = min(target, horizon)
            self.bed.run_until(target)
            now = self.bed.now()
            if now >= target - TIME_RES_S:  # the run reached its end, up to ns-3's rounding
                now = max(now, target)
            self._collect(now)
            self._settle(now)
            if self.thresholds.size and self._crossed():
                self.changed = True
            if now >= horizon:
                break
            self._decide_if_changed(now)
        self.stats.finished = self.dagstate.all_done()
        self.stats.sim_end_s = self.bed.now()
        self.stats.wall_s = time.perf_counter() - t0
        self._record_bytes()
        return self

    def _check_stall(self, now: float) -> None:
        """RuntimeError when flows run and none has ended for ``stall_s`` simulated
        seconds (a connection TCP gave up on never ends)."""
        if self.states and now - self._ended_at >= self.config.stall_s:
            raise RuntimeError(
                f"packet engine stalled at t={now:.3f}s: flows run but none ended in "
                f"{self.config.stall_s:g} s of simulated time (PacketConfig.stall_s)"
            )

    def _collect(self, now: float) -> None:
        """Flows whose last byte arrived: record them; complete their coflows."""
        done = self.bed.take_done()
        if done:
            self._ended_at = now
        ended: set[int] = set()
        for b in done:
            i = self.dag_flow[b]
            c = self.flows[i][0]
            self.arrays.finish_s[i] = self.bed.finish(b)
            self.left[c] -= 1
            if self.left[c] == 0:
                ended.add(c)
        for c in sorted(ended):  # in coflow order, as the fluid engine releases dependants
            self._complete(c, now)

    def _settle(self, now: float) -> None:
        """Release every coflow due now (and what empty ones release in turn)."""
        self.dagstate.pop_due(now)
        while self.dagstate.ready:
            ready, self.dagstate.ready = self.dagstate.ready, []
            for c in ready:
                self._release(c, now)
            self.dagstate.pop_due(now)

    def _release(self, c: int, now: float) -> None:
        """Coflow ``c`` is released at ``now``: open its flows (at the lowest band until
        the decision that follows at this instant)."""
        cf = self.dag.coflows[c]
        self.outcomes[c].release_s = now
        if self.left[c] == 0:
            self._complete(c, now)
            return
        self.states[c] = CoflowState(cf, now, self._seq)
        self._seq += 1
        self.changed = True
        hosts = self.fabric.host_indices
        lo, hi = int(self.offsets[c]), int(self.offsets[c + 1])
        src = hosts([f.src for _, f in self.flows[lo:hi]])
        dst = hosts([f.dst for _, f in self.flows[lo:hi]])
        for k, i in enumerate(range(lo, hi)):
            f = self.flows[i][1]
            nbytes = scaled_bytes(f.bytes, self.config.scale)
            b = self.bed.add_flow(int(src[k]), int(dst[k]), self.planes[i], nbytes, BANDS_LOW)
            if b != len(self.dag_flow):
                raise RuntimeError("packet bed numbered its flows out of order")
            self.bed_index[i] = b
            self.dag_flow.append(i)
            self.band[i] = BANDS_LOW
            self.bed.start_flow(b)
            self.arrays.start_s[i] = now

    def _complete(self, c: int, now: float) -> None:
        """Coflow ``c`` delivered everything: record it, release its dependants."""
        out = self.outcomes[c]
        out.finish_s = now
        lo, hi = int(self.offsets[c]), int(self.offsets[c + 1])
        firsts = [self.bed.first_byte(int(b)) for b in self.bed_index[lo:hi] if b >= 0]
        out.start_s = min(firsts, default=math.nan)
        self.states.pop(c, None)
        self.buckets.pop(c, None)
        self.changed = True
        self.dagstate.node_done(self.dag.coflows[c].coflow_id, now)

    # --- deciding -----------------------------------------------------------------

    def _sent(self, c: int) -> int:
        """Bytes coflow ``c``'s receivers have got, in the DAG's bytes."""
        lo, hi = int(self.offsets[c]), int(self.offsets[c + 1])
        got = sum(self.bed.received(int(b)) for b in self.bed_index[lo:hi] if b >= 0)
        return int(round(got / self.config.scale))

    def _crossed(self) -> bool:
        """Whether an active coflow's bytes sent moved past a threshold since the last
        decision."""
        for c in self.states:
            bucket = int(np.searchsorted(self.thresholds, self._sent(c), side="right"))
            if bucket != self.buckets.get(c, 0):
                return True
        return False

    def _decide_if_changed(self, now: float) -> None:
        """Ask the policy if coflows came or went (or crossed a threshold) since the last
        decision, and re-mark and re-pace the active flows."""
        if not self.changed or not self.states:
            self.changed = False
            return
        self.changed = False
        states = list(self.states.values())
        for c, st in self.states.items():
            st.bytes_sent = self._sent(c)
            if self.policy.clairvoyant:
                st.remaining = self._remaining(c)
            if self.thresholds.size:
                self.buckets[c] = int(np.searchsorted(self.thresholds, st.bytes_sent, "right"))
        decisions = self.policy.decide(states, self.view, now)
        self.stats.policy_calls += 1
        missing = [s.coflow_id for s in states if s.coflow_id not in decisions]
        if missing:
            raise ValueError(f"policy {self.policy.name!r} gave no decision for {missing[:3]}")
        levels = coflow_levels(self.policy, decisions, self.levels)
        for c, st in self.states.items():
            d, level = decisions[st.coflow_id], levels[st.coflow_id]
            out = self.outcomes[c]
            if out.level is None:
                out.level, out.rank = level, str(d.rank)
            self._apply(c, band_of_level(level), d)

    def _remaining(self, c: int) -> dict[str, int]:
        """{flow id: bytes left} of coflow ``c`` (the DAG's bytes)."""
        lo, hi = int(self.offsets[c]), int(self.offsets[c + 1])
        out = {}
        for i in range(lo, hi):
            f = self.flows[i][1]
            got = self.bed.received(int(self.bed_index[i])) / self.config.scale
            out[f.flow_id] = max(0, math.ceil(f.bytes - got - 1e-6))
        return out

    def _apply(self, c: int, band: int, d: Decision) -> None:
        """Mark coflow ``c``'s unfinished flows for ``band``; pace them at the decision's
        rates when the policy's rates are limits (meters)."""
        lo, hi = int(self.offsets[c]), int(self.offsets[c + 1])
        rates = d.flow_rates_bps if self.policy.rates_are_limits else None
        for i in range(lo, hi):
            if not math.isnan(self.arrays.finish_s[i]):
                continue
            b = int(self.bed_index[i])
            if self.band[i] != band:
                self.bed.set_band(b, band)
                self.band[i] = band
                self.stats.remarks += int(self.decided[i])
            self.decided[i] = True
            r = (rates or {}).get(self.flows[i][1].flow_id, 0.0) * self.config.scale
            if r != self.rate[i]:
                self.bed.set_rate(b, r)
                self.rate[i] = r

    def _record_bytes(self) -> None:
        """Bytes each flow delivered (the DAG's bytes; a finished flow all of them) and
        sent again."""
        for i, (_, f) in enumerate(self.flows):
            b = int(self.bed_index[i])
            if b >= 0:
                self.arrays.retrans[i] = round(self.bed.retransmitted(b) / self.config.scale)
            if not math.isnan(self.arrays.finish_s[i]):
                self.arrays.received[i] = f.bytes
            elif b >= 0:
                got = self.bed.received(b) / self.config.scale
                self.arrays.received[i] = min(f.bytes, int(got))


BANDS_LOW = MAX_LEVELS - 1  # a flow's band between its release and the first decision


def coflow_levels(
    policy: Policy, decisions: dict[str, Decision], levels: int | None
) -> dict[str, int]:
    """Level (0..7) per coflow id: a static policy's ranks are its levels; otherwise the
    ranks compressed onto ``levels`` queues, or onto all 8 bands when ``levels`` is None."""
    if policy.levels_given:
        return {cid: min(int(d.rank[0]), MAX_LEVELS - 1) for cid, d in decisions.items()}
    return assign_levels(decisions, levels or MAX_LEVELS, policy.compression)


def fabric_shape(fabric: FabricModel) -> tuple[int, int, int, float, float]:
    """(hosts, hosts per leaf, spines, host bit/s, fabric bit/s) of a fabric model; a big
    switch is one leaf without spines.  ValueError on another model."""
    n = len(fabric.hosts)
    if isinstance(fabric, LeafSpine):
        return n, fabric.hosts_per_leaf, fabric.spines, fabric.host_bps, fabric.fabric_bps
    if isinstance(fabric, BigSwitch):
        return n, n, 0, fabric.port_bps, fabric.port_bps
    raise ValueError(f"the packet engine has no model of {fabric.description!r}")


def check_inputs(fabric: FabricModel, faults: Sequence[object]) -> None:
    """ValueError for what the packet engine does not model: link faults, hosts beyond
    the addressing plan (254 per leaf, 256 leaves, 256 spines)."""
    if faults:
        raise ValueError("faults: the packet engine does not model link faults yet")
    n, per_leaf, spines, _, _ = fabric_shape(fabric)
    if per_leaf > 254 or n // per_leaf > 256 or spines > 256:
        raise ValueError(f"fabric: too large for the packet engine ({fabric.description})")
