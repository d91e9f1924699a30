"""TCP settings in the host namespaces (topo.hosttcp)."""
from __future__ import annotations

from topo.hosttcp import HOST_SYSCTLS, sysctl_argv


def test_slow_start_after_idle_is_switched_off_inside_the_namespace_only():
    argv = sysctl_argv(4242)
    assert argv[:3] == ["mnexec", "-a", "4242"]  # inside the host's namespace
    assert "net.ipv4.tcp_slow_start_after_idle=0" in argv
    assert HOST_SYSCTLS["net.ipv4.tcp_slow_start_after_idle"] == "0"
