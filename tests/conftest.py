"""Shared fixtures and the skip rules for tests that need root, Open vSwitch, BMv2 or
ns-3 (the packet extra)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _root_fabric_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ovs-vswitchd", "ovsdb-server", "mnexec", "tc"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (run scripts/install.sh)"
    return None


def pytest_collection_modifyitems(config, items):
    """Skip root/bmv2/packet-marked tests with a reason when their requirements are missing."""
    root_reason = _root_fabric_missing()
    bmv2_reason = (
        None if shutil.which("simple_switch_grpc") else "simple_switch_grpc (BMv2) not installed"
    )
    no_ns3 = importlib.util.find_spec("ns3") is None
    for item in items:
        if no_ns3 and "packet" in item.keywords:
            item.add_marker(
                pytest.mark.skip(reason="ns-3 not installed (pip install 'coflowbed[packet]')")
            )
        if root_reason and ("root" in item.keywords or "bmv2" in item.keywords):
            item.add_marker(pytest.mark.skip(reason=root_reason))
        elif bmv2_reason and "bmv2" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=bmv2_reason))
