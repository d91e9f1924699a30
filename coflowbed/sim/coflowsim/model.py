"""Run a trace under CoflowSim's semantics: pick the simulator of the policy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coflowbed.sim.coflowsim.dark import DarkQueues
from coflowbed.sim.coflowsim.fair import FairLoop
from coflowbed.sim.coflowsim.jobs import CsWorkload, build_workload
from coflowbed.sim.coflowsim.loop import CoflowLoop
from coflowbed.sim.coflowsim.outcome import CsOutcome
from coflowbed.sim.coflowsim.policies import Dark, Ordered
from coflowbed.sim.coflowsim.steploop import StepLoop
from controller.policies import policy_class
from workload.fbtrace import TraceCoflow

# our policy name -> CoflowSim's SHARING_ALGO
POLICIES = {"fair": "FAIR", "fifo": "FIFO", "sebf": "SEBF", "dclas": "DARK"}


@dataclass(frozen=True)
class CsRun:
    """A finished CoflowSim-model run: the policy, its workload and what happened."""

    policy: str
    workload: CsWorkload
    outcome: CsOutcome


def canonical(name: str) -> str:
    """Our policy name for ``name`` or one of its aliases (``varys``, ``aalo``, ...)."""
    try:
        return policy_class(name).name
    except ValueError:
        return name


def check_policy(name: str) -> str:
    """CoflowSim's algorithm for our policy ``name`` (or an alias); ValueError naming
    the choices."""
    if canonical(name) not in POLICIES:
        raise ValueError(f"the coflowsim model has {', '.join(POLICIES)}, not {name!r}")
    return POLICIES[canonical(name)]


def run_workload(wl: CsWorkload, policy: str) -> CsOutcome:
    """Simulate ``wl`` under ``policy`` (one of ``POLICIES``)."""
    algo = check_policy(policy)
    if algo == "FAIR":
        return FairLoop(wl).run()
    if algo == "DARK":
        return CoflowLoop(wl, Dark(DarkQueues())).run()
    key = wl.alpha if algo == "SEBF" else None
    return StepLoop(wl, Ordered(wl.deadline_ms, key)).run()


def run_trace(
    trace: Sequence[TraceCoflow],
    racks: int,
    policy: str,
    *,
    time_scale: float = 1.0,
    byte_scale: float = 1.0,
) -> CsRun:
    """Lay ``trace`` out as CoflowSim does and simulate it under ``policy``."""
    policy = canonical(policy)
    check_policy(policy)
    if not time_scale > 0 or not byte_scale > 0:
        raise ValueError(f"time_scale and byte_scale must be > 0, got {time_scale}, {byte_scale}")
    wl = build_workload(trace, racks, time_scale, byte_scale)
    return CsRun(policy, wl, run_workload(wl, policy))
