"""TCP settings in the host namespaces (topo.hosttcp)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from topo.hosttcp import (
    GSO_MAX_BYTES,
    HOST_SYSCTLS,
    apply_host_gso,
    gso_argv,
    host_sysctls,
    sysctl_argv,
)


def test_slow_start_after_idle_is_switched_off_inside_the_namespace_only():
    argv = sysctl_argv(4242, HOST_SYSCTLS)
    assert argv[:3] == ["mnexec", "-a", "4242"]  # inside the host's namespace
    assert "net.ipv4.tcp_slow_start_after_idle=0" in argv


def test_the_rto_cap_is_set_only_where_the_kernel_has_it(tmp_path, monkeypatch):
    monkeypatch.setattr("topo.hosttcp.RTO_CAP", True)
    assert host_sysctls(tmp_path) == dict(HOST_SYSCTLS)  # an old kernel: no such file
    (tmp_path / "net" / "ipv4").mkdir(parents=True)
    (tmp_path / "net" / "ipv4" / "tcp_rto_max_ms").write_text("120000\n")
    got = host_sysctls(tmp_path)
    assert got["net.ipv4.tcp_rto_max_ms"] == "1000" and got["net.ipv4.tcp_retries2"] == "80"


def test_hosts_use_reno_and_keep_little_of_a_socket_in_their_qdisc():
    argv = sysctl_argv(7, host_sysctls(Path("/nonexistent")))
    assert "net.ipv4.tcp_congestion_control=reno" in argv
    limit = next(a for a in argv if a.startswith("net.ipv4.tcp_limit_output_bytes="))
    assert int(limit.split("=")[1]) <= 2 * (9000 + 14)  # about two jumbo frames, not 4 MiB


def test_gso_segments_are_capped_inside_the_namespace_at_two_jumbo_frames():
    assert gso_argv(4242, "h11-eth0") == [
        "mnexec",
        "-a",
        "4242",
        "ip",
        "link",
        "set",
        "dev",
        "h11-eth0",
        "gso_max_size",
        "18000",
    ]  # one argv list: the name never reaches a shell
    assert 9000 < GSO_MAX_BYTES <= 2 * 9000


def test_apply_host_gso_runs_one_command_per_nic_and_names_the_one_that_failed(monkeypatch):
    ran = []

    def run(argv, **_kw):
        ran.append(argv)
        failed = argv[7] == "h2-eth1"
        return subprocess.CompletedProcess(argv, int(failed), "", "Cannot find device")

    monkeypatch.setattr("topo.hosttcp.subprocess.run", run)
    apply_host_gso([(7, "h1-eth0"), (7, "h1-eth1")], 12000)
    assert ran == [gso_argv(7, "h1-eth0", 12000), gso_argv(7, "h1-eth1", 12000)]
    wanted = "gso_max_size of h2-eth1 in namespace of pid 8 failed: Cannot find"
    with pytest.raises(RuntimeError, match=wanted):
        apply_host_gso([(8, "h2-eth0"), (8, "h2-eth1"), (8, "h2-eth2")])
    assert ran[-1][7] == "h2-eth1"  # stopped at the first failure
