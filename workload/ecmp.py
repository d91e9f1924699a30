"""ECMP by source port: the spine a cross-leaf flow takes, one rule for the emulator's
switches, its traffic agents and the simulator, so a flow crosses the same spine in the
emulated fabric and in the model (docs/fabric.md, "One spine per flow in both").

A flow's *slot* is a hash of (sender, receiver, flow id) modulo ``slot_count(spines)``
(a power of two, at least ``MIN_SLOTS``).  The agent sends the flow on a connection
whose TCP source port is of that slot (``port_slot``; it binds such ports), and the
leaf forwards TCP by those bits of the source port: slot ``k`` goes to the
``k``-th of the spines both leaves reach (modulo their number, ``slot_spine``).  The
simulator takes the same spine from the same slot.

A fabric's ``ecmp_seed`` (0: none) picks another placement: the same rule for every
part, so a sweep over seeds shows how much a result owes to where ECMP put the flows.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

MIN_SLOTS = 16  # slots at least: with up to 16 spines, one rule per slot per leaf
MAX_SEED = (1 << 31) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment
_MASK64 = (1 << 64) - 1


def slot_count(spines: int) -> int:
    """Slots for ``spines`` spines: a power of two, at least ``MIN_SLOTS`` and at least
    the spine count (every spine gets a slot when all are up)."""
    if spines < 1:
        raise ValueError(f"spines must be >= 1, got {spines}")
    return max(MIN_SLOTS, 1 << (spines - 1).bit_length())


def flow_slot(src: str, dst: str, flow_id: str, slots: int, seed: int = 0) -> int:
    """The slot of flow ``flow_id`` from ``src`` to ``dst``: CRC-32 of ``src>dst>flow_id``
    modulo ``slots``; with a ``seed`` (1..MAX_SEED) that CRC mixed with the seed first
    (``mixed``), one random-looking placement per seed."""
    crc = zlib.crc32(f"{src}>{dst}>{flow_id}".encode())
    return (mixed(crc, seed) if seed else crc) % slots


def mixed(crc: int, seed: int) -> int:
    """splitmix64's finaliser of ``crc + seed * golden``: every bit of the CRC and the
    seed moves every bit of the result.  CRC-32 alone is linear over GF(2), so two keys
    that differ in the same places (a flow and its twin on the next host) share a slot
    always or never; mixed, they share one as often as random keys do."""
    z = (crc + seed * _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def port_slot(port: int, slots: int) -> int:
    """The slot of a connection from TCP source port ``port``: the bits above its lowest
    (Linux's ``connect`` prefers even ports, so the lowest bit would put every
    connection the kernel numbers in the even slots)."""
    return (port >> 1) & (slots - 1)


def slot_match(slot: int, slots: int) -> tuple[int, int]:
    """(value, mask) of ``tcp_src`` for the ports of ``slot`` (``port_slot``)."""
    return slot << 1, (slots - 1) << 1


def slot_ports(slot: int, slots: int, lo: int, hi: int) -> range:
    """The ports ``lo..hi`` of ``slot`` that an agent binds: the odd ones (Linux leaves
    them to ``bind``), ``2 * (slot + slots * i) + 1``."""
    step = 2 * slots
    first = 2 * slot + 1
    return range(first + max(0, -(-(lo - first) // step)) * step, hi, step)


def slot_spine(spines: Sequence[int], slot: int) -> int:
    """The spine of ``slot`` among ``spines`` (those both leaves reach, in order)."""
    return spines[slot % len(spines)]
