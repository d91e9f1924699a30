"""``coflowbed run SCENARIO.yaml``: one emulated run, results in a run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.analysis.fidelity import describe
from coflowbed.cli.options import (
    add_inter_job,
    add_no_check,
    add_plugin,
    add_sample_period,
    add_set,
    overrides_of,
    plugin_files,
)
from coflowbed.emulation.precheck import check_can_run
from coflowbed.experiment.folders import new_run_dir
from coflowbed.experiment.scenario import load_scenario
from coflowbed.studies.single import emulate


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``run``."""
    p.add_argument(
        "scenario", type=Path, help="scenario YAML, or a shipped one by name (coflowbed scenarios)"
    )
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
    add_inter_job(p)
    add_sample_period(p)
    add_no_check(p)
    add_set(p)
    add_plugin(p)


def run(args: argparse.Namespace) -> int:
    """Validate, run, report; exit 0 only for a complete run."""
    scen = load_scenario(args.scenario, overrides_of(args), plugin_files(args))
    check_can_run(scen)  # before the folder is made
    out = args.out if args.out else new_run_dir(args.results, scen)
    outcome = emulate(scen, out.resolve(), args.check)
    s = outcome.summary
    state = "PARTIAL" if s.partial else "complete"
    print(
        f"{state}: {s.coflows}/{s.coflows_total} coflows, avg CCT {s.avg_cct_s} s, "
        f"p95 {s.p95_cct_s} s, iteration {s.iteration_time_s} s, "
        f"{describe(s.fidelity)} -> {outcome.out_dir}"
    )
    return 1 if s.partial else 0
