"""The one binding of a scenario to the objects that run it: its policy (the object the
controller builds from the same ``PolicySpec``), the fabric model it is simulated on
(its ``sim_fabric``, else its emulated leaf-spine or a big switch over its hosts) and
its faults as the simulator models them.  The command line, the Python API, compare,
sweep, the fidelity check and the pytest fixtures all bind a scenario here, so a
scenario means the same thing on every path."""

from __future__ import annotations

from dataclasses import dataclass

from coflowbed.core.errors import UserError
from coflowbed.experiment.faults import sim_faults
from coflowbed.experiment.scenario import Scenario
from coflowbed.sim import NO_DELAY, BigSwitch, ControlDelay, FabricModel, LeafSpine, LinkFault
from controller import policies
from controller.messages import PolicySpec
from controller.policies.base import Policy
from controller.scheduler_service import build_policy
from topo.plan import FabricPlan
from workload.dag import Dag

FABRIC_KINDS = ("leafspine", "bigswitch")  # what an emulated plan can be simulated as


@dataclass(frozen=True)
class SimInputs:
    """What one simulation runs: ``dag`` on ``fabric`` under ``policy`` with ``levels``
    hardware queues (None: an exact total order), with ``faults`` (links down) and a
    controller's ``control_delay`` (the fluid model; dynamic policies only)."""

    dag: Dag
    fabric: FabricModel
    policy: Policy
    levels: int | None
    faults: tuple[LinkFault, ...] = ()
    control_delay: ControlDelay = NO_DELAY


def make_policy(name: str, params: dict, source: str) -> Policy:
    """A registered policy by name; UserError naming ``source`` on a bad name/param."""
    try:
        return policies.get(name, **params)
    except ValueError as exc:
        raise UserError(source, "policy", str(exc)) from None


def policy_spec(scen: Scenario) -> PolicySpec:
    """What the controller needs to build the scenario's policy."""
    return PolicySpec(
        scen.policy,
        scen.policy_params,
        scen.static_levels,
        scen.static_rates_mbps,
        tuple(scen.plugins),
        scen.inter_job,
    )


def scenario_policy(scen: Scenario) -> Policy:
    """The policy object of a scenario, for the emulator and the simulator alike: its
    own levels and meters under ``static``, the registered policy otherwise."""
    try:
        return build_policy(policy_spec(scen), scen.levels)
    except ValueError as exc:
        raise UserError(scen.source, "policy", str(exc)) from None


def plan_fabric(plan: FabricPlan, kind: str = "leafspine") -> FabricModel:
    """An emulated fabric plan as a fabric model: its leaf-spine, or ``bigswitch`` over
    its hosts at the host rate; UserError for another ``kind``."""
    if kind == "leafspine":
        return LeafSpine.from_plan(plan)
    if kind == "bigswitch":
        return BigSwitch(tuple(plan.host_names()), plan.host_bw_mbps * 1e6)
    raise UserError(
        "--fabric", None, f"with a scenario use 'leafspine' or 'bigswitch', got {kind!r}"
    )


def scenario_fabric(scen: Scenario, kind: str | None = None) -> FabricModel:
    """The fabric a scenario is simulated on: its ``sim_fabric`` when it has one (then no
    ``kind`` may be chosen), else ``plan_fabric`` of its emulated plan."""
    if scen.sim_fabric is None:
        return plan_fabric(scen.plan, kind or "leafspine")
    if kind is not None:
        raise UserError("--fabric", None, f"{scen.source} has a sim_fabric; drop --fabric")
    return scen.sim_fabric.model()


def scenario_faults(scen: Scenario, fabric: FabricModel) -> tuple[LinkFault, ...]:
    """The scenario's faults as the simulator models them (links down); UserError on a
    fabric model without leaf-spine links."""
    faults = tuple(sim_faults(scen.faults, scen.plan))
    if faults and not isinstance(fabric, LeafSpine):
        raise UserError(scen.source, "faults", "link faults need the leafspine fabric model")
    return faults


def bind(scen: Scenario, fabric_kind: str | None = None, levels: int | None = None) -> SimInputs:
    """Everything a simulation of ``scen`` needs: its DAG, fabric (``fabric_kind``: a
    choice for scenarios without ``sim_fabric``), policy, K levels (``levels`` when
    given, else the scenario's), faults and control delay."""
    fabric = scenario_fabric(scen, fabric_kind)
    return SimInputs(
        scen.dag,
        fabric,
        scenario_policy(scen),
        scen.levels if levels is None else levels,
        scenario_faults(scen, fabric),
        ControlDelay.of(scen.sim_control_delay_s),
    )
