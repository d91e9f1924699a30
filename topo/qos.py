"""Port schedulers: a strict-priority approximation with tc HTB on every egress.

Per interface (both ends of every link: switch ports and host NICs):

- root qdisc ``1:`` HTB, ``default`` = level 0's class (non-IP traffic -> level 0);
- class ``1:1`` rate = ceil = link rate, ``burst``/``cburst`` = BURST_S of the link rate
  (at least one frame): tc's default (1600 B, 128 us at 100 Mbit/s, less than one jumbo
  frame) loses the tokens of every dequeue that comes later than that on a busy machine
  (measured in docs/fabric.md: the median host gains several Mbit/s at 100 Mbit/s);
- K leaf classes ``1:(10+L)`` (tc spells minors in hex: level 0 is ``1:a``), each with
  ``prio L``, a tiny guaranteed rate and ceil = link, so everything above the tiny rate
  is borrowed from ``1:1`` in strict ``prio`` order; their ``cburst`` (ceil tokens) is
  the link's burst, their ``burst`` (tokens of the tiny rate) stays tc's default, so a
  low level never saves up a burst of its own to send ahead of a higher one;
- a ``bfifo`` under each leaf class bounded to ``queue_packets`` full-size frames in
  bytes (queue_packets x 1514 B, at least 4 frames of the MTU): with TSO/GSO a queued "packet" may
  be a 64 KB segment, so a packet-counted queue would hold seconds of traffic at
  emulated rates;
- u32 filters on the DSCP bits (see workload/marking.py): level code ``56+L`` -> level
  L, DSCP 0 -> level 0, any other IP packet (a tag without a table entry) -> the lowest
  level.  Host sockets may also pick a class directly with ``SO_PRIORITY``.

Commands are built as ``tc -batch`` lines (tc tokenises them itself: no shell) and run
one batch per network namespace.  No netem here (docs/fabric.md, "Platform facts"), so
link delay/loss options are refused rather than silently ignored: see
:data:`UNSUPPORTED_LINK_OPTIONS`.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topo.plan import DEFAULT_MTU, ETH_HEADER_BYTES, check_mtu
from workload.marking import (
    DSCP_UNTAGGED,
    HTB_MAJOR,
    HTB_ROOT_MINOR,
    MAX_LEVELS,
    htb_classid,
    level_dscp,
    tos_byte,
)

LEGACY_FRAME_BYTES = 1514  # the unit of queue_packets: a full frame at MTU 1500
MIN_QUEUE_FRAMES = 4  # a bucket holds at least this many frames of the port's MTU

log = logging.getLogger("topo.qos")

DEFAULT_QUEUE_PACKETS = 100
# HTB's DRR quantum (bytes).  Irrelevant for strict priority across distinct prios, but
# the default (rate / r2q) is tiny for the tiny guaranteed rates and triggers kernel
# warnings; 60000 exceeds a full-size frame at every allowed MTU (9014 B at 9000).
QUANTUM_BYTES = 60000
BUCKETS = 16  # fair-queueing buckets per level (hash of the source port)
BUCKET_MINOR_BASE = 0x100  # bucket b of level L is class 1:(0x100 * (L + 1) + b)
TC_TIMEOUT_S = 30.0
# Burst of a port, in seconds of its rate (floor: one full-size frame).
BURST_S = 0.002
# Guaranteed share of each level's class: 0.1 % of the link, i.e. near-strict priority
# (a 2 % share did not change measured iteration times of small-moe).
MIN_SHARE = 0.001

# Link options a user might expect from Mininet's TCLink, and why we refuse them.
UNSUPPORTED_LINK_OPTIONS: Mapping[str, str] = {
    "delay": "needs the netem qdisc, which this kernel lacks",
    "jitter": "needs the netem qdisc, which this kernel lacks",
    "loss": "needs the netem qdisc, which this kernel lacks",
    "max_queue_size": "queues are set by queue_packets of the port schedulers",
    "use_htb": "port schedulers are always HTB",
    "use_tbf": "port schedulers are always HTB",
    "speedup": "not supported",
}


def reject_unsupported(options: Mapping[str, object], source: str) -> None:
    """ValueError ``"<source>: <key>: <reason>"`` for the first unsupported link option."""
    for key in options:
        if key in UNSUPPORTED_LINK_OPTIONS:
            raise ValueError(
                f"{source}: {key}: unsupported link option ({UNSUPPORTED_LINK_OPTIONS[key]})"
            )


@dataclass(frozen=True)
class PortScheduler:
    """Parameters of one egress scheduler."""

    dev: str
    rate_mbps: float
    levels: int
    queue_packets: int = DEFAULT_QUEUE_PACKETS
    mtu: int = DEFAULT_MTU

    def __post_init__(self) -> None:
        """Validate the parameters (one-line errors)."""
        check_mtu(self.mtu)
        if not 1 <= self.levels <= MAX_LEVELS:
            raise ValueError(f"levels must be 1..{MAX_LEVELS}, got {self.levels}")
        if not self.rate_mbps > 0:
            raise ValueError(f"rate_mbps of {self.dev} must be > 0, got {self.rate_mbps}")
        if not isinstance(self.queue_packets, int) or self.queue_packets < 1:
            raise ValueError(f"queue_packets must be an int >= 1, got {self.queue_packets!r}")

    @property
    def frame_bytes(self) -> int:
        """A full-size Ethernet frame at this port's MTU: the unit of queue_packets."""
        return self.mtu + ETH_HEADER_BYTES

    @property
    def queue_bytes(self) -> int:
        """Byte limit of each bucket's FIFO: ``queue_packets`` frames of 1514 B (the bytes a
        queue held at MTU 1500), but at least ``MIN_QUEUE_FRAMES`` frames of this MTU.
        Counting jumbo frames would hold 6x the bytes: at 12.5 Mbit/s a starved level's
        16 buckets then held seconds of data, its flows' timers fired while their packets
        sat queued, and the duplicates kept the link busy after the starvation ended
        (fb-slice-busy under FIFO stalled)."""
        return max(self.queue_packets * LEGACY_FRAME_BYTES, MIN_QUEUE_FRAMES * self.frame_bytes)

    @property
    def burst_bytes(self) -> int:
        """HTB burst at link rate: BURST_S of the rate, at least one frame."""
        return max(self.frame_bytes, int(self.rate_mbps * 1e6 / 8 * BURST_S))


def classid(level: int) -> str:
    """tc spelling of the HTB leaf class of ``level`` (minor in hex)."""
    major, minor = htb_classid(level)
    return f"{major:x}:{minor:x}"


def _kbit(rate_mbps: float) -> int:
    """Rate in kbit/s (tc's unit below), at least 8."""
    return max(8, int(round(rate_mbps * 1000)))


def bucket_classid(level: int, bucket: int) -> str:
    """Leaf class of ``bucket`` (a hash of the flow's source port) inside ``level``."""
    return f"{HTB_MAJOR:x}:{BUCKET_MINOR_BASE * (level + 1) + bucket:x}"


def tc_batch_lines(ps: PortScheduler) -> list[str]:
    """The ``tc -batch`` lines that install scheduler ``ps`` (replacing any root qdisc)."""
    dev, link = ps.dev, f"{_kbit(ps.rate_mbps)}kbit"
    tiny = f"{_kbit(ps.rate_mbps * MIN_SHARE)}kbit"
    root = f"{HTB_MAJOR:x}:{HTB_ROOT_MINOR:x}"
    lines = [
        f"qdisc replace dev {dev} root handle {HTB_MAJOR:x}: htb "
        f"default {bucket_classid(0, 0).split(':')[1]}",
        f"class add dev {dev} parent {HTB_MAJOR:x}: classid {root} htb rate {link} "
        f"ceil {link} quantum {QUANTUM_BYTES} burst {ps.burst_bytes} "
        f"cburst {ps.burst_bytes}",
    ]
    for level in range(ps.levels):
        lines.append(
            f"class add dev {dev} parent {root} classid {classid(level)} htb "
            f"rate {tiny} ceil {link} prio {level} quantum {QUANTUM_BYTES} "
            f"cburst {ps.burst_bytes}"
        )
        lines.extend(_bucket_lines(ps, level, tiny, link))
    lines.extend(_filter_lines(dev, ps.levels))
    return lines


def _bucket_lines(ps: PortScheduler, level: int, tiny: str, link: str) -> list[str]:
    """Fair queueing inside a level (the kernel has no sfq/fq): BUCKETS leaf classes of
    equal weight, served round-robin by HTB, each with its byte-bounded FIFO (able to hold
    a 64 KB GSO segment), and a u32 hash on bits 1-4 of the TCP/UDP source port (the word
    at IP offset 20 is source port << 16 | destination port; bit 0 is skipped because
    Linux gives connect() even ephemeral ports) spreading flows over them."""
    dev, parent = ps.dev, classid(level)
    table = f"{level + 1:x}:"
    lines = []
    for b in range(BUCKETS):
        cid = bucket_classid(level, b)
        lines += [
            f"class add dev {dev} parent {parent} classid {cid} htb rate {tiny} "
            f"ceil {link} prio {level} quantum {QUANTUM_BYTES} cburst {ps.burst_bytes}",
            f"qdisc add dev {dev} parent {cid} handle {cid.split(':')[1]}: "
            f"bfifo limit {ps.queue_bytes}",
        ]
    lines += [
        f"filter add dev {dev} parent {parent} prio 1 handle {table} protocol ip u32 "
        f"divisor {BUCKETS}",
        f"filter add dev {dev} parent {parent} prio 1 protocol ip u32 "
        f"match u8 0 0 hashkey mask {(BUCKETS - 1) << 17:#010x} at 20 link {table}",
    ]
    lines += [
        f"filter add dev {dev} parent {parent} prio 1 protocol ip u32 ht {table}{b:x}: "
        f"match u8 0 0 flowid {bucket_classid(level, b)}"
        for b in range(BUCKETS)
    ]
    return lines


def _filter_lines(dev: str, levels: int) -> list[str]:
    """u32 filters: level codes and DSCP 0 (prio 1), then any other IP -> lowest level."""
    parent = f"{HTB_MAJOR:x}:"
    out = []
    codes = [(level_dscp(level), level) for level in range(levels)]
    for dscp, level in codes + [(DSCP_UNTAGGED, 0)]:
        out.append(
            f"filter add dev {dev} parent {parent} protocol ip prio 1 u32 "
            f"match ip dsfield {tos_byte(dscp):#04x} 0xfc flowid {classid(level)}"
        )
    out.append(
        f"filter add dev {dev} parent {parent} protocol ip prio 2 u32 "
        f"match u32 0 0 flowid {classid(levels - 1)}"
    )
    return out


def run_batch(tool: str, lines: Sequence[str], what: str, netns_pid: int | None = None) -> None:
    """Run ``<tool> -batch -`` (``tc`` or ``ip``) with ``lines`` on stdin, inside the
    network namespace of ``netns_pid`` (a Mininet host's shell, via mnexec) or in the root
    namespace; RuntimeError naming ``what`` on failure."""
    argv = [tool, "-batch", "-"]
    if netns_pid is not None:
        argv = ["mnexec", "-a", str(netns_pid)] + argv
    res = subprocess.run(
        argv, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=TC_TIMEOUT_S
    )
    if res.returncode != 0:
        raise RuntimeError(
            f"{what} failed (exit {res.returncode}): {(res.stderr or res.stdout).strip()}"
        )


def run_tc_batch(lines: Sequence[str], netns_pid: int | None = None) -> None:
    """Run ``tc -batch -`` with ``lines`` (see :func:`run_batch`)."""
    run_batch("tc", lines, "tc -batch", netns_pid)


def apply_schedulers(scheds: Sequence[PortScheduler], netns_pid: int | None = None) -> None:
    """Install every scheduler of ``scheds`` (all in one namespace) with one tc batch."""
    lines = [line for ps in scheds for line in tc_batch_lines(ps)]
    if lines:
        run_tc_batch(lines, netns_pid)


@dataclass(frozen=True)
class ClassStats:
    """Counters of one HTB leaf class (its level)."""

    level: int
    bytes: int
    packets: int
    drops: int


_CLASS_RE = re.compile(
    r"^class htb (\S+) .*?\n\s*Sent (\d+) bytes (\d+) pkt "
    r"\(dropped (\d+),",
    re.MULTILINE,
)


def parse_class_stats(tc_text: str, levels: int = MAX_LEVELS) -> dict[int, ClassStats]:
    """Per-level counters from ``tc -s class show`` text (iproute2 6.1 has no JSON for
    HTB classes); classes other than the level classes are ignored."""
    wanted = {classid(level): level for level in range(levels)}
    out = {}
    for handle, nbytes, pkts, drops in _CLASS_RE.findall(tc_text):
        level = wanted.get(handle)
        if level is not None:
            out[level] = ClassStats(level, int(nbytes), int(pkts), int(drops))
    return out


def class_stats(
    dev: str, netns_pid: int | None = None, levels: int = MAX_LEVELS
) -> dict[int, ClassStats]:
    """Current per-level counters of the scheduler on ``dev``."""
    argv = ["tc", "-s", "class", "show", "dev", dev]
    if netns_pid is not None:
        argv = ["mnexec", "-a", str(netns_pid)] + argv
    res = subprocess.run(argv, capture_output=True, text=True, timeout=TC_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"tc class show dev {dev} failed: {res.stderr.strip()}")
    return parse_class_stats(res.stdout, levels)


def bucket_level(parent: str) -> int | None:
    """The level of the bucket class ``parent`` (tc spelling, e.g. ``1:10f``) that a
    bucket's bfifo hangs under; None for any other class."""
    major, _, minor = parent.partition(":")
    try:
        if int(major, 16) != HTB_MAJOR:
            return None
        level = int(minor, 16) // BUCKET_MINOR_BASE - 1
    except ValueError:
        return None
    return level if 0 <= level < MAX_LEVELS else None
