"""Simulating a scenario, the one way every caller does it (the command line, the
Python API, compare, sweep, the fidelity check and the pytest fixtures): bind the
scenario (``coflowbed.experiment.binding``), run the flow-level model on the bound
inputs, and write the run's files as an emulated run's."""

from __future__ import annotations

import math
import time
from pathlib import Path

from coflowbed.experiment.binding import SimInputs, bind
from coflowbed.experiment.folders import write_scenario
from coflowbed.experiment.scenario import Scenario
from coflowbed.results.records import RunSummary
from coflowbed.sim import FINISH_TOL, SimResult, simulate


def run_model(
    inputs: SimInputs, *, finish_tol: float = FINISH_TOL, wall_limit_s: float = math.inf
) -> SimResult:
    """The flow-level model on ``inputs``; stops (partial) after ``wall_limit_s``."""
    return simulate(
        inputs.dag,
        inputs.fabric,
        inputs.policy,
        inputs.levels,
        wall_limit_s=wall_limit_s,
        faults=inputs.faults,
        finish_tol=finish_tol,
    )


def write_run(
    result: SimResult, out: Path, source: str, wall_s: float, summary_only: bool = False
) -> RunSummary:
    """A simulated run's files in ``out`` (only ``summary.json`` with ``summary_only``),
    naming its ``source`` and the wall time it took; its summary."""
    extra = {"source": source, "sim_total_wall_s": round(wall_s, 3)}
    if not summary_only:
        return result.write(Path(out), extra)
    summary = result.summary(extra)
    Path(out).mkdir(parents=True, exist_ok=True)
    summary.write(Path(out))
    return summary


def simulate_scenario(
    scen: Scenario,
    out: Path,
    *,
    fabric_kind: str | None = None,
    levels: int | None = None,
    finish_tol: float = FINISH_TOL,
    wall_limit_s: float = math.inf,
    summary_only: bool = False,
) -> RunSummary:
    """``scen`` in the flow-level simulator, written to ``out``: on its ``sim_fabric`` or
    its emulated fabric as ``fabric_kind``, with ``levels`` (default: its K) queues."""
    inputs = bind(scen, fabric_kind, levels)
    t0 = time.perf_counter()
    result = run_model(inputs, finish_tol=finish_tol, wall_limit_s=wall_limit_s)
    summary = write_run(result, out, scen.source, time.perf_counter() - t0, summary_only)
    if not summary_only:  # the folder re-creates the run: simulate <out>/scenario.yaml
        write_scenario(scen, Path(out))
    return summary
