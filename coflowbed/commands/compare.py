"""``coflowbed compare SCENARIO --policies a,b,c``: one workload, several policies."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from coflowbed.commands.run import add_no_check
from coflowbed.errors import UserError

NAME = "compare"
HELP = "run a scenario under several policies and write one comparison table"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``compare``."""
    p.add_argument("scenario", type=Path)
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


def _policies(text: str, source: str) -> list[str]:
    from controller import policies
    from controller.policies.interjob import INTER_JOB_MODES

    names = [p.strip() for p in text.split(",") if p.strip()]
    known = policies.names()
    # POLICY+MODE: the policy with inter_job MODE (a scenario with workload.jobs)
    split = [n.partition("+") for n in names]
    bad = [
        n
        for n, (p, plus, m) in zip(names, split)
        if p not in known or (plus and m not in INTER_JOB_MODES)
    ]
    if not names or bad:
        raise UserError(
            source,
            "--policies",
            f"unknown policy {bad[0]!r} (known: {', '.join(known)})"
            if bad
            else "needs at least one policy",
        )
    return names


def run(args: argparse.Namespace) -> int:
    """Run every policy, print the table; return 1 if the comparison is partial (a run
    partial, or interrupted)."""
    from coflowbed.compare_runs import compare, with_policy
    from coflowbed.scenario import load_scenario

    names = _policies(args.policies, "command line")
    repeat = repeat_count(args.repeat)
    seeds = seed_list(args.seeds, repeat)
    scen = load_scenario(args.scenario)
    for name in names:
        with_policy(scen, name)  # POLICY+MODE needs workload.jobs: fail before any run
    out = args.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S')}-compare-{scen.name}"
    run_one = _simulate_one if args.sim else _emulate_one(scen, args.check)
    result = compare(scen, names, out.resolve(), run_one, repeat, seeds)
    from coflowbed.compare_files import answer

    print((out / "compare.md").read_text(), end="")
    print(answer(result))
    print(f"-> {out}")
    return 1 if result.partial else 0


def _emulate_one(scen, check: bool = True):
    """One policy of a comparison on the emulated fabric (``check``: with its fidelity)."""
    from coflowbed.commands.run import check_can_run
    from coflowbed.compare_runs import Stopped
    from coflowbed.runner import run_scenario

    check_can_run(scen)

    def one(s, out):
        outcome = run_scenario(s, out, check)
        if outcome.interrupted:
            raise Stopped(outcome.error or "interrupted", outcome.summary)
        return outcome.summary

    return one


def _simulate_one(scen, out):
    """One policy of a comparison in the flow-level simulator (the scenario's K levels)."""
    from coflowbed.commands.simulate import scenario_faults, scenario_policy, sim_fabric_of
    from coflowbed.sim import simulate

    policy = scenario_policy(scen)
    fabric = sim_fabric_of(scen)
    faults = scenario_faults(scen, fabric)
    result = simulate(scen.dag, fabric, policy, scen.levels, faults=faults)
    return result.write(out, {"source": scen.source, "simulated": True})
