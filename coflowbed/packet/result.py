"""Packet-level results as the same records and files as the fluid engine's
``SimResult`` (the same methods; flows.csv, coflows.csv, iterations.csv,
summary.json), plus what only packets show in summary.json's ``packet`` block: drops
per priority band, TCP retransmissions, level re-marks, the scale and transport."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coflowbed.packet.engine import PacketEngine
from coflowbed.results.files import write_results
from coflowbed.results.records import (
    CoflowRecord,
    ComputeRecord,
    FlowRecord,
    IterationRecord,
    RunSummary,
    compute_records,
    iteration_records,
    summarize,
)


def _opt(x: float) -> float | None:
    """NaN -> None (unfinished / not started)."""
    return None if math.isnan(x) else float(x)


@dataclass
class PacketResult:
    """The outcome of one packet-level run, convertible to result records."""

    engine: PacketEngine
    packet: dict[str, Any] = field(default_factory=dict)  # summary.json's packet block

    @property
    def partial(self) -> bool:
        """Whether the run stopped before every node finished."""
        return not self.engine.stats.finished

    def coflow_records(self) -> list[CoflowRecord]:
        """One record per coflow (release = arrival, first byte at a receiver = start,
        level and rank at the coflow's first decision)."""
        out = []
        for cf, o in zip(self.engine.dag.coflows, self.engine.outcomes):
            r = CoflowRecord.of(cf)
            r.arrival_s, r.start_s, r.finish_s = (
                _opt(o.release_s),
                _opt(o.start_s),
                _opt(o.finish_s),
            )
            r.level, r.rank = o.level, o.rank
            out.append(r)
        return out

    def flow_records(self) -> list[FlowRecord]:
        """One record per flow (start = connection opened, finish = last byte received,
        retransmitted bytes in the DAG's bytes)."""
        a = self.engine.arrays
        starts, ends, got = a.start_s.tolist(), a.finish_s.tolist(), a.received.tolist()
        again = a.retrans.tolist()
        cids = [cf.coflow_id for cf in self.engine.dag.coflows]
        return [
            FlowRecord(f.flow_id, cids[c], f.src, f.dst, f.bytes, _opt(s), _opt(e), g, r)
            for (c, f), s, e, g, r in zip(self.engine.flows, starts, ends, got, again)
        ]

    def compute_records(self) -> list[ComputeRecord]:
        """Start and end of every compute node (None where it did not run)."""
        st = self.engine.dagstate
        return compute_records(self.engine.dag, st.compute_start, st.compute_end)

    def iteration_records(self) -> list[IterationRecord]:
        """One record per iteration of the DAG."""
        return iteration_records(self.engine.dagstate.iteration_spans())

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

    def summary(self, extra: dict | None = None) -> RunSummary:
        """The summary.json content without writing files."""
        return summarize(
            self.coflow_records(),
            self.iteration_records(),
            self.partial,
            {**self.extra(), **(extra or {})},
        )

    def write(self, out_dir: Path, extra: dict | None = None) -> RunSummary:
        """Write the result files (``coflowbed.results.files.write_results``); return
        the summary."""
        return write_results(
            Path(out_dir),
            self.flow_records(),
            self.coflow_records(),
            self.iteration_records(),
            self.partial,
            {**self.extra(), **(extra or {})},
            self.compute_records(),
        )
