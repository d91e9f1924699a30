"""The wire contract between hosts and fabric: how a packet says which coflow it belongs
to, and how the port schedulers recognise a priority level.

DSCP (6 bits) is split into three ranges:

- ``0``: untagged traffic (TCP ACKs of receivers, control) -> served at level 0.
- ``1..55``: coflow **tags**, set by the sending host (socket ``IP_TOS``).  The switch
  pipeline maps tag -> (level, meter) at the ingress leaf and rewrites the DSCP to the
  level code.  A tag without an entry is served at the lowest level.
- ``56..63``: **level codes** ``56 + level`` (level 0 = most urgent, K <= 8).  The tc
  port schedulers on every egress match these.

Host NIC egress cannot see a level in the tag, so the agent also sets the socket's
``SO_PRIORITY`` to the HTB class of the coflow's current level (HTB looks at
``skb->priority`` before its filters).
"""

from __future__ import annotations

DSCP_UNTAGGED = 0
TAG_MIN = 1
TAG_MAX = 55
LEVEL_CODE_BASE = 56
MAX_LEVELS = 8

HTB_MAJOR = 1  # qdisc handle 1:
HTB_ROOT_MINOR = 1  # class 1:1 at link rate
HTB_LEVEL_MINOR_BASE = 10  # level L -> class 1:(10+L)


def check_level(level: int, levels: int = MAX_LEVELS) -> int:
    """Return ``level`` if it is a valid level for ``levels`` queues, else ValueError."""
    if not 1 <= levels <= MAX_LEVELS:
        raise ValueError(f"number of levels must be 1..{MAX_LEVELS}, got {levels}")
    if not isinstance(level, int) or not 0 <= level < levels:
        raise ValueError(f"level must be an int in 0..{levels - 1}, got {level!r}")
    return level


def check_tag(tag: int) -> int:
    """Return ``tag`` if it is a valid coflow tag, else ValueError."""
    if not isinstance(tag, int) or not TAG_MIN <= tag <= TAG_MAX:
        raise ValueError(f"tag must be an int in {TAG_MIN}..{TAG_MAX}, got {tag!r}")
    return tag


def level_dscp(level: int) -> int:
    """DSCP code that names ``level`` on the wire after the ingress leaf."""
    return LEVEL_CODE_BASE + check_level(level)


def tos_byte(dscp: int) -> int:
    """IP TOS byte for a DSCP value (ECN bits left at 0)."""
    if not 0 <= dscp <= 63:
        raise ValueError(f"DSCP must be 0..63, got {dscp}")
    return dscp << 2


def htb_classid(level: int) -> tuple[int, int]:
    """(major, minor) of the HTB leaf class that serves ``level``."""
    return HTB_MAJOR, HTB_LEVEL_MINOR_BASE + check_level(level)


def skb_priority(level: int) -> int:
    """``SO_PRIORITY`` value that selects the HTB class of ``level`` directly."""
    major, minor = htb_classid(level)
    return (major << 16) | minor
