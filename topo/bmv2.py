"""BMv2 ``simple_switch_grpc`` switches in Mininet, and a fabric of them.

``BMv2Switch`` runs one simple_switch_grpc per switch in the root namespace:

- ``--device-id`` = the plan's dpid (the P4Runtime driver uses the same id);
- gRPC on 127.0.0.1:<per-switch port> only; the Thrift port (p4lang's packaged builds
  open one on all addresses) is set per switch so switches never collide;
- ``--no-p4``: the controller pushes the pipeline over P4Runtime;
- ``--priority-queues 8`` (the pipeline sets standard_metadata.priority);
- its stdout/stderr and log file go to ``<run_dir>/bmv2/<name>.log``;
- ready when its gRPC port accepts connections (polled, hard timeout, aborted as soon
  as the process dies); stopped by PID (SIGTERM, then SIGKILL).

BMv2 reads and writes whole frames through AF_PACKET and does not fix checksums of
offloaded packets: segmentation and checksum offloads are turned off on every veth (host
and switch ends), else TCP segments arrive with bad checksums or above the MTU.
The port schedulers are the same tc HTB ones as on OVS (topo.qos), on every egress, and
every interface gets the plan's MTU before the switches start (as on OVS; BMv2 reads
frames through libpcap, whose default snapshot length, 256 KiB, holds a jumbo frame).
"""

from __future__ import annotations

import functools
import logging
import os
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import topo.mininet_log  # noqa: F401  (before Mininet: keeps our loggers plain)

# isort: split
from mininet.link import Link
from mininet.net import Mininet
from mininet.node import Switch

from topo import qos
from topo.leafspine import LeafSpineTopo, intf_name
from topo.plan import FabricPlan
from workload.marking import MAX_LEVELS

log = logging.getLogger("topo.bmv2")

BINARY = "simple_switch_grpc"
GRPC_HOST = "127.0.0.1"
PRIORITY_QUEUES = 8
THRIFT_OFFSET = 1000  # thrift port = gRPC port + this
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.05
OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro")
CMD_TIMEOUT_S = 30.0


def bmv2_available() -> str | None:
    """None when simple_switch_grpc is on PATH, else the reason it cannot run."""
    return None if shutil.which(BINARY) else f"{BINARY} (BMv2) is not installed"


def grpc_ports(plan: FabricPlan, base: int) -> dict[str, int]:
    """gRPC port of every switch: ``base`` + its position in the plan."""
    if not 1024 <= base <= 65535 - len(plan.switches) - THRIFT_OFFSET:
        raise ValueError(
            f"grpc base port must leave room for {len(plan.switches)} "
            f"switches below 65535, got {base}"
        )
    return {sw.name: base + i for i, sw in enumerate(plan.switches)}


@functools.cache
def has_thrift(binary: str = BINARY) -> bool:
    """True if ``binary`` was built with the Thrift runtime server (it then opens a
    Thrift port, 9090 unless told otherwise, and accepts ``--thrift-port``)."""
    res = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    return "--thrift-port" in res.stdout + res.stderr


def switch_argv(
    name: str,
    device_id: int,
    grpc_port: int,
    ports: dict[int, str],
    log_file: Path,
    binary: str = BINARY,
    thrift: bool = True,
) -> list[str]:
    """Command line of one switch (``ports``: port number -> interface name);
    ``thrift``: the binary has a Thrift server, whose port must differ per switch."""
    argv = [
        binary,
        "--device-id",
        str(device_id),
        "--log-file",
        str(log_file),
        "--log-level",
        "warn",
    ]
    if thrift:
        argv += ["--thrift-port", str(grpc_port + THRIFT_OFFSET)]
    for port, intf in sorted(ports.items()):
        argv += ["-i", f"{port}@{intf}"]
    return argv + [
        "--no-p4",
        "--",
        "--grpc-server-addr",
        f"{GRPC_HOST}:{grpc_port}",
        "--priority-queues",
        str(PRIORITY_QUEUES),
    ]


def wait_port(host: str, port: int, pid: int, timeout: float) -> None:
    """Return once ``host:port`` accepts TCP; RuntimeError if ``pid`` exits first or
    ``timeout`` passes.  Between attempts it waits on the process (pidfd), not a sleep."""
    import socket

    deadline = time.monotonic() + timeout
    fd = os.pidfd_open(pid)
    try:
        while True:
            try:
                with socket.create_connection((host, port), timeout=1.0):
                    return
            except OSError:
                pass
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"nothing listens on {host}:{port} after {timeout:.0f} s")
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if poller.poll(min(POLL_S, left) * 1000):
                raise RuntimeError(f"pid {pid} exited before listening on {host}:{port}")
    finally:
        os.close(fd)


class BMv2Switch(Switch):
    """One simple_switch_grpc (see module docstring).  Params: ``grpc_port``,
    ``device_id``, ``log_dir``."""

    def __init__(self, name: str, grpc_port: int, device_id: int, log_dir: Path, **params) -> None:
        """Configure (not start) switch ``name``."""
        super().__init__(name, **params)
        self.grpc_port, self.device_id, self.log_dir = grpc_port, device_id, Path(log_dir)
        self.proc: subprocess.Popen | None = None

    @classmethod
    def setup(cls) -> None:
        """Nothing to check machine-wide (Mininet calls this once)."""

    def port_map(self) -> dict[int, str]:
        """Data-plane ports: number -> interface (loopback excluded)."""
        return {p: i.name for p, i in self.intfs.items() if i.name != "lo"}

    def start(self, controllers) -> None:
        """Turn offloads off on our veths, then run the switch (no wait here: Mininet
        starts switches one by one; :meth:`wait_ready` waits for them together)."""
        for intf in self.port_map().values():
            disable_offloads(intf)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log_dir / f"{self.name}.log", "ab")  # noqa: SIM115 (child owns it)
        argv = switch_argv(
            self.name,
            self.device_id,
            self.grpc_port,
            self.port_map(),
            self.log_dir / f"{self.name}-bmv2",
            thrift=has_thrift(),
        )
        try:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=dict(os.environ),
            )
        finally:
            out.close()
        log.info(
            "%s: %s pid %d, gRPC %s:%d", self.name, BINARY, self.proc.pid, GRPC_HOST, self.grpc_port
        )

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Return once the gRPC port accepts connections."""
        if self.proc is None:
            raise RuntimeError(f"{self.name}: not started")
        wait_port(GRPC_HOST, self.grpc_port, self.proc.pid, timeout)

    def stop(self, deleteIntfs: bool = True) -> None:
        """Stop the switch process by PID, then let Mininet delete the interfaces."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning("%s: pid %d ignored SIGTERM; killing", self.name, self.proc.pid)
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)
        super().stop(deleteIntfs)


def disable_offloads(intf: str, netns_pid: int | None = None) -> None:
    """``ethtool -K <intf> rx off tx off sg off tso off gso off gro off``."""
    argv = ["ethtool", "-K", intf]
    for feature in OFFLOADS:
        argv += [feature, "off"]
    if netns_pid is not None:
        argv = ["mnexec", "-a", str(netns_pid)] + argv
    res = subprocess.run(argv, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    # ethtool exits 0 also when some feature is fixed; anything else is a real failure
    if res.returncode != 0:
        raise RuntimeError(f"ethtool -K {intf} failed: {res.stderr.strip()}")


@dataclass
class BMv2Fabric:
    """A running BMv2 fabric; ``stop()`` undoes everything :func:`start_bmv2_fabric` did."""

    plan: FabricPlan
    run_dir: Path
    net: Mininet
    grpc_ports: dict[str, int]
    levels: int
    bringup_s: float = 0.0

    def host(self, name: str):
        """The Mininet host called ``name``."""
        return self.net.get(name)

    def stop(self) -> None:
        """Stop switches (by PID), host shells and links."""
        self.net.stop()


def _build_net(plan: FabricPlan, ports: dict[str, int], run_dir: Path) -> Mininet:
    """Mininet object of BMv2 switches for ``plan`` (built, not started)."""
    net = Mininet(
        topo=LeafSpineTopo(plan=plan),
        switch=BMv2Switch,
        controller=None,
        link=Link,
        build=False,
        autoSetMacs=False,
        autoStaticArp=False,
    )
    for sw in plan.switches:  # per-switch parameters the Topo cannot carry
        net.topo.nodeInfo(sw.name).update(
            grpc_port=ports[sw.name], device_id=sw.dpid, log_dir=run_dir / "bmv2"
        )
    net.build()
    return net


def start_bmv2_fabric(
    plan: FabricPlan,
    run_dir: Path,
    ports: dict[str, int],
    levels: int = MAX_LEVELS,
    queue_packets: int = qos.DEFAULT_QUEUE_PACKETS,
    ready_timeout: float = 60.0,
) -> BMv2Fabric:
    """Start the BMv2 fabric of ``plan`` (switch ``n`` serving gRPC on ``ports[n]``
    within ``ready_timeout``), the plan's MTU on every interface, static ARP, host
    offloads off and port schedulers on every egress.  It returns without waiting for
    the P4Runtime controller: the caller waits on its API
    (``ControllerClient.wait_ready``).  On failure everything started is stopped."""
    from topo.net import apply_mtu, port_schedulers, static_arp  # shared with OVS

    reason = bmv2_available()
    if reason:
        raise RuntimeError(reason)
    t0, run_dir = time.monotonic(), Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    net = _build_net(plan, ports, run_dir)
    try:
        apply_mtu(net, plan)  # before the switches open their ports
        net.start()
        for sw in net.switches:
            sw.wait_ready(ready_timeout)
        static_arp(net, plan)
        root, hosts = port_schedulers(plan, levels, queue_packets)
        qos.apply_schedulers(root)
        for name, ps in hosts.items():
            disable_offloads(intf_name(name, 0), net.get(name).pid)
            qos.apply_schedulers([ps], netns_pid=net.get(name).pid)
    except BaseException:
        log.error("BMv2 fabric start failed; stopping what was started")
        net.stop()
        raise
    fab = BMv2Fabric(plan, run_dir, net, dict(ports), levels, time.monotonic() - t0)
    log.info("BMv2 fabric up in %.2f s (%d switches)", fab.bringup_s, len(plan.switches))
    return fab
