"""``coflowbed simulate --trace T --model coflowsim``: the trace under CoflowSim's
semantics (``coflowbed.sim.coflowsim``), written as every simulated run is."""

from __future__ import annotations

import argparse
import time

from coflowbed.cli.options import check_window
from coflowbed.core.errors import UserError
from coflowbed.experiment.folders import folder_path
from coflowbed.sim import coflowsim
from workload import fbtrace

MODELS = ("default", "coflowsim")


def check_model(name: str) -> str:
    """``name`` if it is a model ``simulate`` has; UserError otherwise."""
    if name not in MODELS:
        raise UserError("--model", None, f"unknown model {name!r} (choose {' or '.join(MODELS)})")
    return name


def _check_flags(args: argparse.Namespace) -> None:
    """UserError for what the coflowsim model cannot take."""
    if args.trace is None or args.scenario is not None:
        raise UserError("--model coflowsim", None, "runs a --trace only, not a scenario")
    flags = (
        ("--levels", args.levels),
        ("--fabric", args.fabric),
        ("--finish-tol", args.finish_tol),
        ("--control-delay", args.control_delay),
    )
    for flag, value in flags:
        if value is not None:
            raise UserError(
                flag, None, "not with --model coflowsim (its own racks, queues and time steps)"
            )


def _load(args: argparse.Namespace):
    """The trace's coflows to run and its port count; UserError naming the file."""
    try:
        trace = fbtrace.read_trace(args.trace)
    except ValueError as exc:
        raise UserError(str(args.trace), None, str(exc)) from None
    check_window(args.limit, args.skip, len(trace))
    stop = None if args.limit is None else args.skip + args.limit
    return trace[args.skip : stop], trace.ports


def run(args: argparse.Namespace) -> int:
    """Simulate, write results, print the summary line; exit 1 if partial."""
    _check_flags(args)
    policy = coflowsim.canonical(args.policy or "fair")
    try:
        coflowsim.check_policy(policy)
    except ValueError as exc:
        raise UserError("--policy", None, str(exc)) from None
    coflows, ports = _load(args)
    t0 = time.perf_counter()
    try:
        result = coflowsim.run_trace(
            coflows, ports, policy, time_scale=args.time_scale, byte_scale=args.byte_scale
        )
    except ValueError as exc:
        raise UserError("--time-scale/--byte-scale", None, str(exc)) from None
    out = args.out or folder_path(args.results, "sim", f"{args.trace.stem}-coflowsim", policy)
    extra = {"source": str(args.trace), "sim_total_wall_s": round(time.perf_counter() - t0, 3)}
    summary = coflowsim.write(result, out, extra, args.byte_scale)
    print(
        f"{'PARTIAL' if summary.partial else 'complete'} (coflowsim model): {summary.coflows}/"
        f"{summary.coflows_total} coflows, avg CCT {summary.avg_cct_s} s, p95 "
        f"{summary.p95_cct_s} s -> {out}"
    )
    return 1 if summary.partial else 0
