"""Simulating a scenario, the one way every caller does it (the command line, the
Python API, compare, sweep, the fidelity check and the pytest fixtures): bind the
scenario (``coflowbed.experiment.binding``), run an engine on the bound inputs (the
flow-level ``fluid`` model, or the ns-3 ``packet`` engine), and write the run's files as
an emulated run's."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

from coflowbed.core.errors import UserError
from coflowbed.experiment.binding import SimInputs, bind
from coflowbed.experiment.folders import write_scenario
from coflowbed.experiment.scenario import Scenario
from coflowbed.packet import PacketResult, missing_message, ns3_available, simulate_packets
from coflowbed.results.records import RunSummary
from coflowbed.sim import FINISH_TOL, ControlDelay, SimResult, simulate

ENGINES = ("fluid", "packet")


@dataclass(frozen=True)
class Engine:
    """Which engine simulates, and the packet engine's settings: ``transport`` (tcp,
    dctcp, cubic) and ``scale`` (a factor on every flow's bytes and link rate)."""

    name: str = "fluid"
    transport: str = "tcp"
    scale: float = 1.0

    def check(self) -> Engine:
        """This engine, or UserError naming the flag of what is wrong."""
        if self.name not in ENGINES:
            raise UserError("--engine", None, f"choose {' or '.join(ENGINES)}, got {self.name!r}")
        if not (isinstance(self.scale, int | float) and 0 < self.scale <= 1):
            raise UserError("--packet-scale", None, f"must be in (0, 1], got {self.scale!r}")
        if self.name == "packet" and not ns3_available():  # last: the flags first
            raise UserError("--engine packet", None, missing_message())
        return self


FLUID = Engine()


def run_engine(
    inputs: SimInputs, engine: Engine = FLUID, *, finish_tol: float = FINISH_TOL
) -> SimResult | PacketResult:
    """``inputs`` on ``engine``: the fluid model, or ns-3 (UserError naming the extra
    when it is not installed; ValueError on a fabric it cannot model)."""
    if engine.name == "fluid":
        return run_model(inputs, finish_tol=finish_tol)
    if inputs.control_delay:  # before the engine's own check (ns-3 installed)
        raise UserError(
            "--control-delay/sim_control_delay_s",
            None,
            "the packet engine models no control delay (use fluid)",
        )
    engine.check()
    return simulate_packets(
        inputs.dag,
        inputs.fabric,
        inputs.policy,
        inputs.levels,
        transport=engine.transport,
        scale=engine.scale,
        faults=inputs.faults,
    )


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
        control_delay=inputs.control_delay,
    )


def write_run(
    result: SimResult | PacketResult,
    out: Path,
    source: str,
    wall_s: float,
    summary_only: bool = False,
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
    engine: Engine = FLUID,
    control_delay: ControlDelay | None = None,
) -> RunSummary:
    """``scen`` simulated by ``engine`` (the fluid model by default), written to ``out``:
    on its ``sim_fabric`` or its emulated fabric as ``fabric_kind``, with ``levels``
    (default: its K) queues and ``control_delay`` (default: its ``sim_control_delay_s``)."""
    inputs = bind(scen, fabric_kind, levels)
    if control_delay is not None:
        inputs = replace(inputs, control_delay=control_delay)
    t0 = time.perf_counter()
    result: SimResult | PacketResult
    if engine.name == "fluid":
        result = run_model(inputs, finish_tol=finish_tol, wall_limit_s=wall_limit_s)
    else:
        result = run_engine(inputs, engine)
    summary = write_run(result, out, scen.source, time.perf_counter() - t0, summary_only)
    if not summary_only:  # the folder re-creates the run: simulate <out>/scenario.yaml
        write_scenario(scen, Path(out))
    return summary
