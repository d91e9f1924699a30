"""``coflowbed presets``: list the presets one can name (``coflowbed.cli.catalogue``)."""

from __future__ import annotations

import argparse

from coflowbed.cli import catalogue


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``presets`` takes no flags."""


def run(args: argparse.Namespace) -> int:
    """Print every job preset on a line."""
    print("\n".join(catalogue.preset_lines()))
    return 0
