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
    add_no_check(p)


def _policies(text: str, source: str) -> list[str]:
    from controller import policies

    names = [p.strip() for p in text.split(",") if p.strip()]
    known = policies.names()
    bad = [n for n in names if n not in known]
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
    """Run every policy, print the table, return 1 if any run was partial."""
    from coflowbed.compare import compare
    from coflowbed.scenario import load_scenario

    scen = load_scenario(args.scenario)
    names = _policies(args.policies, "command line")
    out = args.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S')}-compare-{scen.name}"
    run_one = _simulate_one if args.sim else _emulate_one(scen, args.check)
    rows = compare(scen, names, out.resolve(), run_one)
    print((out / "compare.md").read_text(), end="")
    print(f"-> {out}")
    return 1 if any(r["partial"] for r in rows) else 0


def _emulate_one(scen, check: bool = True):
    """One policy of a comparison on the emulated fabric (``check``: with its fidelity)."""
    from coflowbed.commands.run import check_can_run
    from coflowbed.runner import run_scenario

    check_can_run(scen)
    return lambda s, out: run_scenario(s, out, check).summary


def _simulate_one(scen, out):
    """One policy of a comparison in the flow-level simulator (the scenario's K levels)."""
    from coflowbed.commands.simulate import make_policy, scenario_faults, sim_fabric_of
    from coflowbed.sim import simulate

    policy = make_policy(scen.policy, scen.policy_params, scen.source)
    fabric = sim_fabric_of(scen)
    faults = scenario_faults(scen, fabric)
    result = simulate(scen.dag, fabric, policy, scen.levels, faults=faults)
    return result.write(out, {"source": scen.source, "simulated": True})
