"""``coflowbed sweep SWEEP.yaml``: a parameter grid x policies x seeds on a local process
pool or a Ray cluster; one table (docs/sweeps.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from coflowbed.cli.options import add_plugin, plugin_files
from coflowbed.core.errors import UserError
from coflowbed.experiment.folders import folder_path
from coflowbed.studies.sweep import backends
from coflowbed.studies.sweep.driver import run_sweep
from coflowbed.studies.sweep.spec import find_sweep, load_sweep, with_plugins


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``sweep``."""
    p.add_argument("sweep", type=Path, help="sweep YAML (or a shipped sweep's name)")
    p.add_argument("--backend", choices=("local", "ray"), default="local")
    p.add_argument("--address", help="Ray cluster address (default: a local Ray instance)")
    p.add_argument("--out", type=Path, help="folder (default results/<time>-sweep-<name>)")
    p.add_argument("--jobs", type=int, help="local worker processes (default: the core count)")
    add_plugin(p)


def run(args: argparse.Namespace) -> int:
    """Run the sweep, print the table's path and counts; 1 if partial, 130 if stopped."""
    plugins = plugin_files(args)  # imported first: the sweep's policies may be theirs
    spec = with_plugins(load_sweep(find_sweep(args.sweep)), plugins)
    backend = _backend(args, spec.mode)
    out = args.out or folder_path(Path("results"), "sweep", spec.name)
    outcome = run_sweep(spec, out.resolve(), backend)
    state = "INTERRUPTED" if outcome.interrupted else "PARTIAL" if outcome.partial else "complete"
    print(
        f"{state}: {len(outcome.rows)}/{outcome.runs} runs in the table "
        f"({outcome.skipped} already complete, skipped; {outcome.ran} run now) -> {out}/sweep.csv"
    )
    return 130 if outcome.interrupted else 1 if outcome.partial else 0


def _backend(args: argparse.Namespace, mode: str):
    """The backend the flags name; UserError on flags that do not fit together."""
    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs", None, f"must be >= 1, got {args.jobs}")
    if args.address and args.backend != "ray":
        raise UserError("--address", None, "only with --backend ray")
    if mode == "emulate":
        if args.backend == "ray" or (args.jobs or 1) > 1:
            raise UserError(
                str(args.sweep), "mode", "emulate runs one fabric at a time: local, --jobs 1"
            )
        return backends.serial
    if args.backend == "ray":
        return backends.ray(args.address)
    return backends.local(args.jobs or os.cpu_count() or 1)
