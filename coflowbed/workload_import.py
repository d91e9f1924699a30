"""SimAI/AICB and ASTRA-sim workload imports from the two places users ask for them:
``coflowbed workload import FILE --format ...`` and a scenario's
``workload: {import: FILE, format: ...}``.  Both validate their options here and call
``workload.imports``; errors are one line naming the file or flag, key and reason."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.config import Section, choice, integer, number, string
from coflowbed.errors import UserError
from workload.dag import Dag
from workload.imports import FORMATS, ImportOptions, read_workload
from workload.imports.build import to_dag
from workload.nccl import ALGORITHMS, DEFAULT_LINK_GBPS

IMPORT_WORD = "import"  # ``coflowbed workload import FILE``


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``coflowbed workload import FILE``."""
    g = parser.add_argument_group("import (coflowbed workload import FILE --format ...)")
    g.add_argument("file", nargs="?", type=Path, help="workload file to import")
    g.add_argument("--format", choices=FORMATS, help="aicb (SimAI/AICB) or astrasim (1.0 text)")
    g.add_argument("--byte-scale", type=float, default=1.0, help="multiply every flow's bytes")
    g.add_argument("--gpus-per-host", type=int, default=1, help="ranks packed per host [1]")
    g.add_argument("--npus", type=int, help="ASTRA-sim NPU count [all GPUs of the hosts]")
    g.add_argument("--algorithm", choices=ALGORITHMS, default="ring", help="all-reduce [ring]")
    g.add_argument("--iterations", type=int, default=1, help="passes over the layers [1]")
    g.add_argument("--cycle-ns", type=float, default=1.0, help="ASTRA-sim cycle time [1 ns]")


def options_from_args(args: argparse.Namespace) -> ImportOptions:
    """Checked import options from the flags."""
    for flag, value in (("--byte-scale", args.byte_scale), ("--cycle-ns", args.cycle_ns)):
        if not value > 0:
            raise UserError(flag, str(value), "must be > 0")
    for flag, value in (("--gpus-per-host", args.gpus_per_host), ("--iterations", args.iterations)):
        if value < 1:
            raise UserError(flag, str(value), "must be >= 1")
    if args.npus is not None and args.npus < 1:
        raise UserError("--npus", str(args.npus), "must be >= 1")
    return ImportOptions(
        args.gpus_per_host, args.byte_scale, args.algorithm, DEFAULT_LINK_GBPS, args.iterations
    )


def dag_from_args(args: argparse.Namespace, hosts_for) -> Dag:
    """The imported DAG for the CLI; ``hosts_for(n)`` gives the host names of n hosts
    (from --fabric / --hosts, or generic ones)."""
    if args.file is None or args.format is None:
        raise UserError("workload import", None, "needs FILE and --format aicb|astrasim")
    opts = options_from_args(args)
    npus = args.npus
    if args.format == "astrasim" and npus is None:
        if not (args.fabric or args.hosts):
            raise UserError("--npus", None, "needed for an astrasim file without --fabric/--hosts")
        npus = len(hosts_for(1)) * opts.gpus_per_host
    wl = read_workload(args.file, args.format, npus or 1, args.cycle_ns * 1e-9)
    return to_dag(wl, hosts_for(wl.layout.ranks // opts.gpus_per_host), opts)


def dag_from_scenario(sec: Section, hosts: list[str], path: Path) -> Dag:
    """``workload: {import: FILE, format: aicb|astrasim, byte_scale, gpus_per_host, npus,
    algorithm, iterations, cycle_ns}`` on the scenario's hosts (FILE relative to it)."""
    file = path.parent / sec.need("import", string)
    fmt = sec.need("format", choice(FORMATS))
    opts = ImportOptions(
        sec.get("gpus_per_host", 1, integer(1)),
        sec.get("byte_scale", 1.0, number(positive=True)),
        sec.get("algorithm", "ring", choice(ALGORITHMS)),
        sec.get("link_gbps", DEFAULT_LINK_GBPS, number(positive=True)),
        sec.get("iterations", 1, integer(1)),
    )
    npus = sec.get("npus", len(hosts) * opts.gpus_per_host, integer(1))
    cycle_s = sec.get("cycle_ns", 1.0, number(positive=True)) * 1e-9
    return to_dag(read_workload(file, fmt, npus, cycle_s), hosts, opts)
