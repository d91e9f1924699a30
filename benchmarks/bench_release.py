"""Where an emulated run's release path goes, per run (issue 49): from each run folder's
``summary.json``, the time from a coflow's release to its flows' start and to their first
byte, the controller's ``register`` round trip a release waited for, the level changes
written during the run (re-ranks), the bytes TCP sent again, and the run's iteration
emulated/simulated against the model without and with its measured control delay.

Static policies (levels fixed for the DAG) write nothing at release: their rows are the
floor a dynamic policy's release path is compared with.  Usage::

    .venv/bin/python benchmarks/bench_release.py FOLDER [FOLDER ...]

where a FOLDER is a run folder or a folder holding run folders (a comparison's, or
``bench_threeway.py``'s), searched two levels deep.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path, help="run folders or folders of them")
    return p.parse_args(argv)


def runs(folder: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The emulated runs (a ``release`` block in ``summary.json``) in or under ``folder``."""
    for path in [
        folder / "summary.json",
        *sorted(folder.glob("*/summary.json")),
        *sorted(folder.glob("*/*/summary.json")),
    ]:
        if path.is_file():
            summary = json.loads(path.read_text())
            if summary.get("release"):
                yield path.parent, summary


def ms(block: Mapping[str, Any] | None, key: str) -> str:
    """``median/p95`` of a stats block in ms ("-" when absent)."""
    stats = (block or {}).get(key)
    if not stats:
        return "-"
    return f"{stats['median']:.1f}/{stats['p95']:.1f}"


def seconds_as_ms(stats: Mapping[str, Any] | None) -> str:
    """``median/p95`` (ms) of a stats block kept in seconds, with its count."""
    if not stats or not stats.get("count"):
        return "-"
    return f"{1e3 * stats['median']:.1f}/{1e3 * stats['p95']:.1f} ({stats['count']})"


def ratio(x: float | None) -> str:
    """A ratio to 3 decimals."""
    return "-" if x is None else f"{x:.3f}"


def row(folder: Path, s: Mapping[str, Any]) -> str:
    """One run's line."""
    rel, fid = s["release"], s.get("fidelity") or {}
    retx = s.get("retransmitted") or {}
    moves = s.get("level_moves") or {}
    return (
        f"{folder.parent.name + '/' + folder.name:<34} {s.get('policy') or '-':<10} "
        f"{ms(rel, 'start_ms'):>11} {ms(rel, 'first_byte_ms'):>11} {ms(rel, 'write_ms'):>11} "
        f"{seconds_as_ms(s.get('level_change_s')):>16} "
        f"{moves.get('up', 0) + moves.get('down', 0):>6} "
        f"{100 * (retx.get('share') or 0):>6.2f} "
        f"{ratio(fid.get('iteration_ratio')):>7} {ratio(fid.get('iteration_ratio_with_delay')):>7}"
    )


def main(argv: list[str] | None = None) -> int:
    """Print the table of every emulated run found."""
    args = parse_args(argv)
    print(
        f"{'run':<34} {'policy':<10} {'start ms':>11} {'1st byte':>11} {'register':>11} "
        f"{'re-rank write':>16} {'moves':>6} {'retx %':>6} {'emu/sim':>7} {'+delay':>7}"
    )
    print("(ms: median/p95; re-rank write: the level changes written during the run, count;")
    print(" retx %: bytes TCP sent again; +delay: against the model with the run's delay)")
    found = 0
    for folder in args.folders:
        for run_dir, summary in runs(folder):
            print(row(run_dir, summary))
            found += 1
    if not found:
        print("bench_release: no emulated run folder (summary.json with a release block)")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
