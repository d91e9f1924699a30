"""``coflowbed scenarios``: list the scenarios one can name (``coflowbed.cli.catalogue``)."""

from __future__ import annotations

import argparse

from coflowbed.cli import catalogue


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``scenarios`` takes no flags."""


def run(args: argparse.Namespace) -> int:
    """Print every shipped scenario on a line (name them by file or bare name)."""
    print("\n".join(catalogue.scenario_lines()))
    return 0
