"""Pure parts of topo.bmv2 (no root, no BMv2 needed): command line, ports, readiness."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from topo.bmv2 import BMv2Switch, grpc_addresses, switch_argv, wait_address, wait_port
from topo.plan import FabricPlan


def test_argv_serves_grpc_on_its_socket_with_device_id_queues_and_ports(tmp_path):
    addr = f"unix:{tmp_path}/bmv2/l1.grpc"
    argv = switch_argv("l1", 0x1001, addr, {2: "l1-eth2", 1: "l1-eth1"}, tmp_path / "l1")
    assert argv[0] == "simple_switch_grpc"
    assert argv[argv.index("--device-id") + 1] == str(0x1001)
    assert "--thrift-port" not in argv  # its own namespace: the default port is unreachable
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-i"] == ["1@l1-eth1", "2@l1-eth2"]
    target = argv[argv.index("--") + 1 :]
    assert target == ["--grpc-server-addr", addr, "--priority-queues", "8"]
    assert "--no-p4" in argv[: argv.index("--")]


def test_grpc_addresses_are_unix_sockets_in_the_run_folder_one_per_switch(tmp_path):
    plan = FabricPlan(spines=2, leaves=4, hosts_per_leaf=2, host_bw_mbps=10, fabric_bw_mbps=10)
    addrs = grpc_addresses(plan, tmp_path)
    assert sorted(addrs) == sorted(sw.name for sw in plan.switches)
    assert addrs["l1"] == f"unix:{tmp_path.resolve()}/bmv2/l1.grpc"
    assert len(set(addrs.values())) == len(plan.switches)
    with pytest.raises(ValueError, match="over 107 bytes"):
        grpc_addresses(plan, tmp_path / ("x" * 100))


def test_switches_are_made_in_a_namespace_of_their_own(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(
        "mininet.node.Switch.__init__", lambda self, name, **params: seen.update(params)
    )
    BMv2Switch("l1", "unix:/x/l1.grpc", 1, tmp_path, inNamespace=False)
    assert seen["inNamespace"] is True


@pytest.mark.processes
@pytest.mark.sockets
def test_wait_address_accepts_a_unix_socket(tmp_path):
    path = tmp_path / "s.grpc"
    with socket.socket(socket.AF_UNIX) as srv:
        srv.bind(str(path))
        srv.listen(1)
        sleeper = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
        try:
            wait_address(f"unix:{path}", sleeper.pid, timeout=5)
        finally:
            sleeper.stdin.close()
            sleeper.wait(5)


@pytest.mark.processes
@pytest.mark.sockets
def test_wait_port_returns_when_listening_and_fails_fast_when_process_dies():
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        sleeper = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
        try:
            wait_port("127.0.0.1", port, sleeper.pid, timeout=5)
        finally:
            sleeper.stdin.close()
            sleeper.wait(5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    quitter = subprocess.Popen([sys.executable, "-c", "pass"])
    with pytest.raises(RuntimeError, match="exited before listening"):
        wait_port("127.0.0.1", dead_port, quitter.pid, timeout=20)
    quitter.wait(5)
