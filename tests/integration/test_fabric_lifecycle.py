"""Fabric start/stop leaves nothing behind; crash leftovers are found and removed.
Run under the fabric lock (root)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from topo import ovs
from topo.net import cleanup, interface_names, recorded_names, start_fabric
from topo.plan import FabricPlan
from topo.switch import port_qos_types

pytestmark = [pytest.mark.root, pytest.mark.slow]
PLAN = FabricPlan(spines=1, leaves=2, hosts_per_leaf=1, host_bw_mbps=20, fabric_bw_mbps=20)


def _links_present(plan):
    return [n for n in interface_names(plan) if Path("/sys/class/net", n).exists()]


def test_stop_removes_interfaces_daemons_and_restores_the_sysctl(tmp_path):
    wmem = ovs.read_wmem_default()
    # No controller: secure-mode switches come up without one; readiness is not awaited.
    fab = start_fabric(PLAN, tmp_path, controller_port=1, levels=2)
    try:
        pids = fab.ovs.pids()
        assert len(pids) == 2 and ovs.read_wmem_default() == ovs.WMEM_WANTED
        assert port_qos_types("l1-eth1") == "linux-noop"
        assert recorded_names(tmp_path)["interfaces"] == interface_names(PLAN)
        assert "s1-eth2" in _links_present(PLAN)
    finally:
        fab.stop()
    assert _links_present(PLAN) == []
    assert not any(ovs.pid_alive(p) for p in pids)
    assert ovs.read_wmem_default() == wmem


def test_cleanup_after_a_crash_kills_by_pid_and_restores(tmp_path):
    wmem = ovs.read_wmem_default()
    fab = start_fabric(PLAN, tmp_path, controller_port=1, levels=2)
    pids = fab.ovs.pids()
    # Simulate a runner killed with SIGKILL: Mininet's host shells die, OVS survives.
    for host in fab.net.hosts:
        os.kill(host.pid, signal.SIGKILL)
    removed = cleanup(tmp_path)
    try:
        assert any(r.startswith("bridge ") for r in removed)
        assert {f"pid {p}" for p in pids} <= set(removed)
        assert "sysctl net.core.wmem_default" in removed
        assert _links_present(PLAN) == []
        assert not any(ovs.pid_alive(p) for p in pids)
        assert ovs.read_wmem_default() == wmem
    finally:
        for sw in fab.net.switches:  # Mininet's switch shells (our children) end here
            sw.terminate()
