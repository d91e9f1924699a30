"""The Python API for scripted runs: ``coflowbed.run``, ``coflowbed.simulate`` and
``coflowbed.compare`` (docs/python-api.md).  Each takes a scenario (a YAML path or a
shipped scenario's name) and overrides of its keys (``policy="hermod"``, ``levels=4``,
``**{"fabric.host_bw_mbps": 200}``), runs it as the CLI does, and returns the typed
result read back from the run folder (``coflowbed.run_result.RunResult``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coflowbed.errors import UserError
from coflowbed.run_result import RunResult

if TYPE_CHECKING:
    from coflowbed.comparison import Comparison as Table, PolicyStats
    from coflowbed.scenario import Scenario
    from coflowbed.stats import Speedup

SHIPPED = Path(__file__).resolve().parent / "scenarios"
RESULTS = Path("results")  # parent of the default run folders, as for the CLI


def scenario_path(scenario: str | Path) -> Path:
    """A scenario file: ``scenario`` itself, or the shipped ``<name>.yaml`` when
    ``scenario`` is a bare name that is no file here (``"mechanism"``)."""
    path = Path(scenario)
    shipped = SHIPPED / f"{scenario}.yaml"
    if not path.exists() and path.name == str(scenario) and shipped.exists():
        return shipped
    return path


def load(scenario: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """The validated scenario with its overrides; UserError (one line) on bad input."""
    from coflowbed.scenario import load_scenario

    return load_scenario(scenario_path(scenario), dict(overrides or {}))


def run(
    scenario: str | Path, /, *, out: str | Path | None = None, check: bool = True, **overrides: Any
) -> RunResult:
    """One emulated run (root, Open vSwitch, Mininet; BMv2 for ``switch: bmv2``) into
    ``out`` (default ``results/<time>-...``); ``check``: with its fidelity figure.
    UserError, nothing started, when the scenario or this machine does not allow it."""
    return emulate(load(scenario, overrides), out, check)


def emulate(scen: Scenario, out: str | Path | None = None, check: bool = True) -> RunResult:
    """``run`` of a scenario already loaded."""
    from coflowbed.commands.run import check_can_run
    from coflowbed.runner import run_scenario

    check_can_run(scen)
    folder = _folder(out, scen, "")
    return RunResult.read(run_scenario(scen, folder, check).out_dir)


def simulate(
    scenario: str | Path, /, *, out: str | Path | None = None, **overrides: Any
) -> RunResult:
    """The scenario in the flow-level simulator (its fabric, K levels, policy, faults),
    into ``out`` (default ``results/<time>-sim-...``)."""
    from coflowbed.commands.simulate import scenario_fabric, scenario_faults, scenario_policy
    from coflowbed.sim import simulate as sim

    scen = load(scenario, overrides)
    fabric = scenario_fabric(scen.plan, None)
    faults, policy = scenario_faults(scen, fabric), scenario_policy(scen)
    folder = _folder(out, scen, "sim-")
    t0 = time.perf_counter()
    result = sim(scen.dag, fabric, policy, scen.levels, faults=faults)
    extra = {"source": scen.source, "sim_total_wall_s": round(time.perf_counter() - t0, 3)}
    result.write(folder, extra)
    return RunResult.read(folder)


def _folder(out: str | Path | None, scen: Scenario, kind: str) -> Path:
    """``out`` (made if absent), or a fresh ``results/<time>-<kind>...`` folder; absolute."""
    from coflowbed.rundir import new_run_dir

    if out is None:
        return new_run_dir(RESULTS, scen, f"{kind}{scen.policy}" if kind else None).resolve()
    Path(out).mkdir(parents=True, exist_ok=True)
    return Path(out).resolve()


@dataclass(frozen=True)
class Comparison:
    """Several policies on one workload, each ``repeat`` times: the statistics
    (``table``, ``compare.json``) and every run folder read back."""

    path: Path
    table: Table  # coflowbed.comparison.Comparison: means, CIs, speed-ups
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
    check: bool = True,
    repeat: int = 1,
    seeds: Sequence[int] | None = None,
    **overrides: Any,
) -> Comparison:
    """``coflowbed compare``: the scenario under each of ``policies``, ``repeat`` times
    interleaved (emulated, or in the simulator with ``sim``)."""
    from coflowbed.commands import compare as cmd
    from coflowbed.compare_runs import compare as compare_runs

    scen = load(scenario, overrides)
    names = cmd._policies(",".join(policies), "coflowbed.compare")
    _check_repeat(repeat, seeds)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = Path(out or RESULTS / f"{stamp}-compare-{scen.name}").resolve()
    run_one = cmd._simulate_one if sim else cmd._emulate_one(scen, check)
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
