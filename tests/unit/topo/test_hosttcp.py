"""TCP settings in the host namespaces (topo.hosttcp)."""

from __future__ import annotations

from pathlib import Path

from topo.hosttcp import HOST_SYSCTLS, host_sysctls, sysctl_argv


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
