"""The Mininet Topo and the names/schedulers derived from the plan (no root)."""

from __future__ import annotations

from topo import net
from topo.leafspine import LeafSpineTopo
from topo.plan import FabricPlan


def _plan():
    return FabricPlan(spines=2, leaves=3, hosts_per_leaf=2, host_bw_mbps=50, fabric_bw_mbps=80)


def test_topo_uses_plan_dpids_ports_and_addresses():
    plan = _plan()
    topo = LeafSpineTopo(plan=plan)
    assert topo.nodeInfo("l2")["dpid"] == "0000000000001002"
    assert topo.nodeInfo("s1")["dpid"] == "0000000000002001"
    assert topo.nodeInfo("h32") == {"ip": "10.0.3.2/16", "mac": "00:00:00:00:03:02"}
    ports = {(a, b): info for a, b, info in topo.links(sort=True, withInfo=True)}
    assert len(ports) == len(plan.links)
    for link in plan.links:
        info = ports.get((link.node1, link.node2)) or ports[(link.node2, link.node1)]
        assert info["port1" if info["node1"] == link.node1 else "port2"] == link.port1
        assert info["port2" if info["node2"] == link.node2 else "port1"] == link.port2


def test_interface_names_cover_both_ends_and_bridges():
    plan = _plan()
    names = net.interface_names(plan)
    assert len(names) == len(set(names)) == 2 * len(plan.links) + len(plan.switches)
    assert {"l1-eth1", "l1-eth3", "l1-eth4", "s2-eth3", "h11-eth0", "l3", "s2"} <= set(names)


def test_port_schedulers_on_every_egress_at_link_rate():
    plan = _plan()
    root, hosts = net.port_schedulers(plan, levels=4, queue_packets=60)
    assert sorted(hosts) == plan.host_names()
    assert all(ps.rate_mbps == 50 and ps.dev.endswith("-eth0") for ps in hosts.values())
    rates = {ps.dev: ps.rate_mbps for ps in root}
    assert rates["l1-eth1"] == 50 and rates["l1-eth3"] == 80 and rates["s1-eth3"] == 80
    assert len(root) + len(hosts) == 2 * len(plan.links)
    assert {ps.levels for ps in root} == {4} and {ps.queue_packets for ps in root} == {60}


def test_address_plan_helpers_spell_the_10_0_l_n_plan():
    from topo.plan import FABRIC_PREFIX_LEN, LEAF_PREFIX_LEN, host_ip, leaf_subnet, prefix_mask

    assert [h.ip for h in _plan().hosts if h.leaf == 3] == [host_ip(3, 1), host_ip(3, 2)]
    assert (host_ip(3, 2), leaf_subnet(3)) == ("10.0.3.2", "10.0.3.0")
    assert prefix_mask(FABRIC_PREFIX_LEN) == "255.255.0.0"
    assert prefix_mask(LEAF_PREFIX_LEN) == "255.255.255.0"
