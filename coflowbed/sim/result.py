"""Simulation results as the same records and files an emulated run writes
(``coflowbed.results.files``): flows.csv, coflows.csv, iterations.csv, summary.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

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
from coflowbed.sim.engine import Simulator


def _opt(x: float) -> float | None:
    """NaN -> None (unfinished / not started)."""
    return None if math.isnan(x) else float(x)


@dataclass
class SimResult:
    """The outcome of one ``Simulator`` run, convertible to result records."""

    sim: Simulator

    @property
    def partial(self) -> bool:
        """Whether the run stopped before every node finished."""
        return not self.sim.stats.finished

    def coflow_records(self) -> list[CoflowRecord]:
        """One record per coflow (release = arrival, first byte = start, level and rank at
        the coflow's first decision)."""
        out = []
        for cf, o in zip(self.sim.dag.coflows, self.sim.outcomes):
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
        """One record per flow."""
        fl = self.sim.flows
        starts, ends = fl.start_s.tolist(), fl.finish_s.tolist()
        left = fl.remaining.tolist()
        out, i = [], 0
        for cf in self.sim.dag.coflows:
            for f in cf.flows:
                got = f.bytes - math.ceil(left[i] - 1e-6) if left[i] > 0 else f.bytes
                out.append(
                    FlowRecord(
                        f.flow_id,
                        cf.coflow_id,
                        f.src,
                        f.dst,
                        f.bytes,
                        _opt(starts[i]),
                        _opt(ends[i]),
                        int(got),
                    )
                )
                i += 1
        return out

    def compute_records(self) -> list[ComputeRecord]:
        """Start and end of every compute node (None where it did not run)."""
        st = self.sim.dagstate
        return compute_records(self.sim.dag, st.compute_start, st.compute_end)

    def iteration_records(self) -> list[IterationRecord]:
        """One record per iteration of the DAG."""
        return iteration_records(self.sim.dagstate.iteration_spans())

    def extra(self) -> dict:
        """Simulator facts for summary.json."""
        s, sim = self.sim.stats, self.sim
        return {
            "mode": "simulated",
            "policy": sim.policy.name,
            "levels": "exact" if sim.levels is None else sim.levels,
            "fabric": sim.fabric.description,
            "sim_events": s.events,
            "sim_policy_calls": s.policy_calls,
            "sim_wall_s": round(s.wall_s, 3),
            "sim_end_s": s.sim_end_s,
            "sim_finish_tol": sim.finish_tol,
            "flows": len(sim.flows),
            "byte_scale": sim.dag.meta.get("byte_scale", 1.0),
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
        """Write the result files (``coflowbed.results.files.write_results``); return the
        summary."""
        return write_results(
            Path(out_dir),
            self.flow_records(),
            self.coflow_records(),
            self.iteration_records(),
            self.partial,
            {**self.extra(), **(extra or {})},
            self.compute_records(),
        )
