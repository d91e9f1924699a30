"""``coflowbed check RUN_DIR``: simulate the scenario of an emulated run with the levels
the run used and report measured / simulated CCT per coflow and on average."""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict
from pathlib import Path

from coflowbed.analysis import fidelity, releasepath
from coflowbed.analysis.fidelity import CoflowComparison, sum_ratios_by_type, write_table
from coflowbed.core.errors import UserError
from coflowbed.experiment.binding import FABRIC_KINDS
from coflowbed.experiment.simfabric import parse_fabric_flag


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``check``."""
    p.add_argument("run_dir", type=Path, help="results folder of an emulated run")
    p.add_argument("--out", type=Path, help="also write the per-coflow table as CSV here")
    p.add_argument(
        "--fabric",
        default="leafspine",
        metavar="KIND",
        help="the run's own fabric simulated as leafspine (default) or bigswitch (its "
        "hosts on one switch at their rate)",
    )


def run(args: argparse.Namespace) -> int:
    """Simulate, compare, print the table and the mean ratio."""
    rows = [asdict(r) for r in fidelity.check_run(args.run_dir, _kind(args.fabric))]
    _print(rows)
    _print_links(args.run_dir)
    print(releasepath.measure(args.run_dir).describe())
    if args.out:
        write_table([CoflowComparison(**r) for r in rows], args.out)
    return 0


def _kind(text: str) -> str:
    """The kind ``--fabric`` names (the one grammar's, coflowbed.experiment.simfabric):
    a run is checked on its own fabric, so a kind alone, one of FABRIC_KINDS."""
    flag = parse_fabric_flag(text)
    if flag.dims or flag.kind not in FABRIC_KINDS:
        raise UserError(
            "--fabric", text, f"check simulates the run's own fabric: {' or '.join(FABRIC_KINDS)}"
        )
    return flag.kind


def _print_links(run_dir: Path) -> None:
    """Bytes per leaf-spine link: switch counters / the model's placement
    (``fidelity.spine_links``), when the run has counters and no link faults."""
    inputs = fidelity.read_inputs(run_dir)
    rows = fidelity.spine_links(run_dir, inputs, fidelity.read_dag(run_dir).coflows)
    if rows is None:
        print("spine-link bytes: not checked (link faults, one leaf, or no counters.json)")
        return
    cells = [f"{r.link} x{r.ratio:.3f}" for r in rows if r.ratio is not None]
    print(f"spine-link bytes, switch counters / model placement: {', '.join(cells) or '-'}")


def _print(rows: list[dict]) -> None:
    """The per-coflow table, the mean ratio and the summed ratio per coflow type."""
    print(f"{'coflow':<24} {'level':>5} {'measured_s':>11} {'simulated_s':>11} {'ratio':>7}")
    fmt = lambda x, p: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    for r in rows:
        print(
            f"{r['coflow_id']:<24} {fmt(r['level'], 0):>5} {fmt(r['measured_cct_s'], 4):>11} "
            f"{fmt(r['simulated_cct_s'], 4):>11} {fmt(r['ratio'], 3):>7}"
        )
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None and math.isfinite(r["ratio"])]
    mean = sum(ratios) / len(ratios) if ratios else None
    print(f"mean measured/simulated CCT ratio over {len(ratios)} coflows: {fmt(mean, 3)}")
    by_type = sum_ratios_by_type([CoflowComparison(**r) for r in rows])
    summed = ", ".join(f"{k} {fmt(v, 3)}" for k, v in by_type.items())
    print(f"summed measured/simulated CCT per coflow type: {summed or '-'}")
