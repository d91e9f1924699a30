"""Issue 48's study: how far the packet-level fair baseline falls below max-min, under TCP
and DCTCP, and what Hermod and the naive single rules (PP-first, EP-first, DP-first) gain
over fair in packets against in the fluid model, on an EP-heavy and a DP-heavy LLM job.

Each job is one iteration of a preset on generic hosts (``--set`` overrides, e.g. a DP
degree for more hosts) on a non-blocking leaf-spine as the emulator's scenarios use (2
hosts per leaf, 2 spines, 50 Mbit/s: small-moe's fabric); every policy runs in the fluid
model and, per transport, in the packet engine (ns-3, loaded once).  Prints per
job and transport: fair's packet/fluid iteration ratio (how far TCP's fair sharing falls
below max-min), then per policy its iteration time and speed-up over fair in each
engine.  Usage::

    .venv/bin/python benchmarks/bench_packet_study.py [--jobs ep:small-moe,dp:llama3-70b]
        [--policies fair,hermod,pp-first,ep-first,dp-first] [--transports tcp,dctcp]
        [--rate-gbps 0.05] [--per-leaf 2] [--spines 2] [--set ep:parallelism.dp=4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_packet import preset_dag  # noqa: E402  (the same preset loading)

from coflowbed.packet import ns3bed, simulate_packets  # noqa: E402
from coflowbed.sim import LeafSpine, simulate  # noqa: E402
from controller import policies  # noqa: E402
from workload.dag import Dag  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", default="ep:small-moe,dp:llama3-70b", help="LABEL:PRESET,...")
    p.add_argument("--policies", default="fair,hermod,pp-first,ep-first,dp-first")
    p.add_argument("--transports", default="tcp,dctcp")
    p.add_argument("--rate-gbps", type=float, default=0.05, help="every link's rate")
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--per-leaf", type=int, default=2, help="hosts per leaf")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="LABEL:KEY=VALUE",
        help="an override of one job's preset, repeatable",
    )
    args = p.parse_args(argv)
    if "fair" not in args.policies.split(","):
        p.error("--policies: fair is the baseline, list it")
    return args


def job_dag(label: str, preset: str, sets: list[str]) -> tuple[Dag, list[str]]:
    """One iteration of ``preset`` with the ``--set`` overrides given for ``label``."""
    mine = [kv for who, _, kv in (item.partition(":") for item in sets) if who == label]
    return preset_dag(preset, mine)


def study(label: str, preset: str, args: argparse.Namespace) -> None:
    """Every policy of one job in the fluid model and, per transport, in packets."""
    dag, hosts = job_dag(label, preset, args.set)
    rate = args.rate_gbps * 1e9
    fabric = LeafSpine(tuple(hosts), args.per_leaf, args.spines, rate, rate)
    names = args.policies.split(",")
    fluid = {p: simulate(dag, fabric, policies.get(p), 8).summary().iteration_time_s for p in names}
    print(f"\n{label} ({preset}, {len(hosts)} hosts, {fabric.description})")
    for transport in args.transports.split(","):
        packet, wall = {}, 0.0
        for p in names:
            t0 = time.perf_counter()
            run = simulate_packets(dag, fabric, policies.get(p), 8, transport=transport)
            packet[p], wall = run.summary().iteration_time_s, wall + time.perf_counter() - t0
        print(
            f"  {transport}: fair packet/fluid {packet['fair'] / fluid['fair']:.3f} "
            f"({wall:.0f} s wall for {len(names)} runs)"
        )
        print(f"    {'policy':<10} {'fluid s':>9} {'packet s':>9} {'xfluid':>7} {'xpacket':>8}")
        for p in names:
            print(
                f"    {p:<10} {fluid[p]:9.3f} {packet[p]:9.3f} "
                f"{fluid['fair'] / fluid[p]:7.3f} {packet['fair'] / packet[p]:8.3f}"
            )


def main(argv: list[str] | None = None) -> int:
    """Load ns-3 once, then every job."""
    args = parse_args(argv)
    t0 = time.perf_counter()
    ns3bed.load()
    print(f"ns-3 loaded in {time.perf_counter() - t0:.1f} s")
    for item in args.jobs.split(","):
        label, _, preset = item.partition(":")
        study(label, preset, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
