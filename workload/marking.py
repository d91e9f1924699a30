"""The wire contract between hosts and fabric: how a packet says which coflow it belongs
to, and how the port schedulers recognise a priority level.

DSCP (6 bits) is split into three ranges:

- ``0``: untagged traffic (TCP ACKs of receivers, control) -> served at level 0.
- ``1..55``: coflow **tags** on the wire, set by the sending host (socket ``IP_TOS``).
  The switch pipeline maps (ingress port, DSCP) -> (level, meter) at the ingress leaf
  and rewrites the DSCP to the level code.  A tag without an entry is served at the
  lowest level.
- ``56..63``: **level codes** ``56 + level`` (level 0 = most urgent, K <= 8).  The tc
  port schedulers on every egress match these.

A coflow *tag* is an id ``1..TAG_ID_MAX``; it goes on the wire as DSCP ``tag_dscp(tag)``
(``1 + (tag - 1) % 55``: tags 1..55 are their own DSCP, 56 is DSCP 1 again, ...).  The
leaf rules match the DSCP together with the sender's port, so two tags with the same
DSCP are told apart as long as no sending host holds both at once: the scheduler keeps
that invariant (``controller.scheduler.TagPool``), which allows 55 coflows at once *per
sending host* instead of 55 in the fabric (docs/policies.md, "More than 55 coflows").
The BMv2 program (p4src/) counts per DSCP, so BMv2 keeps tags ``1..55``.

Host NIC egress cannot see a level in the tag, so the agent also sets the socket's
``SO_PRIORITY`` to the HTB class of the coflow's current level (HTB looks at
``skb->priority`` before its filters).
"""

from __future__ import annotations

DSCP_UNTAGGED = 0
TAG_MIN = 1
TAG_MAX = 55  # the largest DSCP tag on the wire
WIRE_TAGS = TAG_MAX - TAG_MIN + 1  # 55 DSCP tags
TAG_BANKS = 64  # tag ids per DSCP tag (``tag_dscp``)
TAG_ID_MAX = TAG_MAX * TAG_BANKS  # 3520: the largest coflow tag id
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


def check_tag(tag: int, tag_max: int = TAG_ID_MAX) -> int:
    """Return ``tag`` if it is a valid coflow tag id (``TAG_MIN..tag_max``), else ValueError."""
    if isinstance(tag, bool) or not isinstance(tag, int) or not TAG_MIN <= tag <= tag_max:
        raise ValueError(f"tag must be an int in {TAG_MIN}..{tag_max}, got {tag!r}")
    return tag


def tag_dscp(tag: int) -> int:
    """The DSCP that carries coflow tag ``tag`` on the wire (``1..55``; untagged 0 stays 0)."""
    if tag == DSCP_UNTAGGED and not isinstance(tag, bool):
        return DSCP_UNTAGGED
    return TAG_MIN + (check_tag(tag) - TAG_MIN) % WIRE_TAGS


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
