"""``coflowbed compare SCENARIO --policies a,b,c``: one workload, several policies."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.analysis.report.headline import answer_sentences
from coflowbed.analysis.report.tables import short_table
from coflowbed.cli.options import (
    add_engine,
    add_no_check,
    add_plugin,
    add_set,
    engine_of,
    overrides_of,
    plugin_files,
)
from coflowbed.core.errors import UserError
from coflowbed.experiment.folders import folder_path
from coflowbed.experiment.scenario import load_scenario
from coflowbed.studies.compare import compare, emulated, parse_policies, simulated, with_policy


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``compare``."""
    p.add_argument(
        "scenario", type=Path, help="scenario YAML, or a shipped one by name (coflowbed scenarios)"
    )
    p.add_argument("--policies", required=True, help="comma-separated policy names")
    p.add_argument(
        "--out", type=Path, default=None, help="folder (default results/<time>-compare-<name>)"
    )
    p.add_argument(
        "--sim",
        action="store_true",
        help="use the flow-level simulator instead of the emulated fabric",
    )
    p.add_argument(
        "--repeat",
        default="1",
        help="runs per policy, interleaved a b c a b c ... (default 1)",
    )
    p.add_argument(
        "--seeds",
        default=None,
        help="comma-separated seed of each repetition (as many as --repeat; default: "
        "the scenario's seed for all); sets the scenario's seed and an LLM job's "
        "ep_skew.seed",
    )
    add_no_check(p)
    add_set(p)
    add_plugin(p)
    add_engine(p)


def repeat_count(text: str) -> int:
    """--repeat as a positive integer; UserError otherwise."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise UserError("command line", "--repeat", f"must be an integer >= 1, got {text!r}")
    return n


def seed_list(text: str | None, repeat: int) -> list[int] | None:
    """--seeds as one non-negative integer per repetition (None without the flag)."""
    if text is None:
        return None
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        seeds = [-1]
    if any(s < 0 for s in seeds):
        raise UserError("command line", "--seeds", f"not a list of integers >= 0: {text!r}")
    if len(seeds) != repeat:
        raise UserError(
            "command line", "--seeds", f"{len(seeds)} seeds for --repeat {repeat} (one each)"
        )
    return seeds


def run(args: argparse.Namespace) -> int:
    """Run every policy, print the table; return 1 if the comparison is partial (a run
    partial, or interrupted)."""
    repeat = repeat_count(args.repeat)
    seeds = seed_list(args.seeds, repeat)
    scen = load_scenario(args.scenario, overrides_of(args), plugin_files(args))
    names = parse_policies(args.policies, "command line")  # the plugins' policies known
    for name in names:
        with_policy(scen, name)  # POLICY+MODE needs workload.jobs: fail before any run
    out = args.out or folder_path(Path("results"), "compare", scen.name)
    if args.engine != "fluid" and not args.sim:
        raise UserError("--engine", None, "a simulator's engine: give --sim too")
    engine = engine_of(args)
    run_one = simulated(engine) if args.sim else emulated(scen, args.check)
    result = compare(scen, names, out.resolve(), run_one, repeat, seeds)
    print(short_table(result))
    print(" ".join(answer_sentences(result)))
    print(f"-> {out} (full table: compare.md, compare.csv; report: coflowbed report {out})")
    return 1 if result.partial else 0
