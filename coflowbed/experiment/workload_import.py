"""SimAI/AICB and ASTRA-sim workload imports from the two places users ask for them:
``coflowbed workload import FILE --format ...`` and a scenario's
``workload: {import: FILE, format: ...}``.  Both validate their options here and call
``workload.imports``; errors are one line naming the file or flag, key and reason."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.core.config import Section, choice, integer, number, string
from coflowbed.core.errors import UserError
from workload.dag import Dag
from workload.imports import FORMATS, ImportOptions, read_workload
from workload.imports.build import to_dag
from workload.nccl import ALGORITHMS, DEFAULT_LINK_GBPS

IMPORT_WORD = "import"  # ``coflowbed workload import FILE``


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``coflowbed workload import FILE`` (defaults applied in options_from_args,
    so that giving one without ``import`` can be refused)."""
    g = parser.add_argument_group("import (coflowbed workload import FILE --format ...)")
    g.add_argument("file", nargs="?", type=Path, help="workload file to import")
    g.add_argument("--format", choices=FORMATS, help="aicb (SimAI/AICB) or astrasim (1.0 text)")
    g.add_argument("--byte-scale", type=float, help="multiply every flow's bytes [1]")
    g.add_argument("--gpus-per-host", type=int, help="ranks packed per host [1]")
    g.add_argument("--npus", type=int, help="ASTRA-sim NPU count [all GPUs of the hosts]")
    g.add_argument("--algorithm", choices=ALGORITHMS, help="all-reduce algorithm [ring]")
    g.add_argument("--iterations", type=int, help="passes over the layers [1]")
    g.add_argument("--cycle-ns", type=float, help="ASTRA-sim cycle time [1 ns]")


FLAGS = ("format", "byte_scale", "gpus_per_host", "npus", "algorithm", "iterations", "cycle_ns")


def refuse_import_flags(args: argparse.Namespace) -> None:
    """A job spec takes none of the import flags: name the first one given."""
    for name in FLAGS:
        if getattr(args, name) is not None:
            flag = "--" + name.replace("_", "-")
            raise UserError(flag, None, f"only with 'workload {IMPORT_WORD} FILE'")


def options_from_args(args: argparse.Namespace) -> ImportOptions:
    """Checked import options from the flags (defaults for those not given)."""
    if args.set:
        raise UserError("--set", None, "only for job specs, not imports")
    scale = 1.0 if args.byte_scale is None else args.byte_scale
    gph = 1 if args.gpus_per_host is None else args.gpus_per_host
    its = 1 if args.iterations is None else args.iterations
    if not scale > 0:
        raise UserError("--byte-scale", str(scale), "must be > 0")
    for flag, value in (("--gpus-per-host", gph), ("--iterations", its)):
        if value < 1:
            raise UserError(flag, str(value), "must be >= 1")
    if args.npus is not None and args.npus < 1:
        raise UserError("--npus", str(args.npus), "must be >= 1")
    if args.cycle_ns is not None and not args.cycle_ns > 0:
        raise UserError("--cycle-ns", str(args.cycle_ns), "must be > 0")
    return ImportOptions(gph, scale, args.algorithm or "ring", DEFAULT_LINK_GBPS, its)


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
    wl = read_workload(args.file, args.format, npus or 1, (args.cycle_ns or 1.0) * 1e-9)
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
