"""Benchmark of the packet-level engine (coflowbed.packet, on ns-3) beside the fluid model.

Per scenario: the time to load ns-3 (once per process), then for the packet run its wall
time, ns-3 events and events per wall second, policy calls, level re-marks, drops and
retransmissions, the iteration time and average CCT of both engines, and the
packet/fluid CCT ratio of every coflow (the first ``--rows``; then per coflow type the
min, median and max ratio).  Usage::

    .venv/bin/python benchmarks/bench_packet.py [--scenarios mechanism,tiny-moe]
        [--policy NAME] [--transport tcp|dctcp|cubic] [--scale 1.0] [--rows 20]
        [--fair-queue-buckets 16]
    .venv/bin/python benchmarks/bench_packet.py --preset qwen-moe-12l --set parallelism.dp=16
        [--per-leaf 8] [--spines 4] [--rate-gbps 1] [--policy fair]   # 64 hosts
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coflowbed.cli.options import parse_sets  # noqa: E402
from coflowbed.experiment.binding import scenario_fabric, scenario_policy  # noqa: E402
from coflowbed.experiment.scenario import load_scenario  # noqa: E402
from coflowbed.packet import PacketConfig, ns3bed, simulate_packets  # noqa: E402
from coflowbed.sim import LeafSpine, simulate  # noqa: E402
from controller import policies  # noqa: E402
from workload import generate  # noqa: E402
from workload.dag import Dag  # noqa: E402
from workload.placement import generic_hosts  # noqa: E402
from workload.presets import load_preset  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", default="mechanism,tiny-moe", help="names in coflowbed/scenarios")
    p.add_argument("--policy", help="policy name (default: each scenario's)")
    p.add_argument("--transport", default="tcp", choices=("tcp", "dctcp", "cubic"))
    p.add_argument("--scale", type=float, default=1.0, help="factor on bytes and link rates")
    p.add_argument("--rows", type=int, default=20, help="coflows listed one per line")
    p.add_argument(
        "--fair-queue-buckets",
        type=int,
        default=PacketConfig().fair_queue_buckets,
        help="round-robin buckets per band of every port (0: one FIFO per band)",
    )
    p.add_argument(
        "--preset",
        help="instead of scenarios: this LLM preset (one iteration) on generic hosts, on a "
        "leaf-spine of --per-leaf hosts per leaf and --spines at --rate-gbps, 8 levels",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a preset override (e.g. parallelism.dp=16), repeatable",
    )
    p.add_argument("--per-leaf", type=int, default=8, help="hosts per leaf")
    p.add_argument("--spines", type=int, default=4)
    p.add_argument("--rate-gbps", type=float, default=1.0)
    return p.parse_args(argv)


def preset_dag(preset: str, sets: list[str]) -> tuple[Dag, list[str]]:
    """One iteration of ``preset`` with the ``KEY=VALUE`` overrides ``sets``, on generic
    hosts: its DAG and the hosts."""
    job = load_preset(preset, {"iterations": 1, **parse_sets(sets)})
    hosts = generic_hosts(job.hosts_needed)
    return generate(job, hosts), hosts


def preset_inputs(args: argparse.Namespace) -> tuple[Dag, LeafSpine, int]:
    """The DAG of ``--preset`` on its leaf-spine, and 8 levels."""
    dag, hosts = preset_dag(args.preset, args.set)
    rate = args.rate_gbps * 1e9
    return dag, LeafSpine(tuple(hosts), args.per_leaf, args.spines, rate, rate), 8


def policy_of(scen, name: str | None):
    """The scenario's policy, or the registered one named."""
    return scenario_policy(scen) if name is None else policies.get(name)


def bench(name: str, args: argparse.Namespace) -> None:
    """Run one scenario (or ``--preset``) in both engines and print the figures."""
    if args.preset:
        dag, fab, levels = preset_inputs(args)
        make = lambda: policies.get(args.policy or "fair")  # noqa: E731
    else:
        scen = load_scenario(REPO / "coflowbed" / "scenarios" / f"{name}.yaml", {})
        dag, fab, levels = scen.dag, scenario_fabric(scen), scen.levels
        make = lambda: policy_of(scen, args.policy)  # noqa: E731
    fluid = simulate(dag, fab, make(), levels)
    t0 = time.perf_counter()
    packet = simulate_packets(
        dag,
        fab,
        make(),
        levels,
        transport=args.transport,
        scale=args.scale,
        config=PacketConfig(fair_queue_buckets=args.fair_queue_buckets),
    )
    wall = time.perf_counter() - t0
    s, ps, fs = packet.engine.stats, packet.summary(), fluid.summary()
    flows = sum(len(cf.flows) for cf in dag.coflows)
    print(
        f"\n{name}: {len(dag.coflows)} coflows, {flows} flows, policy {ps.policy}, "
        f"{args.transport}, scale {args.scale:g}, {fab.description}"
    )
    print(
        f"  packet: wall {wall:.2f} s (engine {s.wall_s:.2f} s), {s.events:,} events "
        f"({s.events / max(s.wall_s, 1e-9):,.0f}/s), simulated {s.sim_end_s:.3f} s, "
        f"{s.policy_calls} policy calls, {s.remarks} re-marks, drops per band "
        f"{s.drops_per_band}, {s.retransmits} retransmissions"
    )
    print(
        f"  iteration: fluid {fs.iteration_time_s} s, packet {ps.iteration_time_s} s; "
        f"avg CCT fluid {fs.avg_cct_s:.4f} s, packet {ps.avg_cct_s:.4f} s"
    )
    print_ratios(fluid.coflow_records(), packet.coflow_records(), args.rows)


def print_ratios(fluid, packet, rows: int) -> None:
    """Packet/fluid CCT ratio per coflow (the first ``rows``) and per coflow type."""
    by_type: dict[str, list[float]] = defaultdict(list)
    print(f"  {'coflow':<28} {'type':<6} {'fluid s':>9} {'packet s':>9} {'ratio':>6}")
    for k, (f, p) in enumerate(zip(fluid, packet)):
        if f.cct_s is None or p.cct_s is None or f.cct_s <= 0:
            continue
        ratio = p.cct_s / f.cct_s
        by_type[f.ctype].append(ratio)
        if k < rows:
            print(f"  {f.coflow_id:<28} {f.ctype:<6} {f.cct_s:9.4f} {p.cct_s:9.4f} {ratio:6.3f}")
    for t, rs in sorted(by_type.items()):
        print(
            f"  {t}: {len(rs)} coflows, packet/fluid CCT min {min(rs):.3f} "
            f"median {statistics.median(rs):.3f} max {max(rs):.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    """Load ns-3 once, then benchmark every scenario."""
    args = parse_args(argv)
    t0 = time.perf_counter()
    ns3bed.load()
    print(f"ns-3 loaded in {time.perf_counter() - t0:.1f} s (once per process)")
    for name in [args.preset] if args.preset else args.scenarios.split(","):
        bench(name, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
