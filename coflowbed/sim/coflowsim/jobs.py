"""A coflow-benchmark trace as CoflowSim lays it out (``Job.arrangeTasks``): mappers
merged per rack, reducers merged per rack, each reducer's bytes rounded up to whole MB
and then to a multiple of (mappers) MB, one flow per (mapper rack, reducer rack) of
``reducer bytes / mappers`` (at least 1 MB), and each job's static skew ``alpha`` and
deadline.  Flows of a job are contiguous, in CoflowSim's order: by reducer rack, then
mapper rack."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coflowbed.sim.coflowsim.consts import (
    DEADLINE_RANDOM_FACTOR,
    DEADLINE_SEED,
    MB,
    RACK_BYTES_PER_SEC,
)
from coflowbed.sim.coflowsim.javarandom import JavaRandom
from workload.fbtrace import TraceCoflow


@dataclass(frozen=True)
class CsJob:
    """One coalesced job: trace id, arrival (CoflowSim ms), racks and flow sizes."""

    coflow_id: str
    arrival_ms: float
    mappers: tuple[int, ...]  # distinct mapper racks, ascending
    reducers: tuple[tuple[int, float], ...]  # (rack, rounded bytes), ascending rack
    alpha: float  # bytes at the most loaded port (SEBF's static order)
    deadline_ms: float  # alpha at line rate x CoflowSim's random multiplier


@dataclass(frozen=True)
class CsWorkload:
    """All jobs (arrival order) and their flows as flat arrays."""

    racks: int
    jobs: tuple[CsJob, ...]
    flow_job: np.ndarray  # int64, job index of each flow
    flow_src: np.ndarray  # int64 mapper rack
    flow_dst: np.ndarray  # int64 reducer rack
    flow_bytes: np.ndarray  # float64
    job_first: np.ndarray  # int64 [jobs + 1]: flows of job j are job_first[j]:job_first[j+1]

    @property
    def arrival_ms(self) -> np.ndarray:
        """Arrival of every job, CoflowSim ms."""
        return np.array([j.arrival_ms for j in self.jobs], dtype=np.float64)

    @property
    def alpha(self) -> np.ndarray:
        """Static alpha (bytes) of every job."""
        return np.array([j.alpha for j in self.jobs], dtype=np.float64)

    @property
    def deadline_ms(self) -> np.ndarray:
        """Deadline duration (CoflowSim ms) of every job."""
        return np.array([j.deadline_ms for j in self.jobs], dtype=np.float64)


def round_up(nbytes: float, n_mb: int) -> float:
    """``ReduceTask.roundToNearestNMB``: truncate to whole bytes, round up to a multiple
    of ``n_mb`` MB."""
    mult = n_mb * MB
    return float(mult * math.ceil(int(nbytes) / mult))


def reducer_bytes(reducers: Sequence[tuple[int, float]], n_mappers: int) -> list[tuple[int, float]]:
    """Reducers merged per rack (each rounded to 1 MB first, the sum to ``n_mappers`` MB)."""
    per_rack: dict[int, float] = {}
    for rack, mb in reducers:
        per_rack[rack] = per_rack.get(rack, 0.0) + round_up(mb * 1048576.0, 1)
    return [(rack, round_up(b, n_mappers)) for rack, b in sorted(per_rack.items())]


def make_job(tc: TraceCoflow, arrival_ms: float, mult: float, byte_scale: float) -> CsJob:
    """The coalesced job of one trace coflow; ``mult`` is its deadline multiplier."""
    mappers = tuple(sorted(set(tc.mappers)))
    scaled = [(rack, mb * byte_scale) for rack, mb in tc.reducers]
    reducers = tuple(reducer_bytes(scaled, len(mappers)))
    total = sum(b for _, b in reducers)
    alpha = max(total / len(mappers), max(b for _, b in reducers))
    deadline = alpha / RACK_BYTES_PER_SEC * mult * 1000
    return CsJob(f"fb{tc.coflow_id}", arrival_ms, mappers, reducers, alpha, deadline)


def build_workload(
    trace: Sequence[TraceCoflow], racks: int, time_scale: float = 1.0, byte_scale: float = 1.0
) -> CsWorkload:
    """The jobs of ``trace`` (sorted stably by arrival, times as written, read as
    CoflowSim ms; coflows without mappers ignored, as CoflowSim does) and their flows."""
    kept = sorted((tc for tc in trace if tc.mappers), key=lambda tc: tc.arrival_ms)
    rng = JavaRandom(DEADLINE_SEED)
    jobs = tuple(
        make_job(tc, tc.arrival_ms * time_scale, _deadline_mult(rng), byte_scale) for tc in kept
    )
    return _flatten(racks, jobs)


def _deadline_mult(rng: JavaRandom) -> float:
    """The next job's deadline multiplier (``Simulator.mergeTasksByRack``)."""
    return 1.0 + rng.next_double() * DEADLINE_RANDOM_FACTOR


def _flatten(racks: int, jobs: tuple[CsJob, ...]) -> CsWorkload:
    """The flow arrays of ``jobs``."""
    job, src, dst, size, first = [], [], [], [], [0]
    for j, cj in enumerate(jobs):
        for rack, b in cj.reducers:
            per_flow = max(b / len(cj.mappers), float(MB))
            for m in cj.mappers:
                job.append(j)
                src.append(m)
                dst.append(rack)
                size.append(per_flow)
        first.append(len(job))
    return CsWorkload(
        racks,
        jobs,
        np.array(job, dtype=np.int64),
        np.array(src, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        np.array(size, dtype=np.float64),
        np.array(first, dtype=np.int64),
    )
