"""Packet-level results as the same records and files as the fluid engine's
``SimResult`` (the same methods; flows.csv, coflows.csv, iterations.csv,
summary.json), plus what only packets show in summary.json's ``packet`` block: drops
per priority band, TCP retransmissions, level re-marks, the scale and transport."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from coflowbed.packet.engine import PacketEngine
from coflowbed.results.recorded import Outcome, Progress, RecordedRun, nan_to_none
from coflowbed.results.records import (
    FlowRecord,
)
from workload.dag import Dag


@dataclass
class PacketResult(RecordedRun):
    """The outcome of one packet-level run, convertible to result records."""

    engine: PacketEngine
    packet: dict[str, Any] = field(default_factory=dict)  # summary.json's packet block

    @property
    def partial(self) -> bool:
        """Whether the run stopped before every node finished."""
        return not self.engine.stats.finished

    def run_state(self) -> tuple[Dag, Sequence[Outcome], Progress]:
        """The DAG, each coflow's outcome and the DAG walk of this run."""
        return self.engine.dag, self.engine.outcomes, self.engine.dagstate

    def flow_records(self) -> list[FlowRecord]:
        """One record per flow (start = connection opened, finish = last byte received,
        retransmitted bytes in the DAG's bytes)."""
        a = self.engine.arrays
        starts, ends, got = a.start_s.tolist(), a.finish_s.tolist(), a.received.tolist()
        again = a.retrans.tolist()
        cids = [cf.coflow_id for cf in self.engine.dag.coflows]
        return [
            FlowRecord(
                f.flow_id, cids[c], f.src, f.dst, f.bytes, nan_to_none(s), nan_to_none(e), g, r
            )
            for (c, f), s, e, g, r in zip(self.engine.flows, starts, ends, got, again)
        ]

    def extra(self) -> dict:
        """Engine facts for summary.json."""
        e, s = self.engine, self.engine.stats
        return {
            "mode": "packet",
            "policy": e.policy.name,
            "levels": "exact" if e.levels is None else e.levels,
            "fabric": e.fabric.description,
            "sim_events": s.events,
            "sim_policy_calls": s.policy_calls,
            "sim_wall_s": round(s.wall_s, 3),
            "sim_end_s": s.sim_end_s,
            "flows": len(e.flows),
            "byte_scale": e.dag.meta.get("byte_scale", 1.0),
            "packet": self.packet,
        }
