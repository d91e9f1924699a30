"""TCP settings inside the emulated hosts' network namespaces.

Connections are opened before the iteration and then sit idle between messages; Linux
would restart slow start on a connection idle for longer than its RTO
(``tcp_slow_start_after_idle``), putting a slow start back on the critical path of
every coflow.  The setting is per network namespace, so it changes only the hosts."""
from __future__ import annotations

import subprocess
from typing import Iterable, Mapping

HOST_SYSCTLS: Mapping[str, str] = {"net.ipv4.tcp_slow_start_after_idle": "0"}
CMD_TIMEOUT_S = 30.0


def sysctl_argv(netns_pid: int, settings: Mapping[str, str] = HOST_SYSCTLS) -> list[str]:
    """The command that applies ``settings`` in the namespace of ``netns_pid``."""
    return ["mnexec", "-a", str(netns_pid), "sysctl", "-q", "-w",
            *(f"{key}={value}" for key, value in settings.items())]


def apply_host_sysctls(netns_pids: Iterable[int]) -> None:
    """Apply ``HOST_SYSCTLS`` in every host namespace; RuntimeError naming the first
    that failed."""
    for pid in netns_pids:
        res = subprocess.run(sysctl_argv(pid), capture_output=True, text=True,
                             timeout=CMD_TIMEOUT_S)
        if res.returncode != 0:
            raise RuntimeError(f"sysctl in host namespace of pid {pid} failed: "
                               f"{(res.stderr or res.stdout).strip()}")
