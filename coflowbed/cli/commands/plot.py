"""``coflowbed plot RUN_DIR``: timeline and CCT plots from a run folder's files."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.analysis.plots.run import plot_run
from coflowbed.core.errors import UserError
from coflowbed.studies.sweep.plot import plot_sweep


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``plot``."""
    p.add_argument(
        "run_dir", type=Path, help="a results folder with coflows.csv, or a sweep folder"
    )


def run(args: argparse.Namespace) -> int:
    """Draw the plots and print their paths."""
    if (args.run_dir / "sweep.json").is_file():  # a sweep folder: its line plot
        print(plot_sweep(args.run_dir))
        return 0
    if not (args.run_dir / "coflows.csv").is_file():
        raise UserError(str(args.run_dir), None, "no coflows.csv here: not a run folder")
    for path in plot_run(args.run_dir):
        print(path)
    return 0
