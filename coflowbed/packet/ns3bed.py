"""The packet fabric on ns-3 (the PyPI ``ns3`` wheel, an optional extra): loads ns-3
once per process (10-19 s), compiles ``bed.cpp`` through cppyy, sets the TCP defaults of
a run and wraps the C++ ``Bed`` as the engine's ``Bed`` protocol."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from coflowbed.core.errors import UserError
from coflowbed.packet.config import PacketConfig

log = logging.getLogger("packet")

EXTRA = "packet"  # pyproject's optional dependency that installs ns3
NS3_PIN = "ns3==3.44.post0"
CPP = Path(__file__).with_name("bed.cpp")
TCP_TYPES = {"tcp": "ns3::TcpNewReno", "dctcp": "ns3::TcpDctcp", "cubic": "ns3::TcpCubic"}
HEADERS = 52  # IPv4 + TCP with timestamps: MSS = MTU - 52
DATA_RETRIES = 80  # timeouts in a row before a connection is given up (topo/hosttcp.py)

_loaded: dict[str, Any] = {}


def ns3_available() -> bool:
    """Whether the ns3 wheel is installed (without importing it: that takes 10-19 s)."""
    return importlib.util.find_spec("ns3") is not None


def missing_message() -> str:
    """The one line a user without the extra sees."""
    return f"needs ns-3: pip install 'coflowbed[{EXTRA}]' (installs {NS3_PIN})"


def load() -> Any:
    """The cppyy global namespace with ns-3 and the bed compiled (once per process);
    UserError naming the extra when ns3 is not installed."""
    if "gbl" in _loaded:
        return _loaded["gbl"]
    if not ns3_available():
        raise UserError("packet engine", None, missing_message())
    log.info("loading ns-3 (10-19 s, once per process)")
    # Deferred: ns3 is an optional extra and importing it costs 10-19 s and ~0.7 GB.
    import cppyy
    from ns import ns  # noqa: F401  (loads every ns-3 module into cppyy)

    cppyy.cppdef(CPP.read_text())
    cppyy.gbl.coflowbed_packet.RegisterFilter()
    _loaded["gbl"] = cppyy.gbl
    return cppyy.gbl


class Ns3Bed:
    """One ns-3 simulation of a leaf-spine (or one switch) under ``config``."""

    def __init__(self, shape: tuple[int, int, int, float, float], config: PacketConfig) -> None:
        gbl = load()
        self.ns = gbl.ns3
        _set_defaults(self.ns, config)
        self.cpp = gbl.coflowbed_packet.Bed()
        self.cpp.SetFairQueue(config.fair_queue_buckets)
        hosts, per_leaf, spines, host_bps, fabric_bps = shape
        self.cpp.Build(
            hosts,
            per_leaf,
            spines,
            host_bps * config.scale,
            fabric_bps * config.scale,
            config.link_delay_s,
            config.queue_packets,
            config.host_queue_packets,
            config.transport == "dctcp",
            config.ecn_packets,
            config.mtu,
        )
        self.cpp.SetRtoCap(config.rto_max_s)

    def add_flow(self, src: int, dst: int, plane: int, nbytes: int, band: int) -> int:
        """Register a flow (not started); its index."""
        return int(self.cpp.AddFlow(src, dst, plane, nbytes, band))

    def start_flow(self, i: int) -> None:
        """Open flow ``i``'s connection now."""
        self.cpp.StartFlow(i)

    def set_band(self, i: int, band: int) -> None:
        """Mark flow ``i``'s packets for ``band`` from now on."""
        self.cpp.SetLevel(i, band)

    def set_rate(self, i: int, bps: float) -> None:
        """Pace flow ``i`` at ``bps`` from now (0: unpaced)."""
        self.cpp.SetRate(i, bps)

    def run_until(self, t: float) -> None:
        """Run until ``t`` or until some flow delivers its last byte."""
        self.cpp.RunUntil(t)

    def take_done(self) -> list[int]:
        """Flows finished since the last call."""
        return [int(i) for i in self.cpp.TakeDone()]

    def now(self) -> float:
        """Simulated time (s)."""
        return float(self.ns.Simulator.Now().GetSeconds())

    def received(self, i: int) -> int:
        """Bytes flow ``i``'s receiver has got."""
        return int(self.cpp.flows[i].received)

    def first_byte(self, i: int) -> float:
        """When flow ``i``'s first byte arrived (NaN: not yet)."""
        t = float(self.cpp.flows[i].firstRx)
        return t if t >= 0 else float("nan")

    def finish(self, i: int) -> float:
        """When flow ``i``'s last byte arrived (NaN: not yet)."""
        t = float(self.cpp.flows[i].finish)
        return t if t >= 0 else float("nan")

    def retransmitted(self, i: int) -> int:
        """Bytes flow ``i``'s sender's TCP sent again."""
        return int(self.cpp.flows[i].retransmitted)

    def events(self) -> int:
        """Events ns-3 has executed in this simulation."""
        return int(self.ns.Simulator.GetEventCount())

    def drops_per_band(self) -> list[int]:
        """Packets dropped so far by the egress queues, per band."""
        self.cpp.CountDrops()
        return [int(self.cpp.drops[b]) for b in range(8)]

    def marks_per_band(self) -> list[int]:
        """Packets marked CE so far by the egress queues, per band (DCTCP)."""
        self.cpp.CountDrops()
        return [int(self.cpp.marks[b]) for b in range(8)]

    def total_retransmits(self) -> int:
        """TCP retransmissions of every sender."""
        return int(self.cpp.retransmits)

    def close(self) -> None:
        """End the simulation (ns-3 can run another one in this process after)."""
        self.ns.Simulator.Destroy()


def _set_defaults(ns: Any, config: PacketConfig) -> None:
    """ns-3's global defaults for a run: the transport, segment size, buffers, RTO."""
    cfg = ns.Config
    cfg.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue(TCP_TYPES[config.transport]))
    cfg.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(config.mtu - HEADERS))
    cfg.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 20))
    cfg.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 20))
    cfg.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    cfg.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(config.min_rto_s)))
    cfg.SetDefault("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.MilliSeconds(1)))
    # Linux's delayed-ACK timer starts at 40 ms (ns-3: 200 ms, which holds a flow whose
    # window fell to one segment, after losses or a starved while, to a segment per 200 ms)
    cfg.SetDefault("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(config.delack_s)))
    # ns-3 3.44's SACK scoreboard can leave a flow that lost a burst sending one segment
    # per RTO for minutes on an idle path (docs/packet.md, "Limits"): off unless asked.
    cfg.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(config.sack))
    # A flow starved longer than six back-offs would be closed (ns-3's DataRetries: 6) and
    # never end; the emulator's hosts retry 80 times (topo/hosttcp.py, tcp_retries2)
    cfg.SetDefault("ns3::TcpSocket::DataRetries", ns.UintegerValue(DATA_RETRIES))
    ecn = "On" if config.transport == "dctcp" else "Off"
    cfg.SetDefault("ns3::TcpSocketBase::UseEcn", ns.StringValue(ecn))
