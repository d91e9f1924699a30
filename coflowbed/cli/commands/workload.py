"""``coflowbed workload JOB -o DAG.json``: turn an LLM job spec (file or preset name)
into a coflowbed-dag JSON file and print coflows and bytes per type;
``coflowbed workload import FILE --format aicb|astrasim`` does the same for a SimAI/AICB
or ASTRA-sim workload file (coflowbed.experiment.workload_import)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from coflowbed.cli.options import add_set, parse_sets
from coflowbed.core.errors import UserError
from coflowbed.experiment.simfabric import parse_fabric_flag
from coflowbed.experiment.workload_import import (
    IMPORT_WORD,
    add_import_arguments,
    dag_from_args,
    refuse_import_flags,
)
from topo.plan import FabricPlan
from workload import critical_path, dagjson, generate
from workload.dag import Dag
from workload.jobspec import load_job
from workload.placement import generic_hosts
from workload.presets import resolve

log = logging.getLogger("coflowbed.workload")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the subcommand."""
    parser.add_argument("job", help="job YAML file or preset name (workload/presets/)")
    parser.add_argument("-o", "--output", type=Path, help="DAG JSON file to write")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument(
        "--fabric",
        metavar="SxLxH",
        help="use the host names of a leaf-spine fabric of S spines, L leaves and H hosts "
        "per leaf (the order of a scenario's fabric keys), e.g. 2x4x2 or "
        "leafspine:2x4x2 (default: generic names h0..hN-1)",
    )
    hosts.add_argument("--hosts", help="comma-separated host names, used in order")
    add_set(parser, "job")
    parser.add_argument(
        "--line-rate-mbps",
        type=float,
        help="also print the critical-path lower bound at this host rate",
    )
    add_import_arguments(parser)


def host_names(args: argparse.Namespace, needed: int) -> list[str]:
    """Host names from --fabric, --hosts, or generic ones."""
    if args.hosts:
        names = [h.strip() for h in args.hosts.split(",") if h.strip()]
        twice = sorted({h for h in names if names.count(h) > 1})
        if twice:
            raise UserError("--hosts", ", ".join(twice), "a host is named twice")
        return names
    if args.fabric:
        flag = parse_fabric_flag(args.fabric)
        if flag.kind != "leafspine" or not flag.dims:
            raise UserError("--fabric", args.fabric, "expected a leaf-spine's SxLxH, e.g. 2x4x2")
        spines, leaves, per_leaf = flag.dims
        return FabricPlan(spines, leaves, per_leaf, 100.0, 100.0).host_names()
    return generic_hosts(needed)


def type_table(dag) -> str:
    """Coflows, flows and bytes per coflow type, with a total line."""
    rows: dict[str, list[int]] = {}
    for cf in dag.coflows:
        r = rows.setdefault(cf.ctype.value, [0, 0, 0])
        r[0] += 1
        r[1] += len(cf.flows)
        r[2] += cf.bytes
    lines = [f"{'type':<6}{'coflows':>10}{'flows':>10}{'bytes':>16}"]
    for t in sorted(rows):
        lines.append(f"{t:<6}{rows[t][0]:>10}{rows[t][1]:>10}{rows[t][2]:>16}")
    tot = [sum(r[i] for r in rows.values()) for i in range(3)]
    lines.append(f"{'total':<6}{tot[0]:>10}{tot[1]:>10}{tot[2]:>16}")
    return "\n".join(lines)


def check_outputs(args: argparse.Namespace) -> None:
    """UserError, before any work, for an output folder that does not exist or a line
    rate that is not a positive number."""
    if args.output is not None and not Path(args.output).resolve().parent.is_dir():
        raise UserError("-o/--output", str(args.output), "its folder does not exist")
    if args.line_rate_mbps is not None and not args.line_rate_mbps > 0:
        raise UserError("--line-rate-mbps", None, f"must be > 0, got {args.line_rate_mbps:g}")


def run(args: argparse.Namespace) -> int:
    """Generate (or import), write and summarise the DAG."""
    check_outputs(args)
    if args.job == IMPORT_WORD:
        return run_import(args)
    if args.file is not None:
        raise UserError(
            str(args.file), None, f"unexpected argument (did you mean '{IMPORT_WORD}'?)"
        )
    refuse_import_flags(args)

    job = load_job(resolve(args.job), parse_sets(args.set), ("--set", ""))
    hosts = (
        None
        if job.placement.stage_hosts and not args.hosts and not args.fabric
        else host_names(args, job.hosts_needed)
    )
    dag = generate(job, hosts)
    return _write_and_summarise(
        args,
        dag,
        f"job {job.name}: {job.world_gpus} GPUs on {job.hosts_needed} hosts, "
        f"{len(dag.computes)} computes, byte_scale {job.byte_scale:g}",
    )


def _write_and_summarise(args: argparse.Namespace, dag: Dag, headline: str) -> int:
    """Write ``dag`` to ``--output`` if given; print ``headline``, the per-type table and
    (with ``--line-rate-mbps``) the critical path."""
    if args.output:
        dagjson.dump(dag, args.output)
        log.info("wrote %s", args.output)
    print(headline)
    print(type_table(dag))
    if args.line_rate_mbps:
        print(
            f"critical path at {args.line_rate_mbps:g} Mbit/s: "
            f"{critical_path(dag, args.line_rate_mbps * 1e6):.3f} s"
        )
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Import, write and summarise a SimAI/AICB or ASTRA-sim workload's DAG."""
    dag = dag_from_args(args, lambda n: host_names(args, n))
    m = dag.meta
    return _write_and_summarise(
        args,
        dag,
        f"{m['format']} {args.file}: {m['parallelism']}, ga {m['ga']}, {m['layers']} layers on "
        f"{len(m['hosts'])} hosts, {len(dag.computes)} computes, byte_scale {m['byte_scale']:g}",
    )
