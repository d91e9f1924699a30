"""Fabric benchmark (root; run under the fabric lock):

    flock /tmp/coflowbed-fabric.lock .venv/bin/python benchmarks/bench_fabric.py

Prints: bring-up time of a 2-spine/4-leaf/2-host fabric (controller ready included),
time for a level change to be confirmed by every leaf (applied_s, median of N), and
the aggregate goodput of many concurrent inter-leaf TCP flows on 100 Mbit/s links, as a
fraction of nominal (hosts x host rate: every host sends to and receives from one other
host at full rate), with the spread over receiving hosts and the CPU the run used.

Levers, to alternate before/after in one sitting: ``--mtu`` (every interface),
``--no-tso`` (OVS ``userspace-tso-enable=false``, veth offloads off), ``--pin``
(ovs-vswitchd on the first CPU, the traffic processes on the others), ``--send-size``
(bytes per send() of each source), ``--burst-ms`` (HTB burst of the port schedulers),
``--kernel-tcp`` (the hosts keep the kernel's TCP defaults instead of the runs' own,
``topo.hosttcp``), ``--host-sysctl`` (more TCP settings inside every host).
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.client import ControllerClient  # noqa: E402
from controller.coflow_table import TagEntry  # noqa: E402
from controller.launcher import start_controller  # noqa: E402
from topo import hosttcp, probe, qos  # noqa: E402
from topo.bmv2 import disable_offloads  # noqa: E402
from topo.leafspine import intf_name  # noqa: E402
from topo.net import start_fabric, switch_interfaces  # noqa: E402
from topo.plan import DEFAULT_MTU, FabricPlan  # noqa: E402

PORT = 6000
WARMUP_S = 1.0


def parse_args() -> argparse.Namespace:
    """Options."""
    p = argparse.ArgumentParser()
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--leaves", type=int, default=4)
    p.add_argument("--hosts", type=int, default=2, help="hosts per leaf")
    p.add_argument("--mbps", type=float, default=100.0, help="every link's rate")
    p.add_argument("--changes", type=int, default=20, help="level changes to time (0: none)")
    p.add_argument("--flows", type=int, default=4, help="TCP connections per sender")
    p.add_argument("--seconds", type=float, default=6.0, help="traffic duration")
    p.add_argument("--mtu", type=int, default=DEFAULT_MTU, help="MTU of every interface")
    p.add_argument(
        "--no-tso",
        action="store_true",
        help="OVS userspace-tso-enable=false, and segmentation/checksum offloads "
        "off on every veth (else TCP checksums fail)",
    )
    p.add_argument(
        "--pin",
        action="store_true",
        help="ovs-vswitchd on the first CPU, sources and sinks on the others",
    )
    p.add_argument(
        "--send-size", type=int, default=probe.SEND_BYTES, help="bytes per send() of each source"
    )
    p.add_argument(
        "--burst-ms",
        type=float,
        default=qos.BURST_S * 1e3,
        help="HTB burst of every port in ms of its rate (0: one frame)",
    )
    p.add_argument(
        "--host-sysctl",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="sysctl set in every host's namespace after the runs' own "
        "(topo.hosttcp; repeatable), e.g. net.ipv4.tcp_congestion_control=bbr",
    )
    p.add_argument(
        "--gso-max-bytes",
        type=int,
        default=hosttcp.GSO_MAX_BYTES,
        help="largest GSO segment of every host interface, as in the runs (0: the kernel's)",
    )
    p.add_argument(
        "--kernel-tcp",
        action="store_true",
        help="leave the hosts' TCP at the kernel's defaults (not the runs' settings)",
    )
    return p.parse_args()


@dataclass
class Goodput:
    """What the traffic phase measured."""

    per_host: dict[str, float]  # receiving host -> Mbit/s
    flows: int
    ovs_cpu: float  # ovs-vswitchd CPU time / window (1.0 = one core)
    busy_cpu: float  # machine CPU busy time / window (all cores)
    switch_pps: float  # packets (skbs: a GSO segment is one) received by all switch ports /s
    switch_pkt_bytes: float  # their mean size

    @property
    def total(self) -> float:
        """Aggregate Mbit/s."""
        return sum(self.per_host.values())


def level_changes(client: ControllerClient, n: int) -> list[float]:
    """applied_s of ``n`` level changes of one tag (every leaf rewrites its rules)."""
    out = []
    for i in range(n):
        out.append(client.set([TagEntry(1, i % 2)])["applied_s"])
    client.clear([1])
    return out


def tcp_settings(a: argparse.Namespace) -> list[str]:
    """KEY=VALUE for the hosts: the runs' own (topo.hosttcp) unless --kernel-tcp, then
    the --host-sysctl ones (later wins)."""
    runs = [] if a.kernel_tcp else [f"{k}={v}" for k, v in hosttcp.host_sysctls().items()]
    return runs + list(a.host_sysctl)


def host_sysctls(fab, plan: FabricPlan, settings: list[str]) -> None:
    """``sysctl -w`` each KEY=VALUE of ``settings`` inside every host's namespace."""
    if not settings:
        return
    for h in plan.hosts:
        argv = ["mnexec", "-a", str(fab.host(h.name).pid), "sysctl", "-q", "-w", *settings]
        subprocess.run(argv, check=True, capture_output=True, timeout=30)


def offloads_off(fab, plan: FabricPlan) -> None:
    """Segmentation and checksum offloads off on both ends of every link."""
    for dev in switch_interfaces(plan):
        disable_offloads(dev)
    for h in plan.hosts:
        disable_offloads(intf_name(h.name, 0), fab.host(h.name).pid)


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of process ``pid`` (and what it starts later) onto ``cpus``."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), cpus)


def cpu_split() -> tuple[set[int], set[int]]:
    """(CPUs for ovs-vswitchd, CPUs for the traffic) when pinning."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--pin needs at least 2 CPUs")
    return {cpus[0]}, set(cpus[1:])


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def switch_rx(plan: FabricPlan) -> tuple[int, int]:
    """(packets, bytes) received so far by every switch port (kernel counters: a GSO
    segment counts once)."""
    pkts = octets = 0
    for dev in switch_interfaces(plan):
        stats = Path("/sys/class/net", dev, "statistics")
        pkts += int((stats / "rx_packets").read_text())
        octets += int((stats / "rx_bytes").read_text())
    return pkts, octets


def busy_cpu_s() -> float:
    """CPU seconds the whole machine spent not idle (/proc/stat), all cores."""
    vals = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = vals[3] + vals[4]  # idle + iowait
    return (sum(vals[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def start_pairs(
    fab, plan: FabricPlan, a: argparse.Namespace, window: float, traffic_cpus: set[int] | None
):
    """Every host of leaf l sends to the same-index host of leaf l+1 (cyclic) with
    ``a.flows`` connections; returns (sinks by receiving host, sources)."""
    pairs = [(h, plan.host(f"h{h.leaf % plan.leaves + 1}{h.index}")) for h in plan.hosts]
    sinks = {
        dst.name: probe.start_sink(fab.host(dst.name), PORT, a.flows, WARMUP_S, window)
        for _src, dst in pairs
    }
    if traffic_cpus:
        for proc in sinks.values():
            pin(proc.pid, traffic_cpus)
    sources = [
        probe.start_source(fab.host(src.name), dst.ip, PORT, 0, a.seconds, a.flows, a.send_size)
        for src, dst in pairs
    ]
    if traffic_cpus:
        for proc in sources:
            pin(proc.pid, traffic_cpus)
    return sinks, sources


def aggregate_goodput(
    fab, plan: FabricPlan, a: argparse.Namespace, traffic_cpus: set[int] | None
) -> Goodput:
    """Run the traffic and read the sinks; CPU use is sampled over the sinks' window."""
    window = a.seconds - 1.5
    sinks, sources = start_pairs(fab, plan, a, window, traffic_cpus)
    ovs_pid = fab.ovs.pids()[0]
    time.sleep(WARMUP_S)  # measurement schedule (the sinks' warm-up), not synchronisation
    ovs0, busy0, rx0, t0 = proc_cpu_s(ovs_pid), busy_cpu_s(), switch_rx(plan), time.monotonic()
    time.sleep(window)  # measurement schedule
    ovs1, busy1, rx1, t1 = proc_cpu_s(ovs_pid), busy_cpu_s(), switch_rx(plan), time.monotonic()
    for s in sources:
        probe.finish(s, a.seconds + 30)
    per_host = {name: probe.sink_window(s, a.seconds + 30).mbps() for name, s in sinks.items()}
    pkts, octets = rx1[0] - rx0[0], rx1[1] - rx0[1]
    dt = t1 - t0
    return Goodput(
        per_host,
        a.flows * len(sources),
        (ovs1 - ovs0) / dt,
        (busy1 - busy0) / dt,
        pkts / dt,
        octets / max(pkts, 1),
    )


def run(a: argparse.Namespace, plan: FabricPlan) -> tuple[float, float, list[float], Goodput]:
    """Bring everything up, measure, tear down: (bring-up s, fabric bring-up s, level
    change times, goodput)."""
    with tempfile.TemporaryDirectory(prefix="cfb-bench-") as tmp:
        run_dir = Path(tmp)
        (run_dir / "plan.json").write_text(plan.to_json())
        t0 = time.monotonic()
        ctl = start_controller(run_dir / "plan.json", run_dir)
        try:
            t_fabric = time.monotonic()
            fab = start_fabric(plan, run_dir, ctl.of_port, userspace_tso=not a.no_tso)
            try:
                with ControllerClient(ctl.api_socket, timeout=20) as client:
                    client.wait_ready(60)  # routing confirmed: part of the bring-up
                    fabric_s = time.monotonic() - t_fabric
                    bringup = time.monotonic() - t0
                    applied = level_changes(client, a.changes)
                host_sysctls(fab, plan, tcp_settings(a))
                if a.gso_max_bytes:
                    hosttcp.apply_host_gso(fab.host_nics(), a.gso_max_bytes)
                if a.no_tso:
                    offloads_off(fab, plan)
                ovs_cpus, traffic_cpus = cpu_split() if a.pin else (None, None)
                if ovs_cpus:
                    pin(fab.ovs.pids()[0], ovs_cpus)
                goodput = aggregate_goodput(fab, plan, a, traffic_cpus)
            finally:
                fab.stop()
        finally:
            ctl.stop()
    return bringup, fabric_s, applied, goodput


def report(
    a: argparse.Namespace,
    plan: FabricPlan,
    bringup: float,
    fabric_s: float,
    applied: list[float],
    g: Goodput,
) -> None:
    """Print the figures."""
    nominal = len(plan.hosts) * plan.host_bw_mbps
    rates = sorted(g.per_host.values())
    print(
        f"fabric {a.spines} spines x {a.leaves} leaves x {a.hosts} hosts, {a.mbps:g} Mbit/s "
        f"links; mtu {plan.mtu}, tso {'off' if a.no_tso else 'on'}, "
        f"pin {'on' if a.pin else 'off'}, send {a.send_size} B, burst {a.burst_ms:g} ms, "
        f"host gso {a.gso_max_bytes or 'kernel'} B"
        + (", kernel TCP" if a.kernel_tcp else ", runs' host TCP")
        + "".join(f", {kv}" for kv in a.host_sysctl)
    )
    print(
        f"bring-up (controller + OVS + Mininet + tc + routing ready): {bringup:.2f} s "
        f"(fabric alone {fabric_s:.2f} s)"
    )
    if applied:
        print(
            f"level change applied on all {a.leaves} leaves: median "
            f"{statistics.median(applied) * 1e3:.2f} ms, max {max(applied) * 1e3:.2f} ms "
            f"over {len(applied)} changes"
        )
    print(
        f"aggregate goodput of {g.flows} concurrent inter-leaf flows: {g.total:.1f} Mbit/s "
        f"= {g.total / nominal:.3f} of nominal {nominal:g} ({len(plan.hosts)} hosts x "
        f"{plan.host_bw_mbps:g} Mbit/s)"
    )
    print(
        f"per receiving host: min {rates[0]:.1f} / median {statistics.median(rates):.1f} / "
        f"max {rates[-1]:.1f} Mbit/s"
    )
    print(
        f"CPU during the window: ovs-vswitchd {g.ovs_cpu:.2f} cores, machine busy "
        f"{g.busy_cpu:.2f} of {os.cpu_count()} cores; switch ports received "
        f"{g.switch_pps / 1e3:.1f} kpkt/s of {g.switch_pkt_bytes:.0f} B on average"
    )


def main() -> int:
    """Run the measurements and print the figures."""
    a = parse_args()
    qos.BURST_S = a.burst_ms / 1e3  # this process builds the tc lines: the lever applies
    plan = FabricPlan(a.spines, a.leaves, a.hosts, a.mbps, a.mbps, a.mtu)
    report(a, plan, *run(a, plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
