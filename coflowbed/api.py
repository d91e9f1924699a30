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

from coflowbed.run_result import RunResult

if TYPE_CHECKING:
    from coflowbed.scenario import Scenario

SHIPPED = Path(__file__).resolve().parent / "scenarios"
RESULTS = Path("results")  # parent of the default run folders, as for the CLI


def scenario_path(scenario: str | Path) -> Path:
    """A scenario file: ``scenario`` itself, or the shipped ``<name>.yaml`` when
    ``scenario`` is a bare name that is no file here (``"default"``)."""
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
    """Several policies on one workload: ``compare.csv``'s rows and each policy's run."""

    path: Path
    rows: tuple[Mapping[str, Any], ...]  # compare.json's rows, in the policies' order
    runs: Mapping[str, RunResult]  # policy -> its run

    def row(self, policy: str) -> Mapping[str, Any]:
        """The table row of ``policy`` (avg_cct_s, speedup_avg_cct, fidelity_iter...)."""
        for r in self.rows:
            if r["policy"] == policy:
                return r
        raise LookupError(f"{self.path}: {policy!r} not compared (policies: {list(self.runs)})")

    def run(self, policy: str) -> RunResult:
        """The run of ``policy``."""
        self.row(policy)  # names the compared policies when absent
        return self.runs[policy]

    @property
    def partial(self) -> bool:
        """Whether any policy's run was partial."""
        return any(r.partial for r in self.runs.values())


def compare(
    scenario: str | Path,
    policies: Sequence[str],
    /,
    *,
    out: str | Path | None = None,
    sim: bool = False,
    check: bool = True,
    **overrides: Any,
) -> Comparison:
    """``coflowbed compare``: the scenario under each of ``policies`` (emulated, or in
    the simulator with ``sim``), a thin wrapper over ``coflowbed.compare.compare``."""
    from coflowbed.commands import compare as cmd
    from coflowbed.compare import compare as compare_runs

    scen = load(scenario, overrides)
    names = cmd._policies(",".join(policies), "coflowbed.compare")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = Path(out or RESULTS / f"{stamp}-compare-{scen.name}").resolve()
    run_one = cmd._simulate_one if sim else cmd._emulate_one(scen, check)
    rows = compare_runs(scen, names, folder, run_one)
    runs = {pol: RunResult.read(folder / pol) for pol in names}
    return Comparison(folder, tuple(rows), runs)
