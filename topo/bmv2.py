"""BMv2 ``simple_switch_grpc`` switches in Mininet, and a fabric of them.

``BMv2Switch`` runs one simple_switch_grpc per switch, each in a network namespace of its
own that holds nothing but its data ports (the switch ends of its links, no address)
and a loopback left down:

- ``--device-id`` = the plan's dpid (the P4Runtime driver uses the same id);
- gRPC on a Unix socket ``<run_dir>/bmv2/<name>.grpc`` (the folder is 0700): the
  P4Runtime controller in the root namespace reaches it through the file system;
- builds with Thrift (p4lang's packages; BMv2 has no option to turn it off or to bind
  it to loopback: ``bm_runtime`` listens on all addresses) open their Thrift port,
  9090, inside that namespace, where nothing can reach it: no process runs there but
  the switch, and no packet can address it (its ports have no address, its loopback is
  down).  So nothing of BMv2 listens in the root namespace;
- ``--no-p4``: the controller pushes the pipeline over P4Runtime;
- ``--priority-queues 8`` (the pipeline sets standard_metadata.priority);
- its stdout/stderr and log file go to ``<run_dir>/bmv2/<name>.log``;
- ready when its gRPC socket accepts connections (polled, hard timeout, aborted as soon
  as the process dies); stopped by PID (SIGTERM, then SIGKILL).

BMv2 reads and writes whole frames through AF_PACKET and does not fix checksums of
offloaded packets: segmentation and checksum offloads are turned off on every veth (host
and switch ends), else TCP segments arrive with bad checksums or above the MTU.
The port schedulers are the same tc HTB ones as on OVS (topo.qos), on every egress (the
switch ends' set up inside each switch's namespace), and every interface gets the plan's
MTU before the switches start (as on OVS; BMv2 reads
frames through libpcap, whose default snapshot length, 256 KiB, holds a jumbo frame).
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import socket
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
from topo.net import mtu_lines, port_schedulers, run_ip_batch, static_arp
from topo.plan import FabricPlan
from workload.marking import MAX_LEVELS

log = logging.getLogger("topo.bmv2")

BINARY = "simple_switch_grpc"
GRPC_DIR = "bmv2"  # in the run folder: the switches' gRPC sockets and logs
PRIORITY_QUEUES = 8
UNIX_PATH_MAX = 107
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.05
OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro")
CMD_TIMEOUT_S = 30.0


def bmv2_available() -> str | None:
    """None when simple_switch_grpc is on PATH, else the reason it cannot run."""
    return None if shutil.which(BINARY) else f"{BINARY} (BMv2) is not installed"


def grpc_addresses(plan: FabricPlan, run_dir: Path) -> dict[str, str]:
    """gRPC address of every switch: ``unix:<run_dir>/bmv2/<switch>.grpc`` (absolute;
    ValueError when a path is too long for a Unix socket)."""
    d = Path(run_dir).resolve() / GRPC_DIR
    out = {sw.name: f"unix:{d / sw.name}.grpc" for sw in plan.switches}
    for addr in out.values():
        if len(os.fsencode(addr[5:])) > UNIX_PATH_MAX:
            raise ValueError(
                f"run dir {run_dir}: gRPC socket {addr[5:]} is over {UNIX_PATH_MAX} bytes"
            )
    return out


def switch_argv(
    name: str,
    device_id: int,
    grpc_addr: str,
    ports: dict[int, str],
    log_file: Path,
    binary: str = BINARY,
) -> list[str]:
    """Command line of one switch (``ports``: port number -> interface name; gRPC server
    on ``grpc_addr``, ``unix:PATH`` or ``HOST:PORT``).  No ``--thrift-port``: each switch
    has a namespace of its own, where the default Thrift port collides with nothing."""
    argv = [
        binary,
        "--device-id",
        str(device_id),
        "--log-file",
        str(log_file),
        "--log-level",
        "warn",
    ]
    for port, intf in sorted(ports.items()):
        argv += ["-i", f"{port}@{intf}"]
    return argv + [
        "--no-p4",
        "--",
        "--grpc-server-addr",
        grpc_addr,
        "--priority-queues",
        str(PRIORITY_QUEUES),
    ]


def _connects(addr: str) -> bool:
    """Whether ``addr`` (``unix:PATH`` or ``HOST:PORT``) accepts a connection now."""
    target: str | tuple[str, int]
    if addr.startswith("unix:"):
        family, target = socket.AF_UNIX, addr[5:]
    else:
        host, _, port = addr.rpartition(":")
        family, target = socket.AF_INET, (host, int(port))
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(target)
        except OSError:
            return False
    return True


def wait_port(host: str, port: int, pid: int, timeout: float) -> None:
    """:func:`wait_address` of ``host:port``."""
    wait_address(f"{host}:{port}", pid, timeout)


def wait_address(addr: str, pid: int, timeout: float) -> None:
    """Return once ``addr`` (``unix:PATH`` or ``HOST:PORT``) accepts connections;
    RuntimeError if ``pid`` exits first or ``timeout`` passes.  Between attempts it waits
    on the process (pidfd), not a sleep."""
    deadline = time.monotonic() + timeout
    fd = os.pidfd_open(pid)
    try:
        while not _connects(addr):
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"nothing listens on {addr} after {timeout:.0f} s")
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if poller.poll(min(POLL_S, left) * 1000):
                raise RuntimeError(f"pid {pid} exited before listening on {addr}")
    finally:
        os.close(fd)


class BMv2Switch(Switch):
    """One simple_switch_grpc in a network namespace of its own (see module docstring).
    Params: ``grpc_addr``, ``device_id``, ``log_dir``."""

    def __init__(self, name: str, grpc_addr: str, device_id: int, log_dir: Path, **params) -> None:
        """Configure (not start) switch ``name``; its namespace (Mininet's shell) is made
        now, so its links' switch ends are created inside it."""
        params["inNamespace"] = True
        super().__init__(name, **params)
        self.grpc_addr, self.device_id, self.log_dir = grpc_addr, device_id, Path(log_dir)
        self.proc: subprocess.Popen | None = None

    @classmethod
    def setup(cls) -> None:
        """Nothing to check machine-wide (Mininet calls this once)."""

    def port_map(self) -> dict[int, str]:
        """Data-plane ports: number -> interface (loopback excluded)."""
        return {p: i.name for p, i in self.intfs.items() if i.name != "lo"}

    def start(self, controllers) -> None:
        """Turn offloads off on our veths, then run the switch in our namespace (no wait
        here: Mininet starts switches one by one; :meth:`wait_ready` waits for them)."""
        for intf in self.port_map().values():
            disable_offloads(intf, self.pid)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.chmod(0o700)  # the gRPC sockets: owner only
        if self.grpc_addr.startswith("unix:"):
            Path(self.grpc_addr[5:]).unlink(missing_ok=True)  # a crashed run's
        out = open(self.log_dir / f"{self.name}.log", "ab")  # noqa: SIM115 (child owns it)
        argv = switch_argv(
            self.name, self.device_id, self.grpc_addr, self.port_map(), self.log_dir / self.name
        )
        try:
            self.proc = self.popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            out.close()
        log.info("%s: %s pid %d, gRPC %s", self.name, BINARY, self.proc.pid, self.grpc_addr)

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Return once the gRPC socket accepts connections."""
        if self.proc is None:
            raise RuntimeError(f"{self.name}: not started")
        wait_address(self.grpc_addr, self.proc.pid, timeout)

    def crash(self) -> None:
        """SIGKILL the switch process (by PID) and reap it: its pipeline, entries and
        P4Runtime connection are gone, its namespace and interfaces stay."""
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"{self.name}: not running")
        self.proc.kill()
        self.proc.wait(STOP_TIMEOUT_S)

    def stop(self, deleteIntfs: bool = True) -> None:
        """Stop the switch process by PID, then let Mininet delete the interfaces (and
        end the shell that holds the namespace)."""
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
    grpc_addrs: dict[str, str]
    levels: int
    bringup_s: float = 0.0

    def host(self, name: str):
        """The Mininet host called ``name``."""
        return self.net.get(name)

    def namespaces(self) -> dict[str, int]:
        """switch -> the pid of the shell holding its network namespace."""
        return {sw.name: self.net.get(sw.name).pid for sw in self.plan.switches}

    def stop_switch(self, name: str) -> None:
        """Take switch ``name`` away as a crash would (``BMv2Switch.crash``)."""
        self.net.get(name).crash()

    def start_switch(self, name: str, timeout: float = READY_TIMEOUT_S) -> None:
        """Run switch ``name`` again after :meth:`stop_switch` (a fresh process without
        a pipeline, on the same interfaces, whose port schedulers stayed) and wait for
        its gRPC socket; the controller reconnects and installs it."""
        sw = self.net.get(name)
        sw.start(None)
        sw.wait_ready(timeout)

    def stop(self) -> None:
        """Stop switches (by PID), host shells and links."""
        self.net.stop()


def _build_net(plan: FabricPlan, addrs: dict[str, str], run_dir: Path) -> Mininet:
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
            grpc_addr=addrs[sw.name], device_id=sw.dpid, log_dir=run_dir / GRPC_DIR
        )
    net.build()
    return net


def start_bmv2_fabric(
    plan: FabricPlan,
    run_dir: Path,
    addrs: dict[str, str],
    levels: int = MAX_LEVELS,
    queue_packets: int = qos.DEFAULT_QUEUE_PACKETS,
    ready_timeout: float = 60.0,
) -> BMv2Fabric:
    """Start the BMv2 fabric of ``plan`` (switch ``n`` serving gRPC on ``addrs[n]``,
    :func:`grpc_addresses`, within ``ready_timeout``), the plan's MTU on every
    interface, static ARP, host offloads off and port schedulers on every egress.  It
    returns without waiting for the P4Runtime controller: the caller waits on its API
    (``ControllerClient.wait_ready``).  On failure everything started is stopped."""
    reason = bmv2_available()
    if reason:
        raise RuntimeError(reason)
    t0, run_dir = time.monotonic(), Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    net = _build_net(plan, addrs, run_dir)
    try:
        for node in [*net.switches, *net.hosts]:  # before the switches open their ports
            devs = [i.name for i in node.intfList() if i.name != "lo"]
            run_ip_batch(mtu_lines(devs, plan.mtu), f"MTU on {node.name}", node.pid)
        net.start()
        for sw in net.switches:
            sw.wait_ready(ready_timeout)
        static_arp(net, plan)
        root, hosts = port_schedulers(plan, levels, queue_packets)
        for ps in root:  # the switch ends live in their switch's namespace
            qos.apply_schedulers([ps], netns_pid=net.get(ps.dev.rsplit("-eth", 1)[0]).pid)
        for name, ps in hosts.items():
            disable_offloads(intf_name(name, 0), net.get(name).pid)
            qos.apply_schedulers([ps], netns_pid=net.get(name).pid)
    except BaseException:
        log.error("BMv2 fabric start failed; stopping what was started")
        net.stop()
        raise
    fab = BMv2Fabric(plan, run_dir, net, dict(addrs), levels, time.monotonic() - t0)
    log.info("BMv2 fabric up in %.2f s (%d switches)", fab.bringup_s, len(plan.switches))
    return fab
