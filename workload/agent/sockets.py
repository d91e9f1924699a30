"""Flow sockets of the agent protocol (documented in ``workload.agent.proto``): how a
flow's socket is marked on the wire (tag -> IP_TOS, level -> SO_PRIORITY) and paced
(SO_MAX_PACING_RATE), and what the agent reads back from the kernel."""

from __future__ import annotations

import fcntl
import math
import socket
import struct
import sys
import termios
from typing import Any

from workload import marking
from workload.agent.wire import ProtocolError

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)  # Python 3.11 lacks the name
_ULONG = struct.Struct("@L")  # given this size the kernel reads/writes the full unsigned long
PACING_UNLIMITED = (1 << (8 * _ULONG.size)) - 1  # ~0UL: the kernel default, no cap
MIN_RATE_MBPS = 8e-6  # 1 byte/s; anything lower would round to a cap of 0


def pacing_bytes(rate_mbps: float) -> int:
    """The SO_MAX_PACING_RATE value (bytes/s) of ``rate_mbps`` megabits per second."""
    return int(rate_mbps * 1e6 / 8)


def check_rate(rate_mbps: Any) -> float | None:
    """A pacing rate in Mbit/s (None = unpaced) or ProtocolError.  JSON allows NaN and
    Infinity, and bool is an int in Python: both are refused explicitly."""
    return None if rate_mbps is None else _check_cap(rate_mbps)


def _check_cap(rate_mbps: Any) -> float:
    """``check_rate`` of a value that is not None: a pacing cap or ProtocolError."""
    if (
        type(rate_mbps) not in (int, float)
        or not math.isfinite(rate_mbps)
        or rate_mbps < MIN_RATE_MBPS
        or pacing_bytes(rate_mbps) >= PACING_UNLIMITED
    ):
        raise ProtocolError(
            f"rate_mbps: must be null or a finite number of Mbit/s >= {MIN_RATE_MBPS:g}, "
            f"got {rate_mbps!r}"
        )
    return rate_mbps


def open_flow_socket(
    tag: int,
    level: int,
    set_priority: bool = True,
    rate_mbps: float | None = None,
    mark: bool = True,
) -> socket.socket:
    """A non-blocking TCP socket marked with ``tag`` (IP_TOS) and ``level`` (SO_PRIORITY)
    unless ``mark`` is False (then ``mark_flow_socket`` later), paced at ``rate_mbps`` if
    given (SO_MAX_PACING_RATE)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle wait on the tail
        if mark:
            mark_flow_socket(sock, tag, level, set_priority)
        if rate_mbps is not None:
            set_pacing(sock, rate_mbps)
    except OSError:
        sock.close()
        raise
    return sock


def mark_flow_socket(
    sock: socket.socket, tag: int, level: int, set_priority: bool = True, dscp: int | None = None
) -> None:
    """Mark ``sock``'s packets with ``tag`` (IP_TOS: ``dscp`` if given, else the tag's
    own DSCP) and ``level`` (SO_PRIORITY).  SO_PRIORITY is set after IP_TOS because
    Linux resets ``sk_priority`` from the TOS whenever IP_TOS is set."""
    wire = marking.tag_dscp(tag) if dscp is None else dscp
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, marking.tos_byte(wire))
    if set_priority:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, marking.skb_priority(level))


def set_pacing(sock: socket.socket, rate_mbps: float | None) -> None:
    """Cap ``sock``'s TCP pacing at ``rate_mbps`` Mbit/s, or lift the cap (None: ~0UL).

    Any cap below ~0UL also switches on the kernel's internal TCP pacing for the socket;
    lifting the cap leaves it on, at TCP's own rate (about cwnd/srtt).  The kernel leaves
    a connection's first 10 segments unpaced (as sch_fq does): ~15 KB at MTU 1500, but
    ~235 KB on loopback's 64 KB MTU.  The value goes as an unsigned long: a 32-bit int
    could not carry rates above ~17 Gbit/s.
    """
    value = PACING_UNLIMITED if rate_mbps is None else pacing_bytes(_check_cap(rate_mbps))
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, _ULONG.pack(value))


def pacing_rate(sock: socket.socket) -> int | None:
    """``sock``'s pacing cap in bytes/s read back from the kernel; None when uncapped."""
    (value,) = _ULONG.unpack(sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, _ULONG.size))
    return None if value == PACING_UNLIMITED else value


def can_set_priority() -> bool:
    """Whether this process may set SO_PRIORITY values above 6 (needs CAP_NET_ADMIN)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, marking.skb_priority(0))
        except PermissionError:
            return False
    return True


def unacked_bytes(sock: socket.socket) -> int:
    """Bytes handed to the kernel but not yet acknowledged by the receiver (SIOCOUTQ)."""
    buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    return int.from_bytes(buf, sys.byteorder, signed=True)


# struct tcp_info (linux/tcp.h): the u64 tcpi_bytes_retrans sits at byte 208 (Linux 4.19+).
_TCPI_BYTES_RETRANS = struct.Struct("@Q")
TCPI_BYTES_RETRANS_AT = 208
TCP_INFO_LEN = 256  # room for every field up to and past bytes_retrans


def bytes_retransmitted(sock: socket.socket) -> int | None:
    """Bytes ``sock`` has sent again since it opened (``tcpi_bytes_retrans``: segments
    dropped or reordered on the way, repaired by TCP); None where the kernel is older."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    if len(info) < TCPI_BYTES_RETRANS_AT + _TCPI_BYTES_RETRANS.size:
        return None
    (value,) = _TCPI_BYTES_RETRANS.unpack_from(info, TCPI_BYTES_RETRANS_AT)
    return int(value)
