"""``coflowbed run SCENARIO.yaml``: one emulated run, results in a run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from coflowbed.analysis.fidelity import describe
from coflowbed.emulation.precheck import check_can_run
from coflowbed.experiment.folders import new_run_dir
from coflowbed.experiment.scenario import load_scenario
from coflowbed.studies.single import emulate


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
    add_inter_job(p)
    add_sample_period(p)
    add_no_check(p)


def add_sample_period(p: argparse.ArgumentParser) -> None:
    """``--sample-period S``: the scenario's ``sample_period_s`` (0: no sampling)."""
    p.add_argument(
        "--sample-period",
        type=float,
        default=None,
        metavar="S",
        help="sample port counters and queue backlogs every S seconds during the run "
        "(samples/; 0: off; default: the scenario's sample_period_s, else "
        "coflowbed.experiment.scenario.DEFAULT_PERIOD_S)",
    )


def add_inter_job(p: argparse.ArgumentParser) -> None:
    """``--inter-job MODE``: the scenario's ``workload.inter_job`` (several jobs)."""
    p.add_argument(
        "--inter-job",
        default=None,
        help="how several jobs share the levels: fair, priority or crux "
        "(default: the scenario's workload.inter_job)",
    )


def overrides_of(args: argparse.Namespace) -> dict | None:
    """Scenario keys the flags override (``--policy``, ``--inter-job``,
    ``--sample-period``)."""
    out: dict = {}
    if getattr(args, "policy", None):
        out["policy"] = args.policy
    if getattr(args, "inter_job", None):
        out["workload.inter_job"] = args.inter_job
    if getattr(args, "sample_period", None) is not None:
        out["sample_period_s"] = args.sample_period
    return out or None


def add_no_check(p: argparse.ArgumentParser) -> None:
    """``--no-check``: skip the fidelity simulation after each emulated run."""
    p.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="do not simulate the run afterwards for its fidelity figure "
        "(summary.json 'fidelity'; docs/simulator.md)",
    )


def run(args: argparse.Namespace) -> int:
    """Validate, run, report; exit 0 only for a complete run."""
    scen = load_scenario(args.scenario, overrides_of(args))
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
