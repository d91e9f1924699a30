"""Pure parts of topo.bmv2 (no root, no BMv2 needed): command line, ports, readiness."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from topo.bmv2 import THRIFT_OFFSET, grpc_ports, switch_argv, wait_port
from topo.plan import FabricPlan


def test_argv_binds_grpc_to_loopback_with_device_id_queues_and_ports(tmp_path):
    argv = switch_argv("l1", 0x1001, 50001, {2: "l1-eth2", 1: "l1-eth1"}, tmp_path / "l1")
    assert argv[0] == "simple_switch_grpc"
    assert argv[argv.index("--device-id") + 1] == str(0x1001)
    assert argv[argv.index("--thrift-port") + 1] == str(50001 + THRIFT_OFFSET)
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-i"] == ["1@l1-eth1", "2@l1-eth2"]
    no_thrift = switch_argv("l1", 1, 50001, {}, tmp_path / "l1", thrift=False)
    assert "--thrift-port" not in no_thrift
    target = argv[argv.index("--") + 1 :]
    assert target == ["--grpc-server-addr", "127.0.0.1:50001", "--priority-queues", "8"]
    assert "--no-p4" in argv[: argv.index("--")]


def test_grpc_ports_are_distinct_per_switch_and_validated():
    plan = FabricPlan(spines=2, leaves=4, hosts_per_leaf=2, host_bw_mbps=10, fabric_bw_mbps=10)
    ports = grpc_ports(plan, 50000)
    assert sorted(ports) == sorted(sw.name for sw in plan.switches)
    assert sorted(ports.values()) == list(range(50000, 50006))
    with pytest.raises(ValueError, match="grpc base port"):
        grpc_ports(plan, 80)


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
