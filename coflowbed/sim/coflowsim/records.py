"""A CoflowSim-model run as the result records and files every run writes
(``coflowbed.results.files``), in seconds: CoflowSim ms / 1024."""

from __future__ import annotations

import math
from pathlib import Path

from coflowbed.results.files import write_results
from coflowbed.results.records import CoflowRecord, FlowRecord, IterationRecord, RunSummary
from coflowbed.sim.coflowsim.consts import DARK_QUEUES, QUANTUM, SECOND
from coflowbed.sim.coflowsim.model import CsRun
from workload.dag import CoflowType


def _s(ms: float) -> float | None:
    """CoflowSim ms -> seconds; NaN -> None."""
    return None if math.isnan(ms) else ms / SECOND


def coflow_records(run: CsRun) -> list[CoflowRecord]:
    """One record per job: arrival = start = its admission, finish = its last flow's."""
    wl, out = run.workload, run.outcome
    recs = []
    for j, job in enumerate(wl.jobs):
        lo, hi = int(wl.job_first[j]), int(wl.job_first[j + 1])
        start = _s(float(out.start_ms[j]))
        recs.append(
            CoflowRecord(
                job.coflow_id,
                CoflowType.OTHER.value,
                "fb",
                0,
                0,
                0,
                "shuffle",
                0,
                hi - lo,
                int(wl.flow_bytes[lo:hi].sum()),
                start,
                start,
                _s(float(out.finish_ms[j])),
            )
        )
    return recs


def flow_records(run: CsRun) -> list[FlowRecord]:
    """One record per (mapper rack, reducer rack) flow, hosts named ``p<rack>``."""
    wl, out = run.workload, run.outcome
    recs = []
    ends = out.flow_finish_ms.tolist()
    for f, (j, s, d, b) in enumerate(
        zip(
            wl.flow_job.tolist(), wl.flow_src.tolist(), wl.flow_dst.tolist(), wl.flow_bytes.tolist()
        )
    ):
        cid, end = wl.jobs[j].coflow_id, _s(ends[f])
        start = _s(float(out.start_ms[j]))
        got = int(b) if end is not None else 0
        recs.append(FlowRecord(f"{cid}.{s}-{d}", cid, f"p{s}", f"p{d}", int(b), start, end, got))
    return recs


def iteration_records(coflows: list[CoflowRecord]) -> list[IterationRecord]:
    """The whole trace as iteration 0 (first admission to last finish), as the default
    model writes a trace run."""
    if not coflows:
        return []
    ends = [r.finish_s for r in coflows]
    last = None if None in ends else max(e for e in ends if e is not None)
    return [IterationRecord(0, min(r.arrival_s or 0.0 for r in coflows), last)]


def extra(run: CsRun, byte_scale: float) -> dict:
    """Simulator facts for summary.json, with ``model: coflowsim``."""
    out = run.outcome
    return {
        "mode": "simulated",
        "model": "coflowsim",
        "policy": run.policy,
        "levels": DARK_QUEUES if run.policy == "dclas" else "exact",
        "fabric": f"bigswitch:{run.workload.racks}x1Gibps (coflowsim racks)",
        "sim_events": out.events,
        "sim_policy_calls": out.events,
        "sim_wall_s": round(out.wall_s, 3),
        "sim_end_s": out.steps * QUANTUM / SECOND,
        "flows": len(run.workload.flow_bytes),
        "byte_scale": byte_scale,
    }


def write(run: CsRun, out_dir: Path, more: dict, byte_scale: float = 1.0) -> RunSummary:
    """Write flows.csv, coflows.csv, iterations.csv (empty), summary.json; the summary."""
    coflows = coflow_records(run)
    return write_results(
        Path(out_dir),
        flow_records(run),
        coflows,
        iteration_records(coflows),
        not run.outcome.finished,
        {**extra(run, byte_scale), **more},
    )
