"""Port up/down of BMv2 switches, seen from their interfaces.

BMv2 tells no controller that a port went down (P4Runtime has no port status, and
simple_switch_grpc keeps sending to a dead veth), so the link state is read where it
changes: each switch's namespace holds the switch ends of its links, and ``ip -o
monitor link`` run in it (``mnexec -a <pid>``) prints a line per netlink link message.
A port is down when its interface lacks ``LOWER_UP`` (carrier): an end set
administratively down loses it, and so does its veth peer, in the other switch's
namespace.  ``PortWatcher`` reports each change once (``PortEvent``, stamped with
CLOCK_MONOTONIC when its line was read) to a callback.
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger("topo.bmv2_ports")

# "7: s1-eth2@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ..." (ip -o link / monitor)
_LINE = re.compile(r"^(?:Deleted )?\d+: (?P<name>[^:@\s]+)(?:@\S+)?: <(?P<flags>[^>]*)>")
CMD_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PortEvent:
    """Port ``port`` of ``switch`` went ``down`` (or up) at ``t_s`` (monotonic s)."""

    switch: str
    port: int
    down: bool
    t_s: float


def parse_link_line(line: str, switch: str) -> tuple[int, bool] | None:
    """(port, down) of one ``ip -o link``/``ip -o monitor link`` line about an
    interface ``<switch>-eth<port>``; None for anything else."""
    m = _LINE.match(line.strip())
    if m is None:
        return None
    prefix = f"{switch}-eth"
    name = m["name"]
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    down = line.lstrip().startswith("Deleted ") or "LOWER_UP" not in m["flags"].split(",")
    return int(name[len(prefix) :]), down


def in_netns(pid: int, argv: list[str]) -> list[str]:
    """``argv`` run in the network namespace of ``pid`` (Mininet's ``mnexec``)."""
    return ["mnexec", "-a", str(pid), *argv]


def port_states(switch: str, pid: int) -> dict[int, bool]:
    """port -> down of every ``<switch>-eth*`` interface in the namespace of ``pid``."""
    res = subprocess.run(
        in_netns(pid, ["ip", "-o", "link", "show"]),
        capture_output=True,
        text=True,
        timeout=CMD_TIMEOUT_S,
    )
    if res.returncode != 0:
        raise RuntimeError(f"{switch}: ip link show failed: {res.stderr.strip()}")
    return dict(p for p in (parse_link_line(ln, switch) for ln in res.stdout.splitlines()) if p)


class PortWatcher:
    """One ``ip -o monitor link`` per switch (``namespaces``: switch -> a pid in its
    namespace); every change of a port's state goes to ``on_event`` from the reader
    thread of that switch."""

    def __init__(
        self,
        namespaces: Mapping[str, int],
        on_event: Callable[[PortEvent], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Not started yet: :meth:`start`."""
        self.namespaces, self.on_event, self.clock = dict(namespaces), on_event, clock
        self.state: dict[tuple[str, int], bool] = {}  # (switch, port) -> down
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen] = []
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the monitors, then read every port's state once (a change between the
        two is reported by the monitor)."""
        for switch, pid in self.namespaces.items():
            proc = subprocess.Popen(
                in_netns(pid, ["ip", "-o", "monitor", "link"]),
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
            self._procs.append(proc)
            t = threading.Thread(
                target=self._read, args=(switch, proc), daemon=True, name=f"ports-{switch}"
            )
            t.start()
            self._threads.append(t)
        for switch, pid in self.namespaces.items():
            for port, down in port_states(switch, pid).items():
                self.seen(switch, port, down, self.clock())

    def _read(self, switch: str, proc: subprocess.Popen) -> None:
        """Reader thread: each line of ``switch``'s monitor."""
        assert proc.stdout is not None
        for line in proc.stdout:
            t = self.clock()
            parsed = parse_link_line(line, switch)
            if parsed is not None:
                self.seen(switch, *parsed, t)

    def seen(self, switch: str, port: int, down: bool, t: float) -> None:
        """Record a port's state; a change (or a port seen first) goes to ``on_event``."""
        with self._lock:
            was = self.state.get((switch, port))
            self.state[(switch, port)] = down
        if was is None or was != down:
            self.on_event(PortEvent(switch, port, down, t))

    def snapshot(self) -> list[PortEvent]:
        """Every port's current state, stamped now (for a controller that restarted)."""
        t = self.clock()
        with self._lock:
            return [PortEvent(s, p, d, t) for (s, p), d in sorted(self.state.items())]

    def stop(self) -> None:
        """End the monitors (by PID) and their reader threads."""
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            proc.wait(CMD_TIMEOUT_S)
            if proc.stdout is not None:
                proc.stdout.close()
        for t in self._threads:
            t.join(CMD_TIMEOUT_S)
        self._procs, self._threads = [], []
