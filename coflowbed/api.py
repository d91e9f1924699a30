"""The Python API for scripted runs: ``coflowbed.run``, ``coflowbed.simulate`` and
``coflowbed.compare`` (docs/python-api.md).  Each takes a scenario (a YAML path or a
shipped scenario's name) and overrides of its keys (``policy="hermod"``, ``levels=4``,
``**{"fabric.host_bw_mbps": 200}``), runs it as the CLI does, and returns the typed
result read back from the run folder (``coflowbed.results.read.RunResult``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coflowbed.analysis.comparison import Comparison as Table, PolicyStats
from coflowbed.analysis.stats import Speedup
from coflowbed.core.errors import UserError
from coflowbed.emulation.precheck import check_can_run, machine_lacks, machine_missing
from coflowbed.experiment.folders import folder_path, new_run_dir
from coflowbed.experiment.scenario import Scenario, find_scenario, load_scenario
from coflowbed.experiment.simulate import Engine, simulate_scenario
from coflowbed.results.read import RunResult
from coflowbed.studies import single
from coflowbed.studies.compare import compare as compare_runs, emulated, parse_policies, simulated

RESULTS = Path("results")  # parent of the default run folders, as for the CLI
__all__ = [
    "Comparison",
    "Engine",
    "RunResult",
    "compare",
    "emulate",
    "load",
    "machine_lacks",
    "machine_missing",
    "run",
    "simulate",
]


def load(scenario: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """The validated scenario (a path or a shipped scenario's name) with its overrides;
    UserError (one line) on bad input."""
    return load_scenario(find_scenario(scenario), dict(overrides or {}))


def run(
    scenario: str | Path, /, *, out: str | Path | None = None, check: bool = True, **overrides: Any
) -> RunResult:
    """One emulated run (root, Open vSwitch, Mininet; BMv2 for ``switch: bmv2``) into
    ``out`` (default ``results/<time>-...``); ``check``: with its fidelity figure.
    UserError, nothing started, when the scenario or this machine does not allow it."""
    return emulate(load(scenario, overrides), out, check)


def emulate(scen: Scenario, out: str | Path | None = None, check: bool = True) -> RunResult:
    """``run`` of a scenario already loaded."""
    check_can_run(scen)  # before the folder is made
    if out is None:
        folder = new_run_dir(RESULTS, scen).resolve()
    else:
        folder = Path(out).resolve()
        folder.mkdir(parents=True, exist_ok=True)
    return RunResult.read(single.emulate(scen, folder, check).out_dir)


def simulate(
    scenario: str | Path,
    /,
    *,
    out: str | Path | None = None,
    engine: str | Engine = "fluid",
    **overrides: Any,
) -> RunResult:
    """The scenario simulated (its ``sim_fabric`` or its fabric, K levels, policy,
    faults) into ``out`` (default ``results/<time>-sim-...``); ``engine``: ``"fluid"``
    (the flow-level model) or ``"packet"`` (ns-3; an ``Engine`` sets its transport and
    scale)."""
    scen = load(scenario, overrides)
    how = (Engine(engine) if isinstance(engine, str) else engine).check()
    folder = Path(out) if out is not None else folder_path(RESULTS, "sim", scen.name, scen.policy)
    simulate_scenario(scen, folder.resolve(), engine=how)
    return RunResult.read(folder)


@dataclass(frozen=True)
class Comparison:
    """Several policies on one workload, each ``repeat`` times: the statistics
    (``table``, ``compare.json``) and every run folder read back."""

    path: Path
    table: Table  # coflowbed.analysis.comparison.Comparison: means, CIs, speed-ups
    runs: Mapping[str, tuple[RunResult, ...]]  # policy -> its runs, repetition order

    def stats(self, policy: str) -> PolicyStats:
        """The statistics of ``policy`` (``.metrics["iteration_time_s"].mean`` ...)."""
        for st in self.table.stats:
            if st.policy == policy:
                return st
        raise LookupError(f"{self.path}: {policy!r} not compared (policies: {list(self.runs)})")

    def speedup(self, policy: str, of: str = "iteration_time") -> Speedup:
        """``policy``'s speed-up over fair on ``of`` (``iteration_time`` or ``avg_cct``):
        ``.value``, ``.ci_low``, ``.ci_high``; LookupError when fair was not compared."""
        speedups = self.stats(policy).speedups
        if f"speedup_{of}" not in speedups:
            raise LookupError(
                f"{self.path}: no speed-up of {of!r} (fair compared? {list(speedups)})"
            )
        return speedups[f"speedup_{of}"]

    def run(self, policy: str, repetition: int = 1) -> RunResult:
        """Run ``repetition`` (1-based) of ``policy``."""
        self.stats(policy)  # names the compared policies when absent
        runs = self.runs[policy]
        if not 1 <= repetition <= len(runs):
            raise LookupError(f"{self.path}: {policy!r} has runs 1..{len(runs)}")
        return runs[repetition - 1]

    @property
    def partial(self) -> bool:
        """Interrupted, a run not done, or a partial run."""
        return self.table.partial


def compare(
    scenario: str | Path,
    policies: Sequence[str],
    /,
    *,
    out: str | Path | None = None,
    sim: bool = False,
    engine: str | Engine = "fluid",
    check: bool = True,
    repeat: int = 1,
    seeds: Sequence[int] | None = None,
    **overrides: Any,
) -> Comparison:
    """``coflowbed compare``: the scenario under each of ``policies``, ``repeat`` times
    interleaved (emulated, or in the simulator with ``sim``)."""
    scen = load(scenario, overrides)
    names = parse_policies(",".join(policies), "coflowbed.compare")
    _check_repeat(repeat, seeds)
    folder = Path(out or folder_path(RESULTS, "compare", scen.name)).resolve()
    how = (Engine(engine) if isinstance(engine, str) else engine).check()
    run_one = simulated(how) if sim else emulated(scen, check)
    table = compare_runs(scen, names, folder, run_one, repeat, seeds)
    runs: dict[str, list[RunResult]] = {p: [] for p in names}
    for r in table.runs:
        runs[r.policy].append(RunResult.read(Path(r.run_dir)))
    return Comparison(folder, table, {p: tuple(v) for p, v in runs.items()})


def _check_repeat(repeat: int, seeds: Sequence[int] | None) -> None:
    """UserError unless ``repeat`` >= 1 and ``seeds`` (if given) has one per repetition."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise UserError("coflowbed.compare", "repeat", f"must be an integer >= 1, got {repeat!r}")
    if seeds is not None and len(seeds) != repeat:
        raise UserError(
            "coflowbed.compare", "seeds", f"{len(seeds)} seeds for repeat {repeat} (one each)"
        )
