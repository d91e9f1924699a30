"""The leaf-spine fabric as a pure Mininet ``Topo``, built only from a FabricPlan:
explicit dpids, explicit port numbers on both ends of every link, host IP/MAC.

A rail-optimised plan (``plan.nics`` > 1) gives each server one Mininet host with one
interface per NIC (``h<n>-eth<i>`` to leaf i+1), each with its NIC's own IP and MAC."""

from __future__ import annotations

import topo.mininet_log  # noqa: F401  (before Mininet: keeps our loggers plain)

# isort: split
from mininet.topo import Topo

from topo.plan import FABRIC_PREFIX_LEN, FabricPlan, HostPlan

HOST_PREFIX_LEN = FABRIC_PREFIX_LEN  # every host reaches every other on one /16


class LeafSpineTopo(Topo):
    """Mininet topology of ``plan`` (no link shaping here: see topo.qos)."""

    def build(self, plan: FabricPlan) -> None:
        """Add the plan's switches, hosts and links with the plan's numbers."""
        for sw in plan.switches:
            self.addSwitch(sw.name, dpid=sw.dpid_str)
        for h in plan.hosts:
            if h.port == 0:  # a server's first NIC names its default interface
                self.addHost(h.host_node, ip=f"{h.ip}/{HOST_PREFIX_LEN}", mac=h.mac)
        nics = {(h.host_node, h.port): h for h in plan.hosts if h.port}
        for link in plan.links:
            extra = nic_params(nics.get((link.node1, link.port1)))
            self.addLink(link.node1, link.node2, port1=link.port1, port2=link.port2, **extra)


def nic_params(h: HostPlan | None) -> dict:
    """``addLink`` keywords giving a server's further NIC its own IP and MAC."""
    if h is None:
        return {}
    return {"params1": {"ip": f"{h.ip}/{HOST_PREFIX_LEN}"}, "addr1": h.mac}


def intf_name(node: str, port: int) -> str:
    """Mininet's name of ``node``'s interface on ``port``."""
    return f"{node}-eth{port}"
