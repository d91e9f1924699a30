"""TCP settings inside the emulated hosts' network namespaces.

Connections are opened before the iteration and then sit idle between messages; Linux
would restart slow start on a connection idle for longer than its RTO
(``tcp_slow_start_after_idle``), putting a slow start back on the critical path of
every coflow.  Strict priority may starve a low level's flow for seconds; TCP backs its
retransmission timer off exponentially meanwhile (up to 120 s), so once the link frees
the flow would sit idle until its next timeout, where the fluid model resumes it at once:
``tcp_rto_max_ms`` (Linux 6.15 and later) could bound that back-off to 1 s; it is
switched off (``RTO_CAP``) until a stalled run seen with it is understood.  The settings are per network namespace, so they change only the hosts."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterable, Mapping

HOST_SYSCTLS: Mapping[str, str] = {"net.ipv4.tcp_slow_start_after_idle": "0"}
# With the back-off capped at 1 s, the default 15 retries would give a starved connection
# up after ~15 s (ETIMEDOUT); 80 keep it alive past the agents' 60 s stall timeout.
RTO_CAP_SYSCTLS: Mapping[str, str] = {"net.ipv4.tcp_rto_max_ms": "1000",
                                      "net.ipv4.tcp_retries2": "80"}
PROC_SYS = Path("/proc/sys")
# Off: with it, fb-slice-busy under FIFO once ran past its deadline in a clean-clone test run
# (a flow that never finished); not understood yet, so the kernel's default back-off stays.
RTO_CAP = False


def host_sysctls(proc_sys: Path = PROC_SYS) -> dict[str, str]:
    """``HOST_SYSCTLS``, and ``RTO_CAP_SYSCTLS`` where this kernel has tcp_rto_max_ms."""
    if RTO_CAP and Path(proc_sys, "net", "ipv4", "tcp_rto_max_ms").exists():
        return {**HOST_SYSCTLS, **RTO_CAP_SYSCTLS}
    return dict(HOST_SYSCTLS)
CMD_TIMEOUT_S = 30.0


def sysctl_argv(netns_pid: int, settings: Mapping[str, str]) -> list[str]:
    """The command that applies ``settings`` in the namespace of ``netns_pid``."""
    return ["mnexec", "-a", str(netns_pid), "sysctl", "-q", "-w",
            *(f"{key}={value}" for key, value in settings.items())]


def apply_host_sysctls(netns_pids: Iterable[int]) -> None:
    """Apply ``host_sysctls()`` in every host namespace; RuntimeError naming the first
    that failed."""
    settings = host_sysctls()
    for pid in netns_pids:
        res = subprocess.run(sysctl_argv(pid, settings), capture_output=True, text=True,
                             timeout=CMD_TIMEOUT_S)
        if res.returncode != 0:
            raise RuntimeError(f"sysctl in host namespace of pid {pid} failed: "
                               f"{(res.stderr or res.stdout).strip()}")
