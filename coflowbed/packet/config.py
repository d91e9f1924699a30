"""Settings of a packet-level run (``PacketConfig``) and the wire mapping it uses: a
policy's level L (0 = most urgent) travels as the DSCP level code ``56 + L``
(``workload.marking``, as on the emulator's switches) and is served by band L of an
8-band strict-priority queue; untagged packets (TCP ACKs) go to band 0.  Without
hardware levels (``levels=None``, the fluid model's exact order) ranks are compressed
onto the 8 bands a port has."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

from topo.plan import DEFAULT_MTU
from workload.marking import DSCP_UNTAGGED, LEVEL_CODE_BASE, MAX_LEVELS, level_dscp

TRANSPORTS = ("tcp", "dctcp", "cubic")  # NewReno (as the emulator's hosts), DCTCP, CUBIC
ECMP_MODES = ("fabric", "hash")  # the fluid model's spine per flow, or an independent hash
BANDS = MAX_LEVELS  # priority bands per egress port


@dataclass(frozen=True)
class PacketConfig:
    """How the packet engine runs a DAG (check with ``check``).

    ``scale`` multiplies every flow's bytes and every link rate alike (times stay as they
    are: a 100 Mbit/s fabric at ``scale=0.1`` runs 10x fewer packets); results report
    the DAG's own bytes.  ``ecmp``: ``fabric`` puts a flow on the spine the fluid model
    and the emulator pick (``LeafSpine.ecmp_seed``); ``hash`` hashes it independently
    (``hash_seed``).  ``decide_every_s``: how often the engine checks byte thresholds
    (D-CLAS) between flow events."""

    transport: str = "tcp"
    scale: float = 1.0
    link_delay_s: float = 5e-6
    queue_packets: int = 100  # per band of every switch egress port
    # per band of every host NIC: room for a whole send buffer, as a Linux host's TCP
    # small queues keep a lone flow from dropping at its own NIC
    host_queue_packets: int = 1000
    # each band of every port: round robin over this many hash buckets of flows, as the
    # emulator's ports (topo/qos.py) and its hosts' TCP small queues share a level; 0: a
    # FIFO (docs/packet.md, "Ports as the emulator's")
    fair_queue_buckets: int = 16
    ecn_packets: int = 20  # DCTCP: mark CE above this many packets in a band
    mtu: int = DEFAULT_MTU  # the emulator's (topo.plan): 9000-byte frames
    min_rto_s: float = 0.2  # Linux's minimum retransmission timeout
    # the longest TCP's retransmission timer backs off to, as the emulator's hosts cap it
    # (topo/hosttcp.py: tcp_rto_max_ms); 0: ns-3's own 60 s
    rto_max_s: float = 1.0
    delack_s: float = 0.04  # delayed-ACK timeout (Linux's 40 ms minimum)
    sack: bool = False  # TCP SACK (ns-3 3.44's can stall a flow: docs/packet.md)
    ecmp: str = "fabric"
    hash_seed: int = 1
    decide_every_s: float = 1e-3
    horizon_s: float = math.inf
    # simulated seconds without a flow ending, while flows run, before the run is given
    # up as stalled (a connection TCP closed never ends; without this the loop would go on)
    stall_s: float = 600.0

    def check(self) -> PacketConfig:
        """Self if every setting is in range, else ValueError naming the setting."""
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport: must be one of {', '.join(TRANSPORTS)}")
        if self.ecmp not in ECMP_MODES:
            raise ValueError(f"ecmp: must be one of {', '.join(ECMP_MODES)}")
        if not 0 < self.scale <= 1e3:
            raise ValueError(f"scale: must be > 0 and <= 1000, got {self.scale!r}")
        if not 0 <= self.link_delay_s <= 1:
            raise ValueError(f"link_delay_s: must be 0..1 s, got {self.link_delay_s!r}")
        if not 2 <= self.queue_packets <= 100_000:
            raise ValueError(f"queue_packets: must be 2..100000, got {self.queue_packets!r}")
        if not 2 <= self.host_queue_packets <= 100_000:
            raise ValueError(
                f"host_queue_packets: must be 2..100000, got {self.host_queue_packets!r}"
            )
        if not 0 <= self.fair_queue_buckets <= 1024:
            raise ValueError(
                f"fair_queue_buckets: must be 0..1024, got {self.fair_queue_buckets!r}"
            )
        if not 1 <= self.ecn_packets < self.queue_packets:
            raise ValueError("ecn_packets: must be >= 1 and below queue_packets")
        if not 576 <= self.mtu <= 9000:
            raise ValueError(f"mtu: must be 576..9000 bytes, got {self.mtu!r}")
        if not 1e-3 <= self.min_rto_s <= 5:
            raise ValueError(f"min_rto_s: must be 0.001..5 s, got {self.min_rto_s!r}")
        if self.rto_max_s != 0 and not self.min_rto_s <= self.rto_max_s <= 60:
            raise ValueError(f"rto_max_s: must be 0 or min_rto_s..60 s, got {self.rto_max_s!r}")
        if not 0 < self.delack_s <= 0.5:
            raise ValueError(f"delack_s: must be > 0 and <= 0.5 s, got {self.delack_s!r}")
        if not 1 <= self.stall_s <= 1e6:
            raise ValueError(f"stall_s: must be 1..1e6 s, got {self.stall_s!r}")
        if not self.decide_every_s > 0:
            raise ValueError(f"decide_every_s: must be > 0, got {self.decide_every_s!r}")
        if not self.horizon_s > 0:
            raise ValueError(f"horizon_s: must be > 0, got {self.horizon_s!r}")
        return self


def band_of_level(level: int) -> int:
    """The priority band (0 = served first) of a policy level; ValueError if out of 0..7."""
    return level_dscp(level) - LEVEL_CODE_BASE


def band_of_dscp(dscp: int) -> int:
    """The band a switch port serves a packet with ``dscp`` in (bed.cpp's filter does the
    same): a level code's level, else 0 (untagged TCP ACKs and control)."""
    if not 0 <= dscp <= 63:
        raise ValueError(f"DSCP must be 0..63, got {dscp}")
    return dscp - LEVEL_CODE_BASE if dscp >= LEVEL_CODE_BASE else DSCP_UNTAGGED


def hashed_spine(src: str, dst: str, flow_id: str, spines: int, seed: int) -> int:
    """A spine for ``ecmp="hash"``: CRC-32 of the flow's key and ``seed``, independent of
    the fluid model's placement."""
    return zlib.crc32(f"{seed}|{src}>{dst}>{flow_id}".encode()) % spines


def scaled_bytes(nbytes: int, scale: float) -> int:
    """A flow's bytes on the wire at ``scale`` (at least one)."""
    return max(1, round(nbytes * scale))
