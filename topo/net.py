"""Bring the emulated fabric up and down: private OVS, Mininet network of userspace
switches with the plan's numbers, static ARP, port schedulers on every egress, and a
readiness wait on the controller API.

The controller is *not* started here (see controller.launcher.start_controller); the
fabric only needs its OpenFlow port and, to wait for routing, its API socket.

Names of everything created in the root namespace are recorded in
``<run_dir>/fabric.json`` before anything is created, so a clean-up after a crash can
find them; :func:`interface_names` / :func:`bridge_names` give the same from the plan,
and :func:`cleanup` removes leftovers by name.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import topo.mininet_log  # noqa: F401  (before Mininet: keeps our loggers plain)

# isort: split
from mininet.link import Link
from mininet.net import Mininet

from topo import qos
from topo.leafspine import LeafSpineTopo, intf_name
from topo.ovs import (
    USER_DATAPATH,
    OvsService,
    db_socket,
    detect_datapath,
    ovs_env,
    restore_sysctl,
    stop_daemons,
)
from topo.plan import FABRIC_NET, FABRIC_PREFIX_LEN, FabricPlan, HostPlan
from topo.switch import PlainRemoteController, set_linux_noop_qos, switch_class
from workload.marking import MAX_LEVELS

log = logging.getLogger("topo.net")
CMD_TIMEOUT_S = 30.0
RAIL_TABLE_BASE = 100  # routing table of a rail server's NIC i: 100 + i
RECORD = "fabric.json"


def bridge_names(plan: FabricPlan) -> list[str]:
    """OVS bridges of the plan (each also a tap device in the root namespace)."""
    return [sw.name for sw in plan.switches]


def switch_interfaces(plan: FabricPlan) -> list[str]:
    """Switch-side veth ends (root namespace)."""
    return [
        intf_name(n, p)
        for link in plan.links
        for n, p in ((link.node1, link.port1), (link.node2, link.port2))
        if not n.startswith("h")
    ]


def host_interfaces(plan: FabricPlan) -> list[str]:
    """Host-side veth ends (inside host namespaces; in the root one only mid-setup)."""
    return [intf_name(link.node1, link.port1) for link in plan.links if link.node1.startswith("h")]


def endpoint_interfaces(plan: FabricPlan) -> dict[str, str]:
    """Each host (on a rail fabric each NIC endpoint) -> its interface, as named inside
    its namespace."""
    return {h.name: intf_name(h.host_node, h.port) for h in plan.hosts}


def interface_names(plan: FabricPlan) -> list[str]:
    """Every interface name the fabric of ``plan`` may create in the root namespace."""
    return switch_interfaces(plan) + host_interfaces(plan) + bridge_names(plan)


def port_schedulers(
    plan: FabricPlan, levels: int, queue_packets: int
) -> tuple[list[qos.PortScheduler], dict[str, qos.PortScheduler]]:
    """Schedulers for both ends of every link: (root-namespace ones, host -> its NIC's;
    on a rail fabric NIC endpoint -> its interface's)."""
    root: list[qos.PortScheduler] = []
    hosts: dict[str, qos.PortScheduler] = {}
    endpoint = {(h.host_node, h.port): h.name for h in plan.hosts}
    for link in plan.links:
        for node, port in ((link.node1, link.port1), (link.node2, link.port2)):
            ps = qos.PortScheduler(
                intf_name(node, port), link.bw_mbps, levels, queue_packets, plan.mtu
            )
            if node.startswith("h"):
                hosts[endpoint[(node, port)]] = ps
            else:
                root.append(ps)
    return root, hosts


@dataclass
class Fabric:
    """A running fabric; ``stop()`` undoes everything ``start_fabric`` did."""

    plan: FabricPlan
    run_dir: Path
    net: Mininet
    ovs: OvsService
    levels: int
    queue_packets: int
    bringup_s: float = 0.0
    interfaces: list[str] = field(default_factory=list)
    datapath: str = USER_DATAPATH

    def host(self, name: str):
        """The Mininet host called ``name``, or a rail NIC endpoint of one."""
        if self.plan.nics == 1:
            return self.net.get(name)
        h = self.plan.host(name)
        return NicEndpoint(name, h.ip, self.net.get(h.host_node))

    def host_nics(self) -> list[tuple[int, str]]:
        """(namespace pid, interface) of every host (rail: every NIC endpoint), as
        ``topo.hosttcp.apply_host_gso`` takes them."""
        nics = endpoint_interfaces(self.plan)
        return [(self.host(h).pid, nics[h]) for h in self.plan.host_names()]

    def stop_switch(self, name: str) -> None:
        """Take switch ``name`` away as a crash would: its bridge is deleted (flows,
        groups, meters and its OpenFlow connection with it); its veths stay."""
        res = subprocess.run(
            ["ovs-vsctl", "--timeout=10", "del-br", name],
            capture_output=True,
            text=True,
            timeout=CMD_TIMEOUT_S,
        )
        if res.returncode != 0:
            raise RuntimeError(f"{name}: ovs-vsctl del-br failed: {res.stderr.strip()}")

    def start_switch(self, name: str) -> None:
        """Bring switch ``name`` back after :meth:`stop_switch`: the bridge as Mininet
        made it (dpid, ports and numbers, controller, secure, OpenFlow 1.3), then the
        ports' linux-noop QoS and tc schedulers again.  The controller reinstalls it."""
        sw = self.net.get(name)
        sw.batch = False  # one ovs-vsctl now (Mininet's batch start only queues it)
        try:
            sw.start(self.net.controllers)
        finally:
            sw.batch = True
        root, _hosts = port_schedulers(self.plan, self.levels, self.queue_packets)
        mine = [ps for ps in root if ps.dev.startswith(f"{name}-")]
        set_linux_noop_qos([ps.dev for ps in mine])
        qos.apply_schedulers(mine)

    def stop(self) -> None:
        """Stop Mininet (switches, links, host shells), then OVS; never raises half-way:
        OVS is stopped even if Mininet's stop fails."""
        t0 = time.monotonic()
        try:
            self.net.stop()
        finally:
            for c in self.net.controllers:  # Mininet's stop leaves their shells running
                c.terminate()
            self.ovs.stop()
        log.info("fabric stopped in %.2f s", time.monotonic() - t0)


@dataclass(frozen=True)
class NicEndpoint:
    """One NIC of a rail server, as an agent host: its own name and IP, the server's
    namespace (``popen``, ``pid``)."""

    name: str
    ip: str
    node: Any

    def IP(self) -> str:  # noqa: N802  (Mininet's spelling, which agents call)
        """The NIC's address."""
        return self.ip

    @property
    def pid(self) -> int:
        """PID of the server's shell (its network namespace)."""
        return int(self.node.pid)

    def popen(self, *args: Any, **kw: Any):
        """A process in the server's namespace."""
        return self.node.popen(*args, **kw)


def _record(plan: FabricPlan, run_dir: Path, datapath: str) -> None:
    """Write the names clean-up needs (and the bridges' datapath) before creating
    anything."""
    data = {
        "interfaces": interface_names(plan),
        "bridges": bridge_names(plan),
        "ovs_env": ovs_env(run_dir),
        "datapath": datapath,
        "plan": plan.to_dict(),
    }
    (run_dir / RECORD).write_text(json.dumps(data, indent=1))


def recorded_names(run_dir: Path) -> dict:
    """What ``start_fabric`` recorded in ``run_dir`` ({} if nothing)."""
    path = Path(run_dir) / RECORD
    return json.loads(path.read_text()) if path.exists() else {}


def run_ip_batch(lines: list[str], what: str, netns_pid: int | None = None) -> None:
    """``ip -batch -`` with ``lines``, in the namespace of ``netns_pid`` or the root one
    (see :func:`topo.qos.run_batch`)."""
    qos.run_batch("ip", lines, what, netns_pid)


def static_arp(net: Mininet, plan: FabricPlan) -> None:
    """Permanent neighbour entries for every other host, one ``ip -batch`` per host."""
    for h in plan.hosts:
        dev = intf_name(h.host_node, h.port)
        lines = [
            f"neigh replace {o.ip} lladdr {o.mac} dev {dev} nud permanent"
            for o in plan.hosts
            if o.host_node != h.host_node
        ]
        run_ip_batch(lines, f"static ARP on {h.name}", net.get(h.host_node).pid)


def source_routes(plan: FabricPlan, net: Mininet) -> None:
    """Rail servers: a flow sent from NIC i's address leaves on NIC i (one routing
    table per NIC, chosen by source address), whatever the main table prefers."""
    if plan.nics == 1:
        return
    for node in plan.server_names():
        mine = [h for h in plan.hosts if h.host_node == node]
        run_ip_batch(rail_route_lines(mine), f"source routes on {node}", net.get(node).pid)


def rail_route_lines(nics: list[HostPlan]) -> list[str]:
    """``ip -batch`` lines of one server's per-NIC tables (table 100 + NIC number)."""
    lines = []
    for h in nics:
        dev, table = intf_name(h.host_node, h.port), RAIL_TABLE_BASE + h.port
        lines.append(f"rule add from {h.ip} lookup {table}")
        lines.append(
            f"route replace {FABRIC_NET}/{FABRIC_PREFIX_LEN} dev {dev} src {h.ip} table {table}"
        )
    return lines


def mtu_lines(devs: list[str], mtu: int) -> list[str]:
    """``ip -batch`` lines giving every interface of ``devs`` the MTU ``mtu``."""
    return [f"link set dev {dev} mtu {mtu}" for dev in devs]


def apply_mtu(net: Mininet, plan: FabricPlan) -> None:
    """The plan's MTU on both ends of every link: the switch ends in the root namespace
    (one batch), each host's NIC in its namespace.  Call after ``net.build()`` and before
    ``net.start()``, so the switches open their ports at the final MTU."""
    run_ip_batch(mtu_lines(switch_interfaces(plan), plan.mtu), "MTU of the switch ports")
    for h in plan.hosts:
        dev = intf_name(h.host_node, h.port)
        run_ip_batch(mtu_lines([dev], plan.mtu), f"MTU on {h.name}", net.get(h.host_node).pid)


IPV6_CONF = Path("/proc/sys/net/ipv6/conf")


def disable_ipv6(devs: list[str], conf: Path = IPV6_CONF) -> int:
    """IPv6 off on ``devs`` (root-namespace switch ports): otherwise the kernel sends its
    own neighbour discovery and MLD frames out of every switch port, through the level
    classes.  Returns how many were switched off (0 where the kernel has no IPv6)."""
    done = 0
    for dev in devs:
        path = conf / dev / "disable_ipv6"
        if path.exists():
            path.write_text("1\n")
            done += 1
    return done


def apply_port_schedulers(net: Mininet, plan: FabricPlan, levels: int, queue_packets: int) -> None:
    """linux-noop QoS on every switch port (OVS keeps off tc), then tc everywhere."""
    root, hosts = port_schedulers(plan, levels, queue_packets)
    set_linux_noop_qos([ps.dev for ps in root])
    qos.apply_schedulers(root)
    for name, ps in hosts.items():
        qos.apply_schedulers([ps], netns_pid=net.get(plan.host(name).host_node).pid)


def _build_net(plan: FabricPlan, controller_port: int, datapath: str) -> Mininet:
    """Mininet object for ``plan`` on OVS ``datapath`` (built, not started)."""
    net = Mininet(
        topo=LeafSpineTopo(plan=plan),
        switch=switch_class(datapath),
        controller=None,
        link=Link,
        build=False,
        autoSetMacs=False,
        autoStaticArp=False,
    )
    net.addController(PlainRemoteController("c0", ip="127.0.0.1", port=controller_port))
    net.build()
    return net


def start_fabric(
    plan: FabricPlan,
    run_dir: Path,
    controller_port: int,
    levels: int = MAX_LEVELS,
    queue_packets: int = qos.DEFAULT_QUEUE_PACKETS,
    userspace_tso: bool = True,
) -> Fabric:
    """Start OVS and the Mininet fabric of ``plan``, pointed at the controller on
    127.0.0.1:``controller_port``.  It returns without waiting for the controller: the
    caller waits for every switch to be connected and routed on the controller's API
    (``ControllerClient.wait_ready``; ``topo`` does not import ``controller``).  The
    bridges use the kernel datapath
    where the openvswitch module exists, the userspace one otherwise
    (:func:`topo.ovs.detect_datapath`).  ``userspace_tso=False`` turns OVS's userspace
    TSO off (a benchmark lever).  On failure everything started is stopped."""
    t0 = time.monotonic()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    datapath = detect_datapath()
    _record(plan, run_dir, datapath)
    ovs = OvsService(run_dir, userspace_tso=userspace_tso)
    ovs.start()
    net = None
    try:
        net = _build_net(plan, controller_port, datapath)
        disable_ipv6(switch_interfaces(plan))
        apply_mtu(net, plan)
        net.start()
        static_arp(net, plan)
        source_routes(plan, net)
        apply_port_schedulers(net, plan, levels, queue_packets)
    except BaseException:
        log.error("fabric start failed; stopping what was started")
        if net is not None:
            Fabric(plan, run_dir, net, ovs, levels, queue_packets).stop()
        else:
            ovs.stop()
        raise
    fab = Fabric(
        plan,
        run_dir,
        net,
        ovs,
        levels,
        queue_packets,
        time.monotonic() - t0,
        interface_names(plan),
        datapath,
    )
    log.info(
        "fabric up in %.2f s (%d switches, %d hosts, datapath %s, MTU %d)",
        fab.bringup_s,
        len(plan.switches),
        len(plan.hosts),
        datapath,
        plan.mtu,
    )
    return fab


def cleanup(run_dir: Path) -> list[str]:
    """Remove what a fabric recorded in ``run_dir`` left behind (after a crash): its
    bridges (if its OVS still runs), its interfaces in the root namespace, the OVS
    daemons (by PID file) and the sysctl.  Returns what was removed."""
    run_dir, removed = Path(run_dir), []
    rec = recorded_names(run_dir)
    if rec and db_socket(run_dir).is_socket():
        env = {**os.environ, **rec["ovs_env"]}
        for br in rec["bridges"]:
            res = subprocess.run(
                ["ovs-vsctl", "--timeout=10", "--if-exists", "del-br", br],
                env=env,
                capture_output=True,
                timeout=CMD_TIMEOUT_S,
            )
            if res.returncode == 0:
                removed.append(f"bridge {br}")
    for pid in stop_daemons(run_dir):
        removed.append(f"pid {pid}")
    for name in rec.get("interfaces", []):
        if Path("/sys/class/net", name).exists():
            subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=CMD_TIMEOUT_S)
            removed.append(f"link {name}")
    if restore_sysctl(run_dir) is not None:
        removed.append("sysctl net.core.wmem_default")
    return removed
