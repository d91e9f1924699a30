"""``coflowbed simulate``: run a scenario or a coflow-benchmark trace in the flow-level
simulator and write the same result files as an emulated run."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from coflowbed.cli.commands import simulate_coflowsim
from coflowbed.cli.options import (
    add_engine,
    add_inter_job,
    add_plugin,
    add_set,
    check_window,
    engine_of,
    overrides_of,
    plugin_files,
)
from coflowbed.core.config import load_yaml
from coflowbed.core.errors import UserError
from coflowbed.experiment.binding import SimInputs, make_policy
from coflowbed.experiment.folders import folder_path
from coflowbed.experiment.overrides import FlagOverrides
from coflowbed.experiment.scenario import find_scenario, load_scenario
from coflowbed.experiment.simfabric import parse_fabric_flag
from coflowbed.experiment.simulate import run_engine, simulate_scenario, write_run
from coflowbed.results.records import RunSummary
from coflowbed.sim import (
    FINISH_TOL,
    ControlDelay,
    check_control_delay,
    check_finish_tol,
    parse_levels,
)
from workload import fbtrace


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``simulate``."""
    p.add_argument(
        "scenario",
        type=Path,
        nargs="?",
        help="scenario YAML, or a shipped one by name (coflowbed scenarios); or use --trace",
    )
    p.add_argument("--trace", type=Path, help="coflow-benchmark trace (e.g. FB2010-1Hr-150-0.txt)")
    p.add_argument("--policy", help="policy name (default: the scenario's; fair for traces)")
    add_inter_job(p)
    add_set(p)
    add_plugin(p)
    add_engine(p)
    p.add_argument(
        "--levels",
        help="K (1..8) hardware queues or 'exact' (default: the scenario's K; exact for traces)",
    )
    p.add_argument(
        "--fabric",
        metavar="FABRIC",
        help="leafspine:SxLxH[@RATE[/RATE]] (spines x leaves x hosts per leaf, as the "
        "scenario's fabric keys; SxLxH alone is a leaf-spine), rail:HxNxS[@RATE[/RATE]] "
        "(hosts x NICs x spines), bigswitch:N[@RATE], fattree:N[@RATE], or a kind alone "
        "(the scenario's hosts as that kind). With a scenario it replaces its sim_fabric, "
        "else its fabric (default: the scenario's; bigswitch:<ports>@1Gbps for traces, "
        "where G/M mean 2^30/2^20 as in the trace's model)",
    )
    p.add_argument(
        "--out", type=Path, help="results folder (default: results/<time>-sim-<name>-<policy>/)"
    )
    p.add_argument(
        "--results", type=Path, default=Path("results"), help="parent of the default folder"
    )
    p.add_argument("--limit", type=int, help="trace: simulate only this many coflows")
    p.add_argument("--skip", type=int, default=0, help="trace: skip this many coflows first")
    p.add_argument("--time-scale", type=float, default=1.0, help="trace: arrival time factor")
    p.add_argument("--byte-scale", type=float, default=1.0, help="trace: byte factor")
    p.add_argument(
        "--model",
        default="default",
        help="default (exact max-min fluid model) or coflowsim (CoflowSim's semantics, "
        "--trace only; docs/simulator.md)",
    )
    p.add_argument(
        "--finish-tol",
        type=float,
        help="a flow within this fraction of its size of the end is done (default: the "
        "engine's, exact to round-off; looser merges completions, faster, results within "
        "measured differences: docs/measurements/simulator-speed.md, "
        "'A finishing tolerance')",
    )
    p.add_argument(
        "--control-delay",
        metavar="SECONDS",
        help="a controller's delay from a decision to the level in force, on every release "
        "and re-rank, for policies without levels fixed for the DAG (0-10 s; default: the "
        "scenario's sim_control_delay_s, else 0; docs/simulator.md, 'Control delay')",
    )


def run(args: argparse.Namespace) -> int:
    """Simulate, write results, print one summary line; exit 1 if partial."""
    if simulate_coflowsim.check_model(args.model) == "coflowsim":
        return simulate_coflowsim.run(args)
    if (args.scenario is None) == (args.trace is None):
        raise UserError("simulate", None, "give a scenario YAML or --trace, not both or neither")
    finish_tol = _finish_tol(args)
    delay = _control_delay(args)
    if args.trace:
        summary, out = _trace(args, finish_tol, delay)
    else:
        summary, out = _scenario(args, finish_tol, delay)
    print(
        f"{'PARTIAL' if summary.partial else 'complete'}: {summary.coflows}/"
        f"{summary.coflows_total} coflows, avg CCT {summary.avg_cct_s} s, p95 "
        f"{summary.p95_cct_s} s, iteration {summary.iteration_time_s} s -> {out}"
    )
    return 1 if summary.partial else 0


def _levels(args: argparse.Namespace, default: int | None) -> int | None:
    """--levels parsed, UserError on bad text."""
    try:
        return parse_levels(args.levels, default)
    except ValueError as exc:
        raise UserError("--levels", None, str(exc)) from None


def _finish_tol(args: argparse.Namespace) -> float:
    """--finish-tol, or the engine's default; UserError when out of range."""
    if args.finish_tol is None:
        return FINISH_TOL
    try:
        check_finish_tol(args.finish_tol)
    except ValueError as exc:
        raise UserError("--finish-tol", None, str(exc)) from None
    return args.finish_tol


def _control_delay(args: argparse.Namespace) -> ControlDelay | None:
    """--control-delay as a ControlDelay (None: the scenario's); UserError when out of
    range."""
    if args.control_delay is None:
        return None
    text = args.control_delay  # parsed here, not by argparse: one line for text too
    try:
        seconds = float(text)
    except ValueError:
        raise UserError("--control-delay", None, f"must be seconds, got {text!r}") from None
    try:
        return ControlDelay.of(check_control_delay(seconds))
    except ValueError as exc:
        raise UserError("--control-delay", None, str(exc)) from None


def _scenario(
    args: argparse.Namespace, finish_tol: float, delay: ControlDelay | None
) -> tuple[RunSummary, Path]:
    """A scenario simulated into its folder: (summary, folder)."""
    overrides, kind = _fabric_overrides(args)
    scen = load_scenario(args.scenario, overrides, plugin_files(args))
    levels = _levels(args, scen.levels)
    out = args.out or folder_path(args.results, "sim", scen.name, scen.policy)
    summary = simulate_scenario(
        scen,
        out,
        fabric_kind=kind,
        levels=levels,
        finish_tol=finish_tol,
        engine=engine_of(args),
        control_delay=delay,
    )
    return summary, out


def _fabric_overrides(args: argparse.Namespace) -> tuple[FlagOverrides | None, str | None]:
    """The scenario overrides of the flags, ``--fabric``'s included (it replaces the
    scenario's sim_fabric when it has one, else its fabric when it gives sizes), and
    the kind its fabric is simulated as (``--fabric KIND`` alone, no sim_fabric)."""
    base = overrides_of(args) or FlagOverrides({}, {})
    if not args.fabric:
        return base or None, None
    flag = parse_fabric_flag(args.fabric)
    raw = load_yaml(find_scenario(args.scenario))
    if (isinstance(raw, dict) and raw.get("sim_fabric")) or any(
        k.startswith("sim_fabric") for k in base
    ):
        return base.merged(flag.sim_overrides(), "--fabric"), None
    if flag.dims:
        return base.merged(flag.emulated_overrides(), "--fabric"), None
    return base or None, flag.kind


def _trace(
    args: argparse.Namespace, finish_tol: float, delay: ControlDelay | None
) -> tuple[RunSummary, Path]:
    """A coflow-benchmark trace simulated into its folder: (summary, folder)."""
    try:
        trace = fbtrace.read_trace(args.trace)
    except ValueError as exc:
        raise UserError(str(args.trace), None, str(exc)) from None
    check_window(args.limit, args.skip, len(trace))
    spec = args.fabric or f"bigswitch:{trace.ports}@1Gbps"
    fabric = parse_fabric_flag(spec, binary=True).sim_fabric().model()
    try:
        dag = fbtrace.to_dag(
            trace,
            list(fabric.hosts),
            limit=args.limit,
            skip=args.skip,
            time_scale=args.time_scale,
            byte_scale=args.byte_scale,
        )
    except ValueError as exc:
        raise UserError("--fabric/--trace options", None, str(exc)) from None
    plugin_files(args)  # their policies can be named by --policy
    policy = make_policy(args.policy or "fair", {}, "--policy")
    out = args.out or folder_path(args.results, "sim", args.trace.stem, policy.name)
    t0 = time.perf_counter()
    inputs = SimInputs(dag, fabric, policy, _levels(args, None), (), ControlDelay.of(delay))
    result = run_engine(inputs, engine_of(args), finish_tol=finish_tol)
    return write_run(result, out, str(args.trace), time.perf_counter() - t0), out
