"""Sampling during an emulated run: every ``period_s``, the switch ports' byte counters
(one read of ``/proc/net/dev``: the switch-side veth ends live in the root namespace)
and the backlog of every level's queues on the switch egress ports (one ``tc -s -j
qdisc show``: the bfifo under each bucket class of ``topo.qos``).

It runs on a thread of its own, on a deadline schedule (tick k at ``t0 + k * period``,
ticks missed while late are skipped and counted) and waits with ``Event.wait``.  No
controller round trip: an OpenFlow port-stats request per period would load the
controller and every ``ovs-vswitchd`` thread the run is measuring.  ``docs/results.md``
has the measured cost.
"""

from __future__ import annotations

import csv
import json
import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from topo.leafspine import intf_name
from topo.qos import TC_TIMEOUT_S, bucket_level

log = logging.getLogger("sampler")

SAMPLES_DIR = "samples"


@dataclass(frozen=True)
class PortSample:
    """Cumulative counters of one switch port at time ``t_s`` (run time)."""

    t_s: float
    dev: str
    rx_bytes: int
    tx_bytes: int


@dataclass(frozen=True)
class QueueSample:
    """Backlog of one level's queues (all its buckets) on one egress port at ``t_s``."""

    t_s: float
    dev: str
    level: int
    backlog_bytes: int
    backlog_packets: int
    drops: int


@dataclass(frozen=True)
class SamplingInfo:
    """How the sampling went: ``summary.json`` ``sampling`` and ``samples/meta.json``."""

    period_s: float
    ticks: int
    missed_ticks: int
    mean_cost_ms: float
    max_cost_ms: float
    link_mbps: dict[str, float]


def parse_net_dev(text: str, devs: set[str]) -> dict[str, tuple[int, int]]:
    """``/proc/net/dev`` -> {dev: (rx_bytes, tx_bytes)} for the devices in ``devs``."""
    out = {}
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        name = name.strip()
        if name in devs:
            cols = rest.split()
            out[name] = (int(cols[0]), int(cols[8]))
    return out


def parse_qdiscs(text: str, devs: set[str]) -> dict[tuple[str, int], tuple[int, int, int]]:
    """``tc -s -j qdisc show`` -> {(dev, level): (backlog bytes, packets, drops)}, the
    buckets of each level summed."""
    out: dict[tuple[str, int], tuple[int, int, int]] = {}
    for q in json.loads(text or "[]"):
        level = bucket_level(q.get("parent", ""))
        if q.get("dev") not in devs or level is None:
            continue
        b, p, d = out.get((q["dev"], level), (0, 0, 0))
        out[(q["dev"], level)] = (b + q["backlog"], p + q["qlen"], d + q["drops"])
    return out


def read_net_dev() -> str:
    """The root namespace's interface counters."""
    return Path("/proc/net/dev").read_text()


def read_qdiscs() -> str:
    """Every root-namespace qdisc with its statistics, as JSON text."""
    res = subprocess.run(
        ["tc", "-s", "-j", "qdisc", "show"], capture_output=True, text=True, timeout=TC_TIMEOUT_S
    )
    if res.returncode != 0:
        raise RuntimeError(f"tc -s -j qdisc show failed: {res.stderr.strip()}")
    return res.stdout


class Sampler:
    """Samples ``link_mbps``'s devices every ``period_s`` on its own thread, from
    ``start`` to ``stop``; ``write`` puts the samples in the run folder."""

    def __init__(
        self,
        link_mbps: dict[str, float],
        period_s: float,
        clock: Callable[[], float] = time.monotonic,
        net_dev: Callable[[], str] = read_net_dev,
        qdiscs: Callable[[], str] = read_qdiscs,
    ) -> None:
        self.link_mbps, self.period_s, self.clock = dict(link_mbps), period_s, clock
        self._devs = set(link_mbps)
        self._net_dev, self._qdiscs = net_dev, qdiscs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self.ports: list[PortSample] = []
        self.queues: list[QueueSample] = []
        self._costs: list[float] = []
        self._missed = 0
        self.t0 = 0.0
        self.error: str | None = None

    def start(self) -> None:
        """Begin sampling now (tick 0 at once)."""
        self.t0 = self.clock()
        self._thread.start()

    def stop(self) -> None:
        """End the thread (after the tick in progress)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=TC_TIMEOUT_S + 5)

    def _loop(self) -> None:
        """Tick on the deadline schedule until stopped; the first failure ends it."""
        k = 0
        while not self._stop.is_set():
            try:
                self.sample_once()
            except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning("sampling stopped: %s", self.error)
                return
            k = self._next_tick(k)
            self._stop.wait(max(0.0, self.t0 + k * self.period_s - self.clock()))

    def _next_tick(self, k: int) -> int:
        """The next tick not already past (the ones skipped are counted as missed)."""
        due = int((self.clock() - self.t0) // self.period_s) + 1
        nxt = max(k + 1, due)
        self._missed += nxt - k - 1
        return nxt

    def sample_once(self) -> None:
        """One sample of every port and every level queue."""
        began = self.clock()
        counters = parse_net_dev(self._net_dev(), self._devs)
        queues = parse_qdiscs(self._qdiscs(), self._devs)
        t = began - self.t0
        self.ports += [PortSample(t, d, rx, tx) for d, (rx, tx) in sorted(counters.items())]
        self.queues += [
            QueueSample(t, d, lv, b, p, dr) for (d, lv), (b, p, dr) in sorted(queues.items())
        ]
        self._costs.append(self.clock() - began)

    def info(self) -> SamplingInfo:
        """The sampling's own figures."""
        costs = self._costs or [0.0]
        return SamplingInfo(
            self.period_s,
            len(self._costs),
            self._missed,
            round(1000 * sum(costs) / len(costs), 3),
            round(1000 * max(costs), 3),
            self.link_mbps,
        )

    def write(self, out_dir: Path, t_zero: float | None) -> SamplingInfo:
        """``samples/ports.csv``, ``samples/queues.csv`` and ``samples/meta.json``, times
        shifted to the run's time zero (monotonic ``t_zero``, the first release)."""
        shift = 0.0 if t_zero is None else t_zero - self.t0
        folder = Path(out_dir) / SAMPLES_DIR
        folder.mkdir(parents=True, exist_ok=True)
        write_rows(folder / "ports.csv", PortSample, _shifted(self.ports, shift))
        write_rows(folder / "queues.csv", QueueSample, _shifted(self.queues, shift))
        info = self.info()
        meta = {**asdict(info), "error": self.error}
        (folder / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        return info


def _shifted(rows: Iterable, shift: float) -> list:
    """``rows`` with ``t_s`` less ``shift`` (rounded to the microsecond)."""
    return [type(r)(**{**asdict(r), "t_s": round(r.t_s - shift, 6)}) for r in rows]


def write_rows(path: Path, cls: type, rows: list) -> None:
    """Dataclass rows of ``cls`` as CSV (a header even when empty)."""
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[f.name for f in fields(cls)])
        w.writeheader()
        w.writerows(asdict(r) for r in rows)


def switch_links(plan) -> dict[str, float]:
    """Every switch-side port of ``plan`` and its link rate (Mbit/s)."""
    return {
        intf_name(n, p): link.bw_mbps
        for link in plan.links
        for n, p in ((link.node1, link.port1), (link.node2, link.port2))
        if not n.startswith("h")
    }
