"""Traffic agents on loopback: how fast and how well timed are they?

Runs real agent processes (``coflowbed.emulation.agents.client.AgentSet``, root namespace,
127.0.0.1) and
prints, per scenario and repetition (times in ms):

- throughput: payload bits / (last byte received - first flow started);
- start skew: spread of ``flow_started`` over the flows of one release, and the lag
  from the orchestrator's first ``send`` call to the last ``flow_started``;
- completion agreement: |sender ``flow_sent`` t_ns - receiver ``last_ns``| per flow
  (median, max), and the same for ``written_ns`` (last write returned; median);
- completion spread: last - first ``last_ns`` (fairness among concurrent flows).

Scenarios: ``parallel`` (16 concurrent 5 MB flows among 4 agents, each agent sending to
the others) and ``incast`` (64 flows from 4 agents into one receiver).

    .venv/bin/python benchmarks/bench_agent.py [--repeat 3] [--incast-bytes 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coflowbed.emulation.agents.client import AgentEvent, AgentSet, SendOrder  # noqa: E402

TIMEOUT_S = 60.0


class LocalHost:
    """A host that is this machine's loopback (agents run as plain child processes)."""

    def __init__(self, name: str) -> None:
        """Name only; every host shares 127.0.0.1 and differs by data port."""
        self.name = name

    def IP(self) -> str:  # noqa: N802 - Mininet's spelling
        """Loopback."""
        return "127.0.0.1"

    def popen(self, args: list[str], **kw: Any) -> subprocess.Popen:
        """A plain local process."""
        return subprocess.Popen(args, **kw)


@dataclass
class Result:
    """Figures of one release of flows (times in ms)."""

    gbps: float
    skew_ms: float
    lag_ms: float
    agree_med_ms: float
    agree_max_ms: float
    written_med_ms: float
    spread_ms: float


def release(ags: AgentSet, flows: list[tuple[str, str, str, int]]) -> Result:
    """Send ``flows`` (id, src, dst, bytes) at once and measure them."""
    orders = [SendOrder(src, fid, *ags.address(dst), n, 1, 0) for fid, src, dst, n in flows]
    t0 = time.monotonic_ns()
    ags.send_many(orders)
    events = wait_all(ags, {f[0] for f in flows})
    started = [events[f[0]]["flow_started"].fields["t_ns"] for f in flows]
    last = [events[f[0]]["flow_received"].fields["last_ns"] for f in flows]
    sent = [events[f[0]]["flow_sent"].fields for f in flows]
    agree = [abs(s["t_ns"] - end) for s, end in zip(sent, last)]
    written = [abs(s["written_ns"] - end) for s, end in zip(sent, last)]
    return Result(
        gbps=8 * sum(f[3] for f in flows) / (max(last) - min(started)),
        skew_ms=(max(started) - min(started)) / 1e6,
        lag_ms=(max(started) - t0) / 1e6,
        agree_med_ms=statistics.median(agree) / 1e6,
        agree_max_ms=max(agree) / 1e6,
        written_med_ms=statistics.median(written) / 1e6,
        spread_ms=(max(last) - min(last)) / 1e6,
    )


def wait_all(ags: AgentSet, flow_ids: set[str]) -> dict[str, dict[str, AgentEvent]]:
    """Events by flow and kind until every flow was both sent and received."""
    events: dict[str, dict[str, AgentEvent]] = {fid: {} for fid in flow_ids}
    missing = set(flow_ids)
    while missing:
        ev = ags.next_event(TIMEOUT_S)
        if ev.kind in ("flow_failed", "agent_lost"):
            raise RuntimeError(f"{ev.host}: {ev.kind} {ev.flow_id}: {ev.fields}")
        events[ev.flow_id][ev.kind] = ev
        if {"flow_sent", "flow_received"} <= events[ev.flow_id].keys():
            missing.discard(ev.flow_id)
    return events


def parallel_flows(
    rep: int, hosts: list[str], per_host: int, nbytes: int
) -> list[tuple[str, str, str, int]]:
    """Each host sends ``per_host`` flows round-robin to the other hosts."""
    flows = []
    for i, src in enumerate(hosts):
        others = hosts[i + 1 :] + hosts[:i]
        flows += [
            (f"p{rep}-{src}-{k}", src, others[k % len(others)], nbytes) for k in range(per_host)
        ]
    return flows


def incast_flows(
    rep: int, senders: list[str], dst: str, count: int, nbytes: int
) -> list[tuple[str, str, str, int]]:
    """``count`` flows spread over ``senders``, all into ``dst``."""
    return [(f"i{rep}-{k}", senders[k % len(senders)], dst, nbytes) for k in range(count)]


def show(name: str, results: list[Result]) -> None:
    """One line per repetition and the median."""
    heads = ("Gbit/s", "skew", "lag", "agree med", "agree max", "written med", "spread")
    print(f"{name:<24}" + "".join(f"{h:>12}" for h in heads))
    med = Result(
        *(statistics.median(getattr(r, f) for r in results) for f in Result.__dataclass_fields__)
    )
    for label, r in [(f"  rep {i}", r) for i, r in enumerate(results)] + [("  median", med)]:
        print(
            f"{label:<24}" + "".join(f"{getattr(r, f):12.2f}" for f in Result.__dataclass_fields__)
        )


def main() -> int:
    """Run both scenarios and print their figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--parallel-bytes", type=int, default=5_000_000)
    p.add_argument("--incast-flows", type=int, default=64)
    p.add_argument("--incast-bytes", type=int, default=1_000_000)
    a = p.parse_args()
    senders = ["h1", "h2", "h3", "h4"]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} CPUs)")
    hosts = [LocalHost(h) for h in senders + ["h5"]]
    with (
        tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp,
        AgentSet(hosts, Path(tmp), 0) as ags,
    ):
        t = time.monotonic()
        ags.start()
        print(f"5 agents READY and attached in {1000 * (time.monotonic() - t):.0f} ms")
        release(ags, parallel_flows(-1, senders, 1, 100_000))  # warm-up: first connections
        show(
            f"parallel 16 x {a.parallel_bytes / 1e6:g} MB",
            [
                release(ags, parallel_flows(r, senders, 4, a.parallel_bytes))
                for r in range(a.repeat)
            ],
        )
        show(
            f"incast {a.incast_flows} x {a.incast_bytes / 1e6:g} MB",
            [
                release(ags, incast_flows(r, senders, "h5", a.incast_flows, a.incast_bytes))
                for r in range(a.repeat)
            ],
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
