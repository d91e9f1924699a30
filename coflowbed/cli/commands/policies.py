"""``coflowbed policies``: list the policies one can name (``coflowbed.cli.catalogue``)."""

from __future__ import annotations

import argparse

from coflowbed.cli import catalogue
from coflowbed.cli.options import add_plugin, plugin_files


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--plugin FILE``: list that file's policies too."""
    add_plugin(p)


def run(args: argparse.Namespace) -> int:
    """Print every registered policy (a plugin's too) on a line."""
    plugin_files(args)
    print("\n".join(catalogue.policy_lines()))
    return 0
