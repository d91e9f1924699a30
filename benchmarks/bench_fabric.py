"""Fabric benchmark (root; run under the fabric lock):

    flock /tmp/coflowbed-fabric.lock .venv/bin/python benchmarks/bench_fabric.py

Prints: bring-up time of a 2-spine/4-leaf/2-host fabric (controller ready included),
time for a level change to be confirmed by every leaf (applied_s, median of N), and
the aggregate goodput of many concurrent inter-leaf TCP flows on 100 Mbit/s links.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.client import ControllerClient  # noqa: E402
from controller.launcher import start_controller  # noqa: E402
from topo import probe  # noqa: E402
from topo.net import start_fabric  # noqa: E402
from topo.plan import FabricPlan  # noqa: E402


def parse_args() -> argparse.Namespace:
    """Options."""
    p = argparse.ArgumentParser()
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--leaves", type=int, default=4)
    p.add_argument("--hosts", type=int, default=2, help="hosts per leaf")
    p.add_argument("--mbps", type=float, default=100.0, help="every link's rate")
    p.add_argument("--changes", type=int, default=20, help="level changes to time")
    p.add_argument("--flows", type=int, default=4, help="TCP connections per sender")
    p.add_argument("--seconds", type=float, default=6.0, help="traffic duration")
    return p.parse_args()


def level_changes(client: ControllerClient, n: int) -> list[float]:
    """applied_s of ``n`` level changes of one tag (every leaf rewrites its rules)."""
    out = []
    for i in range(n):
        out.append(client.set([{"tag": 1, "level": i % 2}])["applied_s"])
    client.clear([1])
    return out


def aggregate_goodput(fab, plan: FabricPlan, flows: int, seconds: float) -> tuple[float, int]:
    """Every host of leaf l sends to the same-index host of leaf l+1 (cyclic) with
    ``flows`` connections; total Mbit/s measured by the sinks and the number of flows."""
    pairs = [(h, plan.host(f"h{h.leaf % plan.leaves + 1}{h.index}")) for h in plan.hosts]
    warmup, window = 1.0, seconds - 1.5
    sinks = [probe.start_sink(fab.host(dst.name), 6000, flows, warmup, window)
             for _src, dst in pairs]
    sources = [probe.start_source(fab.host(src.name), dst.ip, 6000, 0, seconds, flows)
               for src, dst in pairs]
    for s in sources:
        probe.finish(s, seconds + 30)
    total = sum(probe.sink_window(s, seconds + 30).mbps() for s in sinks)
    return total, flows * len(pairs)


def main() -> int:
    """Run the three measurements and print the figures."""
    a = parse_args()
    plan = FabricPlan(a.spines, a.leaves, a.hosts, a.mbps, a.mbps)
    with tempfile.TemporaryDirectory(prefix="cfb-bench-") as tmp:
        run_dir = Path(tmp)
        (run_dir / "plan.json").write_text(plan.to_json())
        t0 = time.monotonic()
        ctl = start_controller(run_dir / "plan.json", run_dir)
        try:
            fab = start_fabric(plan, run_dir, ctl.of_port, api_socket=ctl.api_socket)
            bringup = time.monotonic() - t0
            try:
                with ControllerClient(ctl.api_socket, timeout=20) as client:
                    applied = level_changes(client, a.changes)
                total, nflows = aggregate_goodput(fab, plan, a.flows, a.seconds)
            finally:
                fab.stop()
        finally:
            ctl.stop()
    print(f"fabric {a.spines} spines x {a.leaves} leaves x {a.hosts} hosts, {a.mbps:g} Mbit/s links")
    print(f"bring-up (controller + OVS + Mininet + tc + routing ready): {bringup:.2f} s "
          f"(fabric alone {fab.bringup_s:.2f} s)")
    print(f"level change applied on all {a.leaves} leaves: median {statistics.median(applied) * 1e3:.2f} ms, "
          f"max {max(applied) * 1e3:.2f} ms over {len(applied)} changes")
    print(f"aggregate goodput of {nflows} concurrent inter-leaf flows: {total:.1f} Mbit/s "
          f"({total / len(plan.hosts):.1f} Mbit/s per sending host)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
