"""TCP settings inside the emulated hosts' network namespaces.

Connections are opened before the iteration and then sit idle between messages; Linux
would restart slow start on a connection idle for longer than its RTO
(``tcp_slow_start_after_idle``), putting a slow start back on the critical path of
every coflow.  Strict priority may starve a low level's flow for seconds; TCP backs its
retransmission timer off exponentially meanwhile (up to 120 s), so once the link frees
the flow would sit idle until its next timeout, where the fluid model resumes it at once:
``tcp_rto_max_ms`` (Linux 6.15 and later) bounds that back-off to 1 s (``RTO_CAP``).
Without it, fb-slice-busy under SEBF failed a run: a 45 KB flow starved by higher levels
from 6 s to 36 s of the run had backed off so far that it sent nothing for the next
30 s on an idle fabric, and the receiver's 60 s stall watchdog ended the run.

Congestion control is Reno, not this machine's default (BBR): at emulated rates BBR's
model of the path (its minimum RTT is a fraction of a millisecond, the 2 cores add
milliseconds of jitter) fires spurious retransmission timeouts (nstat in a host:
TCPSpuriousRtxHostQueues, DSACKs for every retransmission, no queue drop anywhere), and
the calibration burst measured 0.73-0.96 of nominal against 0.90-0.98 with Reno (5 runs
each, alternated).  Non-init namespaces may choose only ``reno`` and ``bbr`` here.
``tcp_limit_output_bytes`` (TCP small queues) keeps a socket's bytes in the host's own
qdisc to about two jumbo frames: the backlog waits in the socket instead of in the
emulated NIC's FIFOs, where a new flow's first packets would queue behind it
(fb-slice-busy under fair: average CCT 1.35-1.36x the fluid model's against 1.49-1.55x,
3 runs each).  The settings are per network namespace, so they change only the hosts.

Each host interface hands its port scheduler segments of at most ``GSO_MAX_BYTES``
(``gso_max_size``), not the kernel's 64 KB: HTB sends a whole segment on the tokens its
class has left and charges it afterwards, so a flow that started on an idle link ran
15-66 KB ahead of the link rate, 10-40 % of a 100-200 KB expert-parallel flow's time.
Capped, the default scenario's emulated/simulated iteration ratio went from 0.91-0.98
to 0.98-1.01 under fair (12 runs each, alternated), at the same capacity at 50 Mbit/s
and 0.7 points less at 100 (24 runs each; docs/fabric.md, "Short flows that start on an
idle link")."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

CONGESTION_CONTROL = "reno"
GSO_MAX_BYTES = 18000  # largest segment a host interface hands its scheduler: 2 jumbo frames
TSQ_LIMIT_BYTES = 16384  # per socket in the qdisc: the kernel's default is 4 MiB
HOST_SYSCTLS: Mapping[str, str] = {
    "net.ipv4.tcp_slow_start_after_idle": "0",
    "net.ipv4.tcp_congestion_control": CONGESTION_CONTROL,
    "net.ipv4.tcp_limit_output_bytes": str(TSQ_LIMIT_BYTES),
}
# With the back-off capped at 1 s, the default 15 retries would give a starved connection
# up after ~15 s (ETIMEDOUT); 80 keep it alive past the agents' 60 s stall timeout.
RTO_CAP_SYSCTLS: Mapping[str, str] = {
    "net.ipv4.tcp_rto_max_ms": "1000",
    "net.ipv4.tcp_retries2": "80",
}
PROC_SYS = Path("/proc/sys")
RTO_CAP = True


def host_sysctls(proc_sys: Path = PROC_SYS) -> dict[str, str]:
    """``HOST_SYSCTLS``, and ``RTO_CAP_SYSCTLS`` where this kernel has tcp_rto_max_ms."""
    if RTO_CAP and Path(proc_sys, "net", "ipv4", "tcp_rto_max_ms").exists():
        return {**HOST_SYSCTLS, **RTO_CAP_SYSCTLS}
    return dict(HOST_SYSCTLS)


CMD_TIMEOUT_S = 30.0


def sysctl_argv(netns_pid: int, settings: Mapping[str, str]) -> list[str]:
    """The command that applies ``settings`` in the namespace of ``netns_pid``."""
    return [
        "mnexec",
        "-a",
        str(netns_pid),
        "sysctl",
        "-q",
        "-w",
        *(f"{key}={value}" for key, value in settings.items()),
    ]


def apply_host_sysctls(netns_pids: Iterable[int]) -> None:
    """Apply ``host_sysctls()`` in every host namespace; RuntimeError naming the first
    that failed."""
    settings = host_sysctls()
    for pid in netns_pids:
        _run(sysctl_argv(pid, settings), f"sysctl in host namespace of pid {pid}")


def gso_argv(netns_pid: int, intf: str, max_bytes: int = GSO_MAX_BYTES) -> list[str]:
    """The command that caps the GSO segments of interface ``intf`` of a host
    namespace at ``max_bytes``."""
    ip = ["ip", "link", "set", "dev", intf, "gso_max_size", str(max_bytes)]
    return ["mnexec", "-a", str(netns_pid), *ip]


def apply_host_gso(nics: Iterable[tuple[int, str]], max_bytes: int = GSO_MAX_BYTES) -> None:
    """Cap the GSO segments of every (namespace pid, interface) of ``nics``;
    RuntimeError naming the first that failed."""
    for pid, intf in nics:
        _run(gso_argv(pid, intf, max_bytes), f"gso_max_size of {intf} in namespace of pid {pid}")


def _run(argv: list[str], what: str) -> None:
    """Run ``argv``; RuntimeError ``"<what> failed: <its message>"`` if it fails."""
    res = subprocess.run(argv, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"{what} failed: {(res.stderr or res.stdout).strip()}")
