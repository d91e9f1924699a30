"""``coflowbed`` command line: one subcommand per module in ``coflowbed.commands``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``.  Errors a user can fix (bad scenario, bad flags) raise
``coflowbed.errors.UserError`` and end with a one-line message and exit code 2, as does
a run refused because another is alive (``coflowbed.runstate.RunBusy``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from coflowbed.errors import UserError
from coflowbed.runstate import RunBusy

COMMANDS = ("run", "compare", "clean", "workload", "simulate", "check", "plot", "report", "sweep")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="coflowbed",
        description="coflowbed: emulated testbed for coflow scheduling in LLM-training networks",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less log output")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        mod = importlib.import_module(f"coflowbed.commands.{name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def setup_logging(verbose: int, quiet: int) -> None:
    """stdlib logging; every record names its component (logger name)."""
    level = logging.INFO - 10 * verbose + 10 * quiet
    logging.basicConfig(
        level=max(logging.DEBUG, min(level, logging.CRITICAL)),
        format="%(asctime)s %(levelname).1s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose, args.quiet)
    try:
        return int(args._run(args) or 0)
    except (UserError, RunBusy) as exc:
        print(f"coflowbed: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
