"""The reducers of a workload as CoflowSim keeps them (``ReduceTask``): one per (job,
reducer rack), owning a contiguous block of the job's flows (one per mapper rack, in
mapper order) and its own ``shuffleBytes``, which CoflowSim counts down on its own
(``shuffleBytesLeft``) rather than summing its flows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coflowbed.sim.coflowsim.jobs import CsWorkload


@dataclass(frozen=True)
class Reducers:
    """Reducer r owns flows ``first[r]:first[r+1]``, sits on ``rack[r]``, belongs to
    ``job[r]`` and starts with ``shuffle_bytes[r]``; job j owns reducers
    ``job_first[j]:job_first[j+1]``."""

    first: np.ndarray  # int64 [reducers + 1]
    rack: np.ndarray  # int64
    job: np.ndarray  # int64
    shuffle_bytes: np.ndarray  # float64
    job_first: np.ndarray  # int64 [jobs + 1]


def reducers_of(wl: CsWorkload) -> Reducers:
    """The reducers of ``wl`` (its flows are laid out reducer by reducer, ascending rack)."""
    first, rack, job, nbytes, job_first = [0], [], [], [], [0]
    for j, cj in enumerate(wl.jobs):
        for r_rack, b in cj.reducers:
            first.append(first[-1] + len(cj.mappers))
            rack.append(r_rack)
            job.append(j)
            nbytes.append(b)
        job_first.append(len(rack))
    return Reducers(
        np.array(first, dtype=np.int64),
        np.array(rack, dtype=np.int64),
        np.array(job, dtype=np.int64),
        np.array(nbytes, dtype=np.float64),
        np.array(job_first, dtype=np.int64),
    )
