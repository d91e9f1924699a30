"""``coflowbed simulate``: run a scenario or a coflow-benchmark trace in the flow-level
simulator and write the same result files as an emulated run."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from coflowbed.commands.run import add_inter_job, overrides_of
from coflowbed.errors import UserError

NAME = "simulate"
HELP = "simulate a scenario (or --trace) in the flow-level fluid model"

log = logging.getLogger("simulate")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``simulate``."""
    p.add_argument("scenario", type=Path, nargs="?", help="scenario YAML (or use --trace)")
    p.add_argument("--trace", type=Path, help="coflow-benchmark trace (e.g. FB2010-1Hr-150-0.txt)")
    p.add_argument("--policy", help="policy name (default: the scenario's; fair for traces)")
    add_inter_job(p)
    p.add_argument(
        "--levels",
        help="K (1..8) hardware queues or 'exact' (default: the scenario's K; exact for traces)",
    )
    p.add_argument(
        "--fabric",
        help="bigswitch[:<N>x<rate>], leafspine:<L>x<H>x<S>:<rate>[/<rate>] or "
        "rail:<servers>x<nics>x<spines>:<nic rate>[/<core rate>] "
        "(default: the scenario's leaf-spine; bigswitch:<ports>x1Gbps for traces, "
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
        "measured differences: docs/simulator.md, 'A finishing tolerance')",
    )


def run(args: argparse.Namespace) -> int:
    """Simulate, write results, print one summary line; exit 1 if partial."""
    from coflowbed.commands import simulate_coflowsim

    if simulate_coflowsim.check_model(args.model) == "coflowsim":
        return simulate_coflowsim.run(args)
    if (args.scenario is None) == (args.trace is None):
        raise UserError("simulate", None, "give a scenario YAML or --trace, not both or neither")
    finish_tol = _finish_tol(args)
    job = _trace_job(args) if args.trace else _scenario_job(args)
    from coflowbed.sim import simulate

    dag, fabric, policy, levels, name, faults = job
    t0 = time.perf_counter()
    result = simulate(dag, fabric, policy, levels, faults=faults, finish_tol=finish_tol)
    out = args.out or args.results / _folder(name, policy.name)
    summary = result.write(
        out,
        {
            "source": str(args.trace or args.scenario),
            "sim_total_wall_s": round(time.perf_counter() - t0, 3),
        },
    )
    print(
        f"{'PARTIAL' if summary.partial else 'complete'}: {summary.coflows}/"
        f"{summary.coflows_total} coflows, avg CCT {summary.avg_cct_s} s, p95 "
        f"{summary.p95_cct_s} s, iteration {summary.iteration_time_s} s -> {out}"
    )
    return 1 if summary.partial else 0


def _folder(name: str, policy: str) -> str:
    """``<time>-sim-<name>-<policy>``."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-sim-{name}-{policy}"


def _levels(args: argparse.Namespace, default: int | None) -> int | None:
    """--levels parsed, UserError on bad text."""
    from coflowbed.sim import parse_levels

    try:
        return parse_levels(args.levels, default)
    except ValueError as exc:
        raise UserError("--levels", None, str(exc)) from None


def _finish_tol(args: argparse.Namespace) -> float:
    """--finish-tol, or the engine's default; UserError when out of range."""
    from coflowbed.sim import FINISH_TOL, check_finish_tol

    if args.finish_tol is None:
        return FINISH_TOL
    try:
        check_finish_tol(args.finish_tol)
    except ValueError as exc:
        raise UserError("--finish-tol", None, str(exc)) from None
    return args.finish_tol


def make_policy(name: str, params: dict, source: str):
    """A registered policy by name; UserError naming the source on a bad name/param."""
    from controller import policies

    try:
        return policies.get(name, **params)
    except ValueError as exc:
        raise UserError(source, "policy", str(exc)) from None


def _trace_job(args: argparse.Namespace):
    """(dag, fabric, policy, levels, name) of a trace run."""
    from coflowbed.sim import parse_fabric_spec
    from workload import fbtrace

    try:
        trace = fbtrace.read_trace(args.trace)
    except ValueError as exc:
        raise UserError(str(args.trace), None, str(exc)) from None
    spec = args.fabric or f"bigswitch:{trace.ports}x1Gbps"
    try:
        fabric = parse_fabric_spec(spec, binary=True)
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
    policy = make_policy(args.policy or "fair", {}, "--policy")
    return dag, fabric, policy, _levels(args, None), args.trace.stem, []


def _scenario_job(args: argparse.Namespace):
    """(dag, fabric, policy, levels, name) of a scenario run."""
    from coflowbed.scenario import load_scenario

    scen = load_scenario(args.scenario, overrides_of(args))
    fabric = sim_fabric_of(scen, args.fabric)
    levels = _levels(args, scen.levels)
    return scen.dag, fabric, scenario_policy(scen), levels, scen.name, scenario_faults(scen, fabric)


def scenario_faults(scen, fabric) -> list:
    """The scenario's faults as the simulator models them (links down); UserError on a
    fabric model without leaf-spine links."""
    from coflowbed.faults import sim_faults
    from coflowbed.sim import LeafSpine

    faults = sim_faults(scen.faults, scen.plan)
    if faults and not isinstance(fabric, LeafSpine):
        raise UserError(scen.source, "faults", "link faults need the leafspine fabric model")
    return faults


def scenario_policy(scen):
    """The policy object of a scenario, for the emulator and the simulator alike (the
    controller builds the same one from the same ``PolicySpec``): its own levels and
    meters under ``static``, the registered policy otherwise."""
    from controller.scheduler_service import build_policy

    try:
        return build_policy(policy_spec(scen), scen.levels)
    except ValueError as exc:
        raise UserError(scen.source, "policy", str(exc)) from None


def policy_spec(scen):
    """What the controller needs to build the scenario's policy."""
    from controller.messages import PolicySpec

    return PolicySpec(
        scen.policy,
        scen.policy_params,
        scen.static_levels,
        scen.static_rates_mbps,
        tuple(scen.plugins),
        scen.inter_job,
    )


def sim_fabric_of(scen, spec: str | None = None):
    """The fabric a scenario is simulated on: its ``sim_fabric`` when it has one (no
    ``--fabric`` choice then), else ``scenario_fabric`` of its emulated plan."""
    if scen.sim_fabric is None:
        return scenario_fabric(scen.plan, spec)
    if spec is not None:
        raise UserError("--fabric", None, f"{scen.source} has a sim_fabric; drop --fabric")
    return scen.sim_fabric.model()


def scenario_fabric(plan, spec: str | None):
    """The scenario's leaf-spine, or ``bigswitch`` over its hosts at the host rate."""
    from coflowbed.sim import BigSwitch, LeafSpine

    if spec in (None, "leafspine"):
        return LeafSpine.from_plan(plan)
    if spec == "bigswitch":
        return BigSwitch(tuple(plan.host_names()), plan.host_bw_mbps * 1e6)
    raise UserError(
        "--fabric", None, f"with a scenario use 'leafspine' or 'bigswitch', got {spec!r}"
    )
