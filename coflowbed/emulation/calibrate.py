"""Capacity check at bring-up: a short calibration burst measures the aggregate rate the
emulated fabric really carries between leaves, before any coflow is released.

Every host sends to the host of the same index on the next leaf (cyclic),
``FLOWS_PER_HOST`` flows each, its k-th flow in ECMP slot k (``workload.ecmp``: on OVS
spine ``k % spines``, so every host spreads its flows evenly over the spines; BMv2
hashes them, and two flows of a leaf often share a spine link while another idles), at
level 0 through the agents' own send path; the receivers' byte counts are read at the
start and the end of a window after a warm-up.  Each flow holds a little more than the
window needs at line rate, so on a fabric that carries its links' rate the flows end by
themselves about 1 s after the start, leaving no queue full behind them; flows still
running ``FINISH_GRACE_S`` after the window (a fabric that cannot carry its rate) are
cancelled.

The emulator's forwarding runs on the machine's cores, so the fabric may carry less than
its links promise.  When the scenario may offer more between leaves than the calibration
measured (``CAPACITY_MARGIN``), one warning line says so before traffic starts and names
the host link rate that would fit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from coflowbed.emulation.agents.types import SendOrder
from topo.plan import FabricPlan, HostPlan
from workload import ecmp
from workload.dag import Dag

log = logging.getLogger("calibrate")

WARMUP_S = 0.3  # slow start and queues settle before the window opens
WINDOW_S = 0.5
OVERSIZE = 1.4  # flows hold this much more than the window needs at line rate
FINISH_GRACE_S = 0.35  # after the window, flows may end by themselves this long
# Warn when the fabric carries less than this share of the peak.  A healthy OVS fabric
# measures 0.96-0.98 of nominal from run to run with the burst spread over the spines by
# ECMP slot (0.82-0.93 when OVS hashed its flows unevenly over them), an overloaded one
# 0.2-0.5 (the 2 cores forward no more).
CAPACITY_MARGIN = 0.8
DRAIN_TIMEOUT_S = 5.0
FLOWS_PER_HOST = 8
PREFIX = "calibration/"
QUIET_BYTES = 6_000  # a port moving less than this per reading carries no data flow
QUIET_INTERVAL_S = 0.05  # between two readings of the port counters
QUIET_TIMEOUT_S = 2.0
BMV2_NOTE = (
    "BMv2's forwarding rate depends on how it was built (optimised builds forward "
    "about 1 Gbit/s, default builds 10-30 Mbit/s)"
)


@dataclass(frozen=True)
class Calibration:
    """What the burst measured (Mbit/s of payload) and what the scenario may offer."""

    pairs: int
    nominal_mbps: float  # what the burst's pairs could carry at the link rates
    measured_mbps: float
    per_host_mbps: dict[str, float]  # by receiving host
    window_s: float
    wall_s: float
    peak_offered_mbps: float
    warning: str | None = None

    @property
    def fraction(self) -> float:
        """Measured / nominal."""
        return self.measured_mbps / self.nominal_mbps

    def to_dict(self) -> dict:
        """For summary.json."""
        return {**asdict(self), "fraction": round(self.fraction, 4)}


def burst_pairs(plan: FabricPlan) -> list[tuple[HostPlan, HostPlan]]:
    """(sender, receiver): each host to the same-index host of the next leaf (on a
    rail fabric, that of the next server: the same index is the sender's own server)."""
    if plan.leaves < 2 or (plan.nics > 1 and plan.hosts_per_leaf < 2):
        return []
    shift = 1 if plan.nics > 1 else 0
    at = {(h.leaf, h.index): h for h in plan.hosts}
    return [
        (h, at[(h.leaf % plan.leaves + 1, (h.index - 1 + shift) % plan.hosts_per_leaf + 1)])
        for h in plan.hosts
    ]


def _leaf_limited(counts: dict[int, int], plan: FabricPlan) -> float:
    """Mbit/s that hosts counted per leaf can move through their leaves' uplinks."""
    uplinks = plan.spines * plan.fabric_bw_mbps
    return sum(min(n * plan.host_bw_mbps, uplinks) for n in counts.values())


def inter_leaf_limit(pairs: set[tuple[str, str]], plan: FabricPlan) -> float:
    """The most the host pairs ``pairs`` can move between leaves at the link rates: every
    sender and receiver at line rate, limited by each leaf's uplinks."""
    leaf = {h.name: h.leaf for h in plan.hosts}
    cross = {(s, d) for s, d in pairs if leaf[s] != leaf[d]}
    senders = {s for s, _ in cross}
    receivers = {d for _, d in cross}
    per_leaf = lambda hosts: {lf: sum(leaf[h] == lf for h in hosts) for lf in set(leaf.values())}  # noqa: E731
    return min(_leaf_limited(per_leaf(senders), plan), _leaf_limited(per_leaf(receivers), plan))


def peak_offered_mbps(dag: Dag, plan: FabricPlan) -> float:
    """Upper bound of what the scenario offers between leaves at once: every host pair
    of the DAG sending across leaves at line rate together."""
    return inter_leaf_limit({(f.src, f.dst) for cf in dag.coflows for f in cf.flows}, plan)


def capacity_warning(cal: Calibration, plan: FabricPlan, switch: str) -> str | None:
    """The one-line warning when the scenario may offer more than the fabric carries."""
    if cal.measured_mbps >= CAPACITY_MARGIN * cal.peak_offered_mbps:
        return None
    fit = plan.host_bw_mbps * cal.measured_mbps / cal.peak_offered_mbps
    text = (
        f"capacity: the scenario may offer {cal.peak_offered_mbps:.0f} Mbit/s between leaves, "
        f"but the fabric carried {cal.measured_mbps:.0f} Mbit/s in the calibration "
        f"({cal.fraction:.2f} of nominal); host links of <= {fit:.0f} Mbit/s would fit "
        f"(fabric.host_bw_mbps, with byte_scale alike) — emulated times will be longer "
        f"than the fluid model's"
    )
    return f"{text}; {BMV2_NOTE}" if switch == "bmv2" else text


def calibrate(agents, plan: FabricPlan, dag: Dag, switch: str = "ovs") -> Calibration | None:
    """Run the burst (None for a one-leaf fabric) and warn if the scenario won't fit."""
    pairs = burst_pairs(plan)
    if not pairs:
        return None
    t0 = time.monotonic()
    per_host, window = _measure(agents, plan, pairs)
    nominal = inter_leaf_limit({(s.name, d.name) for s, d in pairs}, plan)
    cal = Calibration(
        len(pairs),
        nominal,
        round(sum(per_host.values()), 2),
        per_host,
        round(window, 4),
        round(time.monotonic() - t0, 3),
        peak_offered_mbps(dag, plan),
    )
    cal = Calibration(**{**asdict(cal), "warning": capacity_warning(cal, plan, switch)})
    log.info(
        "calibration: %.0f of %.0f Mbit/s between leaves (%.2f) in %.2f s",
        cal.measured_mbps,
        cal.nominal_mbps,
        cal.fraction,
        cal.wall_s,
    )
    if cal.warning:
        log.warning("%s", cal.warning)
    return cal


def _measure(agents, plan: FabricPlan, pairs) -> tuple[dict[str, float], float]:
    """Start the flows, read the receivers at both ends of the window, let the flows end
    (they are sized to end just after it at the nominal rate, so no queue is left full),
    cancel any straggler, and consume every calibration event."""
    share = plan.host_bw_mbps * 1e6 / 8 / FLOWS_PER_HOST  # bytes/s of one flow at line rate
    nbytes = int(share * (WARMUP_S + WINDOW_S) * OVERSIZE)
    n = ecmp.slot_count(plan.spines)
    flows: dict[str, tuple[str, str]] = {}
    orders = []
    for s, d in pairs:
        ip, port = agents.address(d.name)
        for k in range(FLOWS_PER_HOST):  # a host's k-th flow in slot k: spine k % spines
            fid = f"{PREFIX}{s.name}/{k}"
            flows[fid] = (s.name, d.name)
            orders.append(SendOrder(s.name, fid, ip, port, nbytes, 0, 0, slot=k % n, slots=n))
    ends = {(fid, side) for fid in flows for side in ("sender", "receiver")}
    agents.send_many(orders)
    opened = time.monotonic()
    _pause_until(opened + WARMUP_S)
    before = _received(agents, flows)
    _pause_until(opened + WARMUP_S + WINDOW_S)
    after = _received(agents, flows)
    _consume(agents, ends, time.monotonic() + FINISH_GRACE_S)
    stragglers = sorted({fid for fid, side in ends if side == "sender"})
    if stragglers:
        agents.cancel_many([(flows[fid][0], fid) for fid in stragglers])
    _consume(agents, ends, time.monotonic() + DRAIN_TIMEOUT_S)
    _forget_unseen(agents, flows, ends)
    if ends:  # the run's backend ignores calibration events that come later
        log.warning(
            "calibration: %d flow ends not reported within %.0f s (e.g. %s); going on",
            len(ends),
            DRAIN_TIMEOUT_S,
            sorted(ends)[0],
        )
    log.debug("calibration: %d of %d flows cancelled", len(stragglers), len(flows))
    per_host = {
        dst: round(
            (after[dst][1] - before[dst][1]) * 8 / ((after[dst][0] - before[dst][0]) / 1e9) / 1e6, 2
        )
        for dst in after
    }
    return per_host, WINDOW_S


def _received(agents, flows: dict[str, tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Per receiver: (its clock in ns, payload bytes of its calibration flows so far)."""
    out = {}
    for dst in sorted({dst for _src, dst in flows.values()}):
        st = agents.stats(dst)
        out[dst] = (st.t_ns, sum(int(n) for fid, n in st.received.items() if fid in flows))
    return out


def _pause_until(t: float) -> None:
    """Wait until monotonic time ``t``: the measurement's schedule (nothing to wait for)."""
    threading.Event().wait(max(0.0, t - time.monotonic()))


def _forget_unseen(agents, flows: dict[str, tuple[str, str]], ends: set[tuple[str, str]]) -> None:
    """Drop the receiver ends of cancelled flows whose header never reached the receiver
    (cancelled while connecting): it has nothing to report.  (A header still in flight
    would be reported later; the run's backend ignores calibration flows.)"""
    for dst in sorted({flows[fid][1] for fid, side in ends if side == "receiver"}):
        seen = agents.stats(dst).received
        ends -= {
            (fid, "receiver")
            for fid, side in set(ends)
            if side == "receiver" and flows[fid][1] == dst and fid not in seen
        }


def _consume(agents, ends: set[tuple[str, str]], until: float) -> None:
    """Take calibration events off the queue until every end in ``ends`` (flow id, side)
    was reported or monotonic time ``until``; ``ends`` shrinks as they come."""
    while ends and time.monotonic() < until:
        for ev in agents.events(max(0.0, until - time.monotonic())):
            if ev.kind == "agent_lost":
                raise RuntimeError(f"calibration: agent of {ev.host} lost: {ev.get('error')}")
            side = {"flow_sent": "sender", "flow_received": "receiver"}.get(ev.kind, ev.get("side"))
            ends.discard((ev.flow_id, side))


def quiet_counters(read: Callable[[], Mapping[str, Mapping[Any, Any]]]):
    """The port counters (``read()``: switch -> port -> PortCount) once the burst's
    tail has left the fabric: packets still in host and switch queues when its flows
    ended or were reset are counted before the iteration, not in it.  Reads until no
    port moves ``QUIET_BYTES`` between two readings; after ``QUIET_TIMEOUT_S`` (traffic
    that does not stop), the last reading, with a warning."""
    deadline = time.monotonic() + QUIET_TIMEOUT_S
    last = read()
    while time.monotonic() < deadline:
        _pause_until(time.monotonic() + QUIET_INTERVAL_S)
        now = read()
        if _most_moved(now, last) < QUIET_BYTES:
            return now
        last = now
    log.warning("calibration: the fabric still carried traffic %.0f s after it", QUIET_TIMEOUT_S)
    return last


def _most_moved(now: Mapping[str, Mapping[Any, Any]], last: Mapping[str, Mapping[Any, Any]]) -> int:
    """The most bytes (rx + tx) any port moved from ``last`` to ``now``."""
    moved = [
        c.rx_bytes + c.tx_bytes - (b.rx_bytes + b.tx_bytes if b else 0)
        for sw, ports in now.items()
        for port, c in ports.items()
        for b in [last.get(sw, {}).get(port)]
    ]
    return max(moved, default=0)
