"""The leaf-spine fabric as a pure Mininet ``Topo``, built only from a FabricPlan:
explicit dpids, explicit port numbers on both ends of every link, host IP/MAC."""

from __future__ import annotations

import topo.mininet_log  # noqa: F401  (before Mininet: keeps our loggers plain)

# isort: split
from mininet.topo import Topo

from topo.plan import FABRIC_PREFIX_LEN, FabricPlan

HOST_PREFIX_LEN = FABRIC_PREFIX_LEN  # every host reaches every other on one /16


class LeafSpineTopo(Topo):
    """Mininet topology of ``plan`` (no link shaping here: see topo.qos)."""

    def build(self, plan: FabricPlan) -> None:
        """Add the plan's switches, hosts and links with the plan's numbers."""
        for sw in plan.switches:
            self.addSwitch(sw.name, dpid=sw.dpid_str)
        for h in plan.hosts:
            self.addHost(h.name, ip=f"{h.ip}/{HOST_PREFIX_LEN}", mac=h.mac)
        for link in plan.links:
            self.addLink(link.node1, link.node2, port1=link.port1, port2=link.port2)


def intf_name(node: str, port: int) -> str:
    """Mininet's name of ``node``'s interface on ``port``."""
    return f"{node}-eth{port}"
