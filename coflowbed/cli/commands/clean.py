"""``coflowbed clean``: end what this project's runs left behind, nothing else."""

from __future__ import annotations

import argparse

from coflowbed.emulation.cleanup import clean_all


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``clean`` takes no flags."""


def run(args: argparse.Namespace) -> int:
    """Clean every registered run and stray marked process; print what was done."""
    reports = clean_all()
    if not reports:
        print("nothing to clean")
    for r in reports:
        print(
            f"run {r['run']}: ended {len(r.get('runner', [])) + len(r.get('processes', []))} "
            f"processes, deleted {len(r.get('interfaces', []))} interfaces"
        )
    return 0
