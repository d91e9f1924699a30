"""Switch and controller classes for Mininet: Open vSwitch on the userspace datapath.

- ``CoflowOVSSwitch``: ``datapath='user'`` (bridges ``datapath_type=netdev``; the kernel
  datapath does not exist here), ``failMode='secure'`` (no forwarding without the
  controller), OpenFlow 1.3 only, batch start-up (one ovs-vsctl for all switches);
  ``KernelCoflowOVSSwitch`` is the same on the kernel datapath (``datapath_type=system``),
  for machines with the openvswitch module (:func:`switch_class`).
- :func:`set_linux_noop_qos`: gives ports QoS ``type=linux-noop`` so OVS leaves the tc
  qdiscs of :mod:`topo.qos` alone (without it OVS resets a port's root qdisc).
- ``PlainRemoteController``: Mininet's RemoteController checks the port with telnet and
  can crash with UnicodeDecodeError; this one uses a plain socket connect.
"""

from __future__ import annotations

import logging
import socket
import subprocess
from collections.abc import Sequence

import topo.mininet_log  # noqa: F401  (before Mininet: keeps our loggers plain)

# isort: split
from mininet.node import OVSSwitch, RemoteController

log = logging.getLogger("topo.switch")
VSCTL_TIMEOUT_S = 30.0


class CoflowOVSSwitch(OVSSwitch):
    """OVS userspace switch speaking OpenFlow 1.3 to a remote controller only."""

    DATAPATH = "user"  # Mininet's name for datapath_type=netdev

    def __init__(self, name: str, **params) -> None:
        """Force the options this testbed depends on (see module docstring)."""
        params.update(
            datapath=self.DATAPATH,
            failMode="secure",
            protocols="OpenFlow13",
            batch=True,
            inband=False,
        )
        super().__init__(name, **params)


class KernelCoflowOVSSwitch(CoflowOVSSwitch):
    """The same switch on the OVS kernel datapath (needs the openvswitch module)."""

    DATAPATH = "kernel"  # Mininet adds no datapath_type: OVS's default, system


def switch_class(datapath: str) -> type[CoflowOVSSwitch]:
    """Switch class for an OVS ``datapath_type`` ("system" or "netdev")."""
    classes = {"system": KernelCoflowOVSSwitch, "netdev": CoflowOVSSwitch}
    if datapath not in classes:
        raise ValueError(f"datapath must be one of {', '.join(classes)}, got {datapath!r}")
    return classes[datapath]


def set_linux_noop_qos(ports: Sequence[str], timeout: float = VSCTL_TIMEOUT_S) -> None:
    """One ovs-vsctl transaction: a shared QoS row ``type=linux-noop`` on every port."""
    if not ports:
        return
    argv = [
        "ovs-vsctl",
        "--timeout",
        str(int(timeout)),
        "--",
        "--id=@noop",
        "create",
        "QoS",
        "type=linux-noop",
    ]
    for port in ports:
        argv += ["--", "set", "Port", port, "qos=@noop"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 5)
    if res.returncode != 0:
        raise RuntimeError(f"ovs-vsctl set qos failed: {res.stderr.strip()}")


def port_qos_types(port: str, timeout: float = VSCTL_TIMEOUT_S) -> str:
    """QoS type of ``port`` as OVS records it ('' when none)."""
    res = subprocess.run(
        ["ovs-vsctl", "--timeout", str(int(timeout)), "get", "Port", port, "qos"],
        capture_output=True,
        text=True,
        timeout=timeout + 5,
    )
    qos = res.stdout.strip()
    if res.returncode != 0 or qos in ("", "[]"):
        return ""
    res = subprocess.run(
        ["ovs-vsctl", "get", "QoS", qos, "type"],
        capture_output=True,
        text=True,
        timeout=timeout + 5,
    )
    return res.stdout.strip().strip('"')


def tcp_port_open(ip: str, port: int, timeout: float = 1.0) -> bool:
    """True if something accepts TCP connections on ip:port."""
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


class PlainRemoteController(RemoteController):
    """RemoteController whose listening check is a plain socket connect."""

    def isListening(self, ip: str, port: int) -> bool:
        """Plain connect instead of Mininet's telnet pipe."""
        return tcp_port_open(ip, port)

    def checkListening(self) -> None:
        """Log (do not fail) when nothing listens yet: switches retry on their own."""
        if not self.isListening(self.ip, self.port):
            log.warning("no controller listening on %s:%d yet", self.ip, self.port)
