"""``coflowbed`` command line: one subcommand per module in ``coflowbed.cli.commands``.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``; its
one-line help is in ``COMMANDS``.  Only the module of the subcommand given is imported,
so ``coflowbed --help`` and every command start without loading the others (the
simulator's numba kernels, matplotlib, Mininet).  Errors a user can fix (bad scenario,
bad flags) raise ``coflowbed.core.errors.UserError`` and end with a one-line message and
exit code 2, as does a run refused because another is alive
(``coflowbed.emulation.runstate.RunBusy``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from types import ModuleType

from coflowbed.core.errors import UserError
from coflowbed.emulation.runstate import RunBusy

COMMANDS = {
    "run": "run a scenario on the emulated fabric and write a results folder",
    "compare": "run a scenario under several policies and write one comparison table",
    "clean": "stop runs of this project and remove their processes, interfaces and state",
    "workload": "generate the coflow DAG of an LLM training job (YAML file or preset name)",
    "simulate": "simulate a scenario (or --trace) in the flow-level fluid model",
    "check": "compare an emulated run's CCTs with the flow-level model of the same scenario",
    "plot": "draw timeline.png, cct_cdf.png, gantt.png and (with samples/) utilisation.png and "
    "queues.png in a run folder (a sweep folder: its line plot)",
    "report": "write report.html (tables, plots, environment, fidelity) in run or comparison "
    "folders",
    "sweep": "run a grid of scenario keys x policies x seeds and write one table",
    "policies": "list the policies a scenario or --policy can name, with their parameters",
    "scenarios": "list the shipped scenarios (name one by its bare name in the Python API)",
    "presets": "list the LLM job presets a scenario's workload.job can name",
}


def command_module(name: str) -> ModuleType:
    """The module of subcommand ``name``, imported now: only the subcommand that runs is
    loaded (see the module docstring)."""
    return importlib.import_module(f"coflowbed.cli.commands.{name}")


def chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (its first word that is one), or None."""
    return next((a for a in argv if a in COMMANDS), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with every subcommand; the flags of ``command`` only."""
    parser = argparse.ArgumentParser(
        prog="coflowbed",
        description="coflowbed: emulated testbed for coflow scheduling in LLM-training networks",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less log output")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in COMMANDS.items():
        p = sub.add_parser(name, help=text, description=text)
        if name == command:
            add_verbosity(p)
            mod = command_module(name)
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    return parser


def add_verbosity(p: argparse.ArgumentParser) -> None:
    """``-v``/``-q`` after the subcommand too (they add to those before it)."""
    p.add_argument("-v", "--verbose", dest="sub_verbose", action="count", default=0)
    p.add_argument("-q", "--quiet", dest="sub_quiet", action="count", default=0)


def version() -> str:
    """The installed coflowbed's version (its package metadata)."""
    try:
        return metadata.version("coflowbed")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


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
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(chosen(argv)).parse_args(argv)
    setup_logging(args.verbose + args.sub_verbose, args.quiet + args.sub_quiet)
    try:
        return int(args._run(args) or 0)
    except (UserError, RunBusy) as exc:
        print(f"coflowbed: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (``coflowbed policies | head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
