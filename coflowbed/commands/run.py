"""``coflowbed run SCENARIO.yaml``: one emulated run, results in a run folder."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from coflowbed.errors import UserError
from coflowbed.scenario import Scenario, load_scenario

NAME = "run"
HELP = "run a scenario on the emulated fabric and write a results folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``run``."""
    p.add_argument("scenario", type=Path, help="scenario YAML")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default: results/<time>-<topo>-<name>-<policy>/)",
    )
    p.add_argument(
        "--results", type=Path, default=Path("results"), help="parent of the default results folder"
    )
    p.add_argument("--policy", default=None, help="override the scenario's policy")
    add_no_check(p)


def add_no_check(p: argparse.ArgumentParser) -> None:
    """``--no-check``: skip the fidelity simulation after each emulated run."""
    p.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="do not simulate the run afterwards for its fidelity figure "
        "(summary.json 'fidelity'; docs/simulator.md)",
    )


def check_can_run(scen: Scenario) -> None:
    """UserError before anything starts if this machine cannot run ``scen``."""
    from coflowbed.fault_inject import check_supported

    check_supported(scen.faults, scen.switch, scen.source)
    if scen.sim_fabric is not None:
        raise UserError(scen.source, "sim_fabric", "simulator only: coflowbed run needs fabric")
    if os.geteuid() != 0:
        raise UserError(scen.source, None, "an emulated run needs root (Mininet, OVS, tc)")
    if scen.switch == "bmv2" and shutil.which("simple_switch_grpc") is None:
        raise UserError(
            scen.source,
            "switch",
            "bmv2 needs BMv2's simple_switch_grpc, which is not installed here; "
            "use the Vagrant VM (docs/bmv2.md) or switch: ovs",
        )
    for tool in ("ovs-vswitchd", "ovsdb-server", "mnexec"):
        if shutil.which(tool) is None:
            raise UserError(scen.source, None, f"{tool} not installed: run scripts/install.sh")


def run(args: argparse.Namespace) -> int:
    """Validate, run, report; exit 0 only for a complete run."""
    from coflowbed.fidelity import describe
    from coflowbed.rundir import new_run_dir
    from coflowbed.runner import run_scenario

    overrides = {"policy": args.policy} if args.policy else None
    scen = load_scenario(args.scenario, overrides)
    check_can_run(scen)
    out = args.out if args.out else new_run_dir(args.results, scen)
    outcome = run_scenario(scen, out.resolve(), args.check)
    s = outcome.summary
    state = "PARTIAL" if s.partial else "complete"
    print(
        f"{state}: {s.coflows}/{s.coflows_total} coflows, avg CCT {s.avg_cct_s} s, "
        f"p95 {s.p95_cct_s} s, iteration {s.iteration_time_s} s, "
        f"{describe(s.fidelity)} -> {outcome.out_dir}"
    )
    return 1 if s.partial else 0
