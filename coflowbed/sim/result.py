"""Simulation results as the same records and files an emulated run writes
(``coflowbed.results.files``): flows.csv, coflows.csv, iterations.csv, summary.json."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from coflowbed.results.recorded import Outcome, Progress, RecordedRun, nan_to_none
from coflowbed.results.records import (
    FlowRecord,
)
from coflowbed.sim.engine import Simulator
from workload.dag import Dag


@dataclass
class SimResult(RecordedRun):
    """The outcome of one ``Simulator`` run, convertible to result records."""

    sim: Simulator

    @property
    def partial(self) -> bool:
        """Whether the run stopped before every node finished."""
        return not self.sim.stats.finished

    def run_state(self) -> tuple[Dag, Sequence[Outcome], Progress]:
        """The DAG, each coflow's outcome and the DAG walk of this run."""
        return self.sim.dag, self.sim.outcomes, self.sim.dagstate

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
                        nan_to_none(starts[i]),
                        nan_to_none(ends[i]),
                        int(got),
                    )
                )
                i += 1
        return out

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
            # decision -> level installed; ``paid``: whether this run paid it (a policy
            # with levels fixed for the DAG pays none)
            "sim_control_delay": {**sim.control.to_json(), "paid": bool(sim.delay)},
            "flows": len(sim.flows),
            "byte_scale": sim.dag.meta.get("byte_scale", 1.0),
        }
