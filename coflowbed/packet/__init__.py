"""coflowbed's packet-level engine: the same coflow DAGs, fabric models and policy
objects as the fluid simulator (``coflowbed.sim``), run on ns-3 (the optional ``ns3``
wheel: ``pip install 'coflowbed[packet]'``) with TCP or DCTCP, 8-band strict-priority
queues selected by DSCP at every egress and per-flow ECMP.  See docs/packet.md.

    from coflowbed.packet import simulate_packets
    result = simulate_packets(dag, LeafSpine(...), policy, levels=8, scale=0.1)
    result.write(out_dir)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from coflowbed.packet.config import PacketConfig
from coflowbed.packet.engine import PacketEngine, check_inputs, fabric_shape
from coflowbed.packet.ns3bed import Ns3Bed, missing_message, ns3_available  # ns-3: on first use
from coflowbed.packet.result import PacketResult
from coflowbed.sim.fabric import FabricModel
from controller.policies.base import Policy
from workload.dag import Dag


def simulate_packets(
    dag: Dag,
    fabric: FabricModel,
    policy: Policy,
    levels: int | None = None,
    *,
    transport: str = "tcp",
    scale: float = 1.0,
    horizon_s: float = math.inf,
    faults: Sequence[object] = (),
    config: PacketConfig | None = None,
) -> PacketResult:
    """Run ``dag`` on ``fabric`` (``LeafSpine``, ``Rail`` or ``BigSwitch``) under
    ``policy`` with ``levels`` hardware queues (None: ranks compressed onto 8) on ns-3,
    as ``coflowbed.sim.simulate`` does in the fluid model.  ``transport``: tcp (NewReno),
    dctcp or cubic; ``scale``: factor on every flow's bytes and link rate (fewer packets,
    the same times); ``config`` sets the rest (``PacketConfig``; ``transport``, ``scale``
    and ``horizon_s`` given here override it).  ValueError on a setting out of range or a
    fabric it cannot model; UserError naming the extra when ns3 is not installed."""
    base = config or PacketConfig()
    cfg = PacketConfig(
        **{**base.__dict__, "transport": transport, "scale": scale, "horizon_s": horizon_s}
    ).check()
    check_inputs(fabric, faults)
    bed = Ns3Bed(fabric_shape(fabric), cfg)
    try:
        engine = PacketEngine(dag, fabric, policy, levels, cfg, bed).run()
        engine.stats.events = bed.events()
        engine.stats.drops_per_band = bed.drops_per_band()
        engine.stats.retransmits = bed.total_retransmits()
    finally:
        bed.close()
    return PacketResult(engine, packet_block(engine))


def packet_block(engine: PacketEngine) -> dict:
    """summary.json's ``packet`` block: how the run was set up and what packets showed."""
    cfg, s = engine.config, engine.stats
    return {
        "engine": "ns-3",
        "transport": cfg.transport,
        "scale": cfg.scale,
        "ecmp": cfg.ecmp,
        "link_delay_s": cfg.link_delay_s,
        "queue_packets": cfg.queue_packets,
        "host_queue_packets": cfg.host_queue_packets,
        "fair_queue_buckets": cfg.fair_queue_buckets,
        "mtu": cfg.mtu,
        "rto_max_s": cfg.rto_max_s,
        "drops_per_band": s.drops_per_band,
        "retransmits": s.retransmits,
        "remarks": s.remarks,
    }


__all__ = [
    "PacketConfig",
    "PacketEngine",
    "PacketResult",
    "missing_message",
    "ns3_available",
    "simulate_packets",
]
