"""``coflowbed report DIR...``: a self-contained ``report.html`` in each folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.analysis.report.html import write_report
from coflowbed.core.errors import UserError


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``report``."""
    p.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="run or comparison folder")


def check_folder(d: Path) -> None:
    """UserError unless ``d`` holds a run's summary.json or a comparison's CSV files."""
    if not d.is_dir():
        raise UserError(str(d), None, "not a folder")
    if (d / "summary.json").is_file() and not (d / "coflows.csv").is_file():
        raise UserError(str(d), None, "summary.json without coflows.csv: not a run folder")
    if not (d / "summary.json").is_file() and not any(d.glob("*.csv")):
        raise UserError(str(d), None, "no summary.json and no CSV file: not a run or comparison")


def run(args: argparse.Namespace) -> int:
    """Check every folder first, then write each report and print its path."""
    for d in args.dirs:
        check_folder(d)
    for d in args.dirs:
        print(write_report(d))
    return 0
