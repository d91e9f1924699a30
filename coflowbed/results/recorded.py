"""What every engine's result offers (the fluid model's ``SimResult``, the packet
engine's ``PacketResult``): its records, and from them the run's summary and files, so a
run folder is the same whichever engine made it."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

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
from workload.dag import Dag


class Outcome(Protocol):
    """One coflow's simulated timing, as both engines keep it."""

    release_s: float
    start_s: float
    finish_s: float
    level: int | None
    rank: str


class Progress(Protocol):
    """What both engines' walk of the DAG records (``coflowbed.sim.dagstate.DagState``)."""

    @property
    def compute_start(self) -> Mapping[str, float]: ...

    @property
    def compute_end(self) -> Mapping[str, float]: ...

    def iteration_spans(self) -> Mapping[tuple[str, int], tuple[float, float | None]]: ...


def nan_to_none(x: float) -> float | None:
    """NaN -> None (unfinished / not started), else the float."""
    return None if math.isnan(x) else float(x)


class RecordedRun(ABC):
    """A finished (or stopped) simulated run as result records."""

    @property
    @abstractmethod
    def partial(self) -> bool:
        """Whether the run stopped before every node finished."""

    @abstractmethod
    def run_state(self) -> tuple[Dag, Sequence[Outcome], Progress]:
        """The DAG run, each coflow's outcome (in the DAG's order) and the DAG walk."""

    def coflow_records(self) -> list[CoflowRecord]:
        """One record per coflow (release = arrival, first byte = start, level and rank at
        the coflow's first decision)."""
        dag, outcomes, _ = self.run_state()
        out = []
        for cf, o in zip(dag.coflows, outcomes):
            r = CoflowRecord.of(cf)
            r.arrival_s = nan_to_none(o.release_s)
            r.start_s, r.finish_s = nan_to_none(o.start_s), nan_to_none(o.finish_s)
            r.level, r.rank = o.level, o.rank
            out.append(r)
        return out

    @abstractmethod
    def flow_records(self) -> list[FlowRecord]:
        """One record per flow."""

    def compute_records(self) -> list[ComputeRecord]:
        """Start and end of every compute node (None where it did not run)."""
        dag, _, walk = self.run_state()
        return compute_records(dag, walk.compute_start, walk.compute_end)

    def iteration_records(self) -> list[IterationRecord]:
        """One record per iteration of the DAG."""
        return iteration_records(self.run_state()[2].iteration_spans())

    @abstractmethod
    def extra(self) -> dict:
        """The engine's facts for summary.json."""

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
