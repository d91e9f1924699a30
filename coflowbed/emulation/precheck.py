"""The emulation pre-check: before anything starts, whether this machine can emulate a
scenario (root, Open vSwitch, Mininet, BMv2 for ``switch: bmv2``) and whether the
scenario can be emulated at all (its faults on its switch kind; no ``sim_fabric``).  The
command line, the Python API, compare, sweep and the pytest fixtures all ask here."""

from __future__ import annotations

import os
import shutil

from coflowbed.core.errors import UserError
from coflowbed.emulation.faults.injector import check_supported
from coflowbed.experiment.scenario import Scenario


def check_can_run(scen: Scenario) -> None:
    """UserError before anything starts if this machine cannot run ``scen``."""
    check_supported(scen.faults, scen.switch, scen.source)
    if scen.sim_fabric is not None:
        raise UserError(scen.source, "sim_fabric", "simulator only: coflowbed run needs fabric")
    missing = machine_missing(scen)
    if missing is not None:
        raise missing


def machine_missing(scen: Scenario) -> UserError | None:
    """What this machine lacks to emulate ``scen`` (root, BMv2, OVS, Mininet), or None."""
    lacks = machine_lacks(scen.switch)
    if lacks is None:
        return None
    key = "switch" if lacks.startswith("bmv2") else None
    return UserError(scen.source, key, lacks)


def machine_lacks(switch: str = "ovs") -> str | None:
    """Why this machine cannot emulate a fabric of ``switch`` switches, or None."""
    if os.geteuid() != 0:
        return "an emulated run needs root (Mininet, OVS, tc)"
    if switch == "bmv2" and shutil.which("simple_switch_grpc") is None:
        return (
            "bmv2 needs BMv2's simple_switch_grpc, which is not installed here; "
            "use the Vagrant VM (docs/bmv2.md) or switch: ovs"
        )
    for tool in ("ovs-vswitchd", "ovsdb-server", "mnexec"):
        if shutil.which(tool) is None:
            return f"{tool} not installed: run scripts/install.sh"
    return None
