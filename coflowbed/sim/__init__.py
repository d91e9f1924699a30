"""coflowbed's flow-level (fluid) simulator: the same coflow DAGs and policy objects as
the emulator, on an ideal fabric model (big switch or leaf-spine), event-driven with
numpy and numba-compiled kernels.  See docs/simulator.md.

    from coflowbed.sim import simulate, BigSwitch
    result = simulate(dag, BigSwitch(hosts, 1e9), policy, levels=None)
    result.write(out_dir)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from coflowbed.sim import kernelcache
from coflowbed.sim.control import (
    MAX_CONTROL_DELAY_S,
    NO_DELAY,
    ControlDelay,
    check_control_delay,
    pays_control_delay,
)
from coflowbed.sim.engine import FINISH_TOL, Simulator, check_finish_tol
from coflowbed.sim.fabric import (
    BigSwitch,
    FabricModel,
    LeafSpine,
    LinkFault,
    Rail,
    parse_fabric_spec,
)
from coflowbed.sim.levels import StaticPolicy, assign_levels, parse_levels
from coflowbed.sim.result import SimResult
from controller.policies.base import Policy
from workload.dag import Dag

log = logging.getLogger("sim")


def simulate(
    dag: Dag,
    fabric: FabricModel,
    policy: Policy,
    levels: int | None = None,
    horizon_s: float = math.inf,
    wall_limit_s: float = math.inf,
    faults: Sequence[LinkFault] = (),
    finish_tol: float = FINISH_TOL,
    control_delay: ControlDelay | float | None = None,
) -> SimResult:
    """Run ``dag`` on ``fabric`` under ``policy``; ``levels`` = K queues or None (exact
    total order).  Stops (partial result) once simulated time passes ``horizon_s`` or
    the run has taken ``wall_limit_s`` seconds of wall time.  ``faults``: leaf-spine links
    down for a while (capacity 0, ECMP over the spines left).  ``finish_tol``: a flow
    within this fraction of its size of the end is done (``Simulator.finish_tol``).
    ``control_delay``: a controller's decision -> level installed, in seconds (one
    number: on release and re-rank alike) or a ``ControlDelay``; dynamic policies only."""
    if not kernelcache.kernels_cached():
        log.info("compiling the simulator's kernels (once after install or 'make clean', ~100 s)")
    sim = Simulator(
        dag,
        fabric,
        policy,
        levels,
        horizon_s=horizon_s,
        wall_limit_s=wall_limit_s,
        faults=faults,
        finish_tol=finish_tol,
        control=ControlDelay.of(control_delay),
    )
    return SimResult(sim.run())


__all__ = [
    "FINISH_TOL",
    "MAX_CONTROL_DELAY_S",
    "NO_DELAY",
    "BigSwitch",
    "ControlDelay",
    "FabricModel",
    "LeafSpine",
    "LinkFault",
    "Rail",
    "SimResult",
    "Simulator",
    "StaticPolicy",
    "assign_levels",
    "check_control_delay",
    "check_finish_tol",
    "parse_fabric_spec",
    "parse_levels",
    "pays_control_delay",
    "simulate",
]
