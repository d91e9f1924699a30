"""The rail-optimised plan and Topo (no root): NIC endpoints, one Mininet host per
server with one interface per NIC, per-NIC source routes and schedulers."""

from __future__ import annotations

import pytest

from topo import net
from topo.leafspine import LeafSpineTopo
from topo.plan import FabricPlan


def _plan() -> FabricPlan:
    """2 servers x 2 NICs, 2 spines: leaves = NICs, hosts_per_leaf = servers."""
    return FabricPlan(2, 2, 2, host_bw_mbps=25, fabric_bw_mbps=50, nics=2)


def test_every_nic_is_an_endpoint_on_its_rail():
    """NIC i of server n: h<n>n<i> on leaf i+1, port n, IP 10.0.<i+1>.<n>."""
    plan = _plan()
    got = [(h.name, h.leaf, h.leaf_port, h.ip, h.host_node, h.port) for h in plan.hosts]
    assert got == [
        ("h1n0", 1, 1, "10.0.1.1", "h1", 0),
        ("h2n0", 1, 2, "10.0.1.2", "h2", 0),
        ("h1n1", 2, 1, "10.0.2.1", "h1", 1),
        ("h2n1", 2, 2, "10.0.2.2", "h2", 1),
    ]
    assert plan.server_names() == ["h1", "h2"]
    assert FabricPlan.from_dict(plan.to_dict()) == plan


def test_rail_needs_one_leaf_per_nic():
    """Rail i is leaf i+1: leaves must equal NICs."""
    with pytest.raises(ValueError, match="one leaf per NIC"):
        FabricPlan(2, 3, 2, 25, 50, nics=2)


def test_topo_has_one_host_per_server_and_an_interface_per_nic():
    """h1 gets NIC 0's address as its default interface (port 0 to l1 port 1) and NIC
    1's (10.0.2.1, MAC ..:02:01) on port 1 to l2 port 1."""
    topo = LeafSpineTopo(plan=_plan())
    assert sorted(topo.hosts()) == ["h1", "h2"]
    assert topo.nodeInfo("h1") == {"ip": "10.0.1.1/16", "mac": "00:00:00:00:01:01"}
    info = topo.linkInfo("h1", "l2")
    assert (info["port1"], info["port2"]) == (1, 1)
    assert info["params1"] == {"ip": "10.0.2.1/16"} and info["addr1"] == "00:00:00:00:02:01"


def test_source_routes_send_each_nic_address_out_of_its_interface():
    """Table 100 + i holds the fabric route out of eth<i>, chosen by NIC i's source."""
    plan = _plan()
    mine = [h for h in plan.hosts if h.host_node == "h2"]
    assert net.rail_route_lines(mine) == [
        "rule add from 10.0.1.2 lookup 100",
        "route replace 10.0.0.0/16 dev h2-eth0 src 10.0.1.2 table 100",
        "rule add from 10.0.2.2 lookup 101",
        "route replace 10.0.0.0/16 dev h2-eth1 src 10.0.2.2 table 101",
    ]


def test_every_nic_gets_its_own_scheduler():
    """Each NIC endpoint's egress is its own interface of the server."""
    _root, hosts = net.port_schedulers(_plan(), levels=2, queue_packets=10)
    assert {name: ps.dev for name, ps in hosts.items()} == {
        "h1n0": "h1-eth0",
        "h2n0": "h2-eth0",
        "h1n1": "h1-eth1",
        "h2n1": "h2-eth1",
    }


@pytest.mark.parametrize("plan", [_plan(), FabricPlan(2, 2, 2, 25, 50)], ids=["rail", "one-nic"])
def test_each_endpoint_interface_is_the_one_its_scheduler_shapes(plan):
    """The GSO cap (topo.hosttcp) goes on the interface the endpoint sends from."""
    _root, hosts = net.port_schedulers(plan, levels=2, queue_packets=10)
    assert net.endpoint_interfaces(plan) == {name: ps.dev for name, ps in hosts.items()}
