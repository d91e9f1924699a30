"""One owner for "simulate a scenario": every shipped scenario gives the same result
through the command line, the Python API, ``compare --sim``, ``sweep`` and the
``coflowbed_sim`` fixture (``sim_fabric`` scenarios included, which the API once
simulated on the wrong fabric), and the owner itself binds what the scenario says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coflowbed import api
from coflowbed.cli.main import main
from coflowbed.experiment.binding import bind, scenario_fabric
from coflowbed.experiment.scenario import load_scenario
from coflowbed.experiment.simulate import simulate_scenario
from coflowbed.sim import BigSwitch, LeafSpine
from coflowbed.studies.sweep import backends
from coflowbed.studies.sweep.driver import run_sweep
from coflowbed.studies.sweep.spec import load_sweep
from controller import policies
from tests.data import SCENARIOS

SHIPPED = sorted(SCENARIOS.glob("*.yaml"))
FIGURES = ("partial", "coflows", "avg_cct_s", "p95_cct_s", "max_cct_s", "iteration_time_s")


def figures(run_dir: Path) -> dict:
    """The figures of a run folder that the paths must agree on."""
    summary = json.loads((run_dir / "summary.json").read_text())
    return {k: summary[k] for k in FIGURES} | {"policy": summary["policy"]}


def through_sweep(scenario: Path, policy: str, tmp: Path) -> Path:
    """The scenario's one run of a sweep over nothing but it (in this process)."""
    sweep = tmp / "sweep.yaml"
    sweep.write_text(f"name: one\nscenario: {scenario}\npolicies: [{policy}]\n")
    out = tmp / "sweep"
    outcome = run_sweep(load_sweep(sweep), out, backends.serial)
    assert outcome.runs == 1 and not outcome.partial
    (run,) = (out / "runs").iterdir()
    return run


@pytest.mark.parametrize("scenario", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_path_simulates_a_shipped_scenario_alike(scenario, tmp_path, coflowbed_sim):
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "cli")]) in (0, 1)
    want = figures(tmp_path / "cli")
    assert want["coflows"] > 0 and want["avg_cct_s"] > 0  # a real run to compare with
    got = {"api": figures(api.simulate(scenario, out=tmp_path / "api").path)}
    got["fixture"] = figures(coflowbed_sim(scenario).path)
    policy = load_scenario(scenario).policy
    if policy in policies.names():  # compare and sweep take registered policies only
        api.compare(scenario, [policy], sim=True, out=tmp_path / "cmp")
        got["compare"] = figures(tmp_path / "cmp" / policy / "r1")
        got["sweep"] = figures(through_sweep(scenario, policy, tmp_path))
    assert got == dict.fromkeys(got, want)


def test_a_sim_fabric_scenario_is_simulated_on_its_sim_fabric():
    scen = load_scenario(SCENARIOS / "thesis-qwen-moe-12l.yaml")
    bound = bind(scen)
    model = scen.sim_fabric.model() if scen.sim_fabric else None
    assert type(bound.fabric) is type(model) and bound.fabric.description == model.description
    ends = {h for c in scen.dag.coflows for f in c.flows for h in (f.src, f.dst)}
    assert ends <= set(bound.fabric.hosts)  # every flow's ends are on it
    assert not ends <= set(scen.plan.host_names())  # and not on the emulated plan


def test_the_fabric_kind_and_levels_chosen_are_the_ones_simulated(tmp_path):
    scen = load_scenario(SCENARIOS / "mechanism.yaml")
    assert isinstance(scenario_fabric(scen), LeafSpine)
    assert isinstance(scenario_fabric(scen, "bigswitch"), BigSwitch)
    assert bind(scen, levels=2).levels == 2 and bind(scen).levels == scen.levels
    summary = simulate_scenario(scen, tmp_path / "r", fabric_kind="bigswitch", levels=2)
    on_disk = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert on_disk["levels"] == 2 and on_disk["fabric"].startswith("bigswitch")
    assert summary.source == scen.source and on_disk["sim_total_wall_s"] >= 0


def test_summary_only_writes_the_summary_alone(tmp_path):
    scen = load_scenario(SCENARIOS / "mechanism.yaml")
    simulate_scenario(scen, tmp_path / "r", summary_only=True)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["summary.json"]


LCFS = '''
from controller.policies import Decision, Policy, register


@register
class Lcfs(Policy):
    """Last-come first-served."""

    name = "test-folder-lcfs"
    compression = "top"

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision(rank=(-s.arrival_seq,)) for s in states}
'''


def test_a_simulated_folder_re_creates_its_run(tmp_path, monkeypatch):
    """The folder keeps the resolved scenario, versions.json and a copy of the plugin;
    simulating its scenario.yaml (from elsewhere, the original plugin gone) gives the
    same run."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "lcfs.py").write_text(LCFS)
    (src / "s.yaml").write_text(
        "plugins: [lcfs.py]\npolicy: test-folder-lcfs\nlevels: 4\n"
        "fabric: {spines: 2, leaves: 2, hosts_per_leaf: 4, host_bw_mbps: 80}\n"
        "workload: {job: tiny-moe}\n"
    )
    try:
        first = tmp_path / "first"
        simulate_scenario(load_scenario(src / "s.yaml"), first)
        assert {"scenario.yaml", "versions.json", "plugins"} <= {f.name for f in first.iterdir()}
        assert (first / "plugins" / "0_lcfs.py").read_text() == LCFS
        (src / "lcfs.py").unlink()
        policies.unregister("test-folder-lcfs")  # as in a new process: known from the copy
        monkeypatch.chdir(tmp_path)  # relative paths must not lean on the working directory
        again = tmp_path / "again"
        assert main(["simulate", str(first / "scenario.yaml"), "--out", str(again)]) == 0
        assert figures(again) == figures(first)
        assert (again / "coflows.csv").read_text() == (first / "coflows.csv").read_text()
    finally:
        if "test-folder-lcfs" in policies.names():
            policies.unregister("test-folder-lcfs")
