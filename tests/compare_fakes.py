"""A fake ``run_one`` for comparison tests: writes a run folder (coflows.csv, summary.json)
with the iteration time and CCTs a table gives per (policy, repetition), no fabric."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coflowbed.results.files import write_results
from coflowbed.results.records import CoflowRecord, FlowRecord, IterationRecord, RunSummary


def write_run(out: Path, iteration_s: float, ccts: dict[str, float], partial: bool) -> RunSummary:
    """A run folder: one coflow per (type, CCT) of ``ccts``, one iteration."""
    recs = []
    for i, (ctype, cct) in enumerate(ccts.items()):
        r = CoflowRecord(f"c{i}", ctype, "j", 0, i, 0, "", 0, 1, 1000, arrival_s=0.0, level=0)
        r.start_s, r.finish_s = 0.0, cct
        recs.append(r)
    flows = [FlowRecord(f"{c.coflow_id}.0", c.coflow_id, "h11", "h21", 1000) for c in recs]
    return write_results(out, flows, recs, [IterationRecord(0, 0.0, iteration_s)], partial)


@dataclass
class FakeRuns:
    """``run_one``: iteration time ``times[policy][k]`` for the policy's k-th call."""

    times: dict[str, list[float]]
    partial: set[tuple[str, int]] = field(default_factory=set)  # (policy, repetition)
    seen: list[tuple[str, int, Path]] = field(default_factory=list)  # (policy, seed, folder)

    def __call__(self, scen, out: Path) -> RunSummary:
        """Write the next run of ``scen.policy`` into ``out``."""
        k = sum(1 for p, _, _ in self.seen if p == scen.policy)
        self.seen.append((scen.policy, scen.seed, out))
        it = self.times[scen.policy][k]
        partial = (scen.policy, k + 1) in self.partial
        return write_run(out, it, {"DP": it / 2, "PP": it / 10}, partial)
