"""Several jobs on one fabric: their DAGs merged into one, each node tagged with its job.

Node and flow ids get the prefix ``<job>/`` so that they stay unique; every coflow's
identity and every compute carry the job's name.  A job that starts later
(``start_s`` > 0) gets one setup compute ``<job>/start`` of that duration (iteration
``SETUP_ITERATION``: it belongs to no iteration) that every root node of the job waits
for, so both backends delay it the same way.

``gpu_intensity`` is the per-job figure Crux (SIGCOMM 2024) ranks jobs by: compute per
iteration over the time its traffic needs on its busiest link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from workload.dag import SETUP_ITERATION, Coflow, Compute, Dag, Flow

SEP = "/"  # between a job's name and a node or flow id
START = "start"  # id (after the prefix) of a late job's setup compute


@dataclass(frozen=True)
class JobDag:
    """One job's DAG before merging: its unique name and its start time."""

    name: str
    dag: Dag
    start_s: float = 0.0


def prefixed(job: str, node: str) -> str:
    """``node``'s id inside the merged DAG."""
    return f"{job}{SEP}{node}"


def merge_jobs(jobs: Sequence[JobDag]) -> Dag:
    """One DAG holding every job's nodes (ids prefixed, tagged with the job);
    ValueError on duplicate job names.  ``meta['jobs']`` keeps each job's own meta."""
    names = [j.name for j in jobs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"duplicate job name {dupes[0]!r}")
    merged = Dag(meta={"workload": "jobs", "jobs": {j.name: j.dag.meta for j in jobs}})
    for j in jobs:
        part = tag_job(j)
        merged.coflows.extend(part.coflows)
        merged.computes.extend(part.computes)
    merged.meta["byte_scale"] = _common_scale(jobs)
    return merged


def _common_scale(jobs: Sequence[JobDag]) -> float:
    """The byte scale all jobs share; ValueError when they differ (results could not be
    scaled back to real bytes with one factor)."""
    scales = {float(j.dag.meta.get("byte_scale", 1.0)) for j in jobs}
    if len(scales) > 1:
        raise ValueError(f"jobs have different byte_scale values {sorted(scales)}")
    return scales.pop() if scales else 1.0


def tag_job(job: JobDag) -> Dag:
    """``job``'s DAG with ids prefixed, nodes tagged and the start delay in front."""
    name = job.name
    computes = [_compute(name, c) for c in job.dag.computes]
    coflows = [_coflow(name, cf) for cf in job.dag.coflows]
    if job.start_s > 0:
        start = prefixed(name, START)
        computes = [_wait_for(c, start) for c in computes]
        coflows = [_wait_for(cf, start) for cf in coflows]
        host = next(iter(sorted(job.dag.hosts())), "h0")
        computes.insert(0, Compute(start, host, job.start_s, (), START, SETUP_ITERATION, name))
    return Dag(coflows, computes, dict(job.dag.meta))


def _compute(job: str, c: Compute) -> Compute:
    """A compute node moved into ``job``."""
    deps = tuple(prefixed(job, d) for d in c.deps)
    return replace(c, node_id=prefixed(job, c.node_id), deps=deps, job=job)


def _coflow(job: str, cf: Coflow) -> Coflow:
    """A coflow moved into ``job`` (flow ids prefixed too)."""
    flows = tuple(Flow(prefixed(job, f.flow_id), f.src, f.dst, f.bytes) for f in cf.flows)
    return Coflow(
        prefixed(job, cf.coflow_id),
        flows,
        replace(cf.identity, job=job),
        tuple(prefixed(job, d) for d in cf.deps),
        cf.release_s,
    )


def _wait_for(node, start: str):
    """``node`` waiting for ``start`` when it has no other dependency."""
    return node if node.deps else replace(node, deps=(start,))


def gpu_intensity(dag: Dag, host_bps: float) -> float:
    """Crux's GPU intensity I = W / t of one job: W = GPU-seconds of compute per
    iteration (a host's compute runs on its ``gpus_per_host`` GPUs), t = the busiest
    host port's bytes per iteration at ``host_bps`` (the policies' view of the fabric:
    host ports, non-blocking core).  ``inf`` for a job that sends nothing."""
    iterations = max(len([i for i in dag.iterations() if i != SETUP_ITERATION]), 1)
    gpus = int(dag.meta.get("gpus_per_host", 1))
    work = gpus * sum(c.duration_s for c in dag.computes if c.iteration != SETUP_ITERATION)
    port: dict[tuple[str, str], int] = {}
    for cf in dag.coflows:
        for f in cf.flows:
            port[("out", f.src)] = port.get(("out", f.src), 0) + f.bytes
            port[("in", f.dst)] = port.get(("in", f.dst), 0) + f.bytes
    if not port:
        return float("inf")
    t = max(port.values()) * 8.0 / host_bps / iterations
    return work / iterations / t
