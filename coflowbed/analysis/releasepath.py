"""How much of an emulated run's distance from the model is its release path: the time
from a coflow's release to its first flow's start (the orchestrator's order, under a
dynamic policy the controller's ``register`` round trip with its switch write, the
agent's send), which the model does not have.  ``coflowbed check`` simulates the run
again with each coflow's own measured delay put in front of it; what is left of the
ratio is the data path (docs/emulation.md, "What the release path costs")."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from coflowbed.analysis import fidelity
from coflowbed.results.files import read_csv_rows
from coflowbed.results.records import IterationRecord, percentile
from workload.dag import Compute, Dag

NODE_PREFIX = "release-path:"  # id prefix of the delay nodes ``delayed`` adds


@dataclass(frozen=True)
class ReleasePath:
    """A run's release path: the median delay, over how many coflows, and the
    emulated/simulated iteration ratio without and with the delays in the model."""

    median_ms: float
    coflows: int
    iteration_ratio: float | None
    iteration_ratio_delayed: float | None

    def describe(self) -> str:
        """One line for ``check``."""
        fmt = lambda x: "-" if x is None else f"x{x:.3f}"  # noqa: E731
        return (
            f"release path (release -> first flow start): median {self.median_ms:.2f} ms over "
            f"{self.coflows} coflows; iteration emulated/simulated {fmt(self.iteration_ratio)}, "
            f"{fmt(self.iteration_ratio_delayed)} with each coflow's own delay in the model "
            "(what is left is the data path)"
        )


def delays(measured: Mapping[str, dict]) -> dict[str, float]:
    """Seconds from release (``arrival_s``) to the first flow's start (``start_s``) of
    every coflow of ``coflows.csv`` rows that started (never below 0)."""
    return {
        cid: max(0.0, float(r["start_s"]) - float(r["arrival_s"]))
        for cid, r in measured.items()
        if r.get("start_s") is not None and r.get("arrival_s") is not None
    }


def delayed(dag: Dag, delay_s: Mapping[str, float]) -> Dag:
    """``dag`` with each coflow of ``delay_s`` released that much later than its
    dependencies and release time allow: its release time moves by the delay and a
    compute node of that length (on its first sender) goes between it and its
    dependencies.  Coflows without a delay stay as they are."""
    coflows, nodes = [], []
    for cf in dag.coflows:
        d = delay_s.get(cf.coflow_id, 0.0)
        if d <= 0.0:
            coflows.append(cf)
            continue
        deps = cf.deps
        if deps:
            node = _node(cf, d)
            nodes.append(node)
            deps = (node.node_id,)
        coflows.append(dataclasses.replace(cf, deps=deps, release_s=cf.release_s + d))
    return dataclasses.replace(dag, coflows=coflows, computes=[*dag.computes, *nodes])


def _node(cf, seconds: float) -> Compute:
    """The delay node in front of coflow ``cf``: after its dependencies, ``seconds``."""
    i, host = cf.identity, cf.flows[0].src
    label = "release path"
    return Compute(NODE_PREFIX + cf.coflow_id, host, seconds, cf.deps, label, i.iteration, i.job)


def measure(run_dir: Path) -> ReleasePath:
    """The release path of the emulated run in ``run_dir``: its delays, and the run's
    iteration ratio against the fidelity figure's reference simulated without and
    with them."""
    inputs, measured = fidelity.read_inputs(run_dir), fidelity.read_measured(run_dir)
    used, dag = fidelity.used_levels(measured), fidelity.read_dag(run_dir)
    emulated = fidelity.iteration_times(read_csv_rows(fidelity.need(run_dir / "iterations.csv")))
    waits = delays(measured)
    plain = fidelity.replay(inputs, dag, used).result.iteration_records()
    late = fidelity.replay(inputs, delayed(dag, waits), used).result.iteration_records()
    median_ms = 1e3 * (percentile(list(waits.values()), 50) or 0.0)
    ratios = _ratio(emulated, plain), _ratio(emulated, late, plain)
    return ReleasePath(median_ms, len(waits), *ratios)


def _ratio(
    emulated: Mapping[tuple[str, int], float],
    records: Sequence[IterationRecord],
    opened: Sequence[IterationRecord] = (),
) -> float | None:
    """Mean emulated / mean simulated time over the iterations both finished; each
    simulated iteration timed from its start in ``opened`` if given (the model without
    the delays: an iteration that a coflow opens starts at that coflow's release, as
    the emulator times it, not after its delay)."""
    starts = {(r.job, r.iteration): r.start_s for r in opened}
    simulated = {
        (r.job, r.iteration): r.finish_s - starts.get((r.job, r.iteration), r.start_s)
        for r in records
        if r.finish_s is not None
    }
    common = sorted(emulated.keys() & simulated.keys())
    total = sum(simulated[k] for k in common)
    return sum(emulated[k] for k in common) / total if common and total > 0 else None
