"""Several jobs in the flow-level simulator: jobs on disjoint leaves run exactly as
each alone; on shared leaves the inter-job rule moves each job's iteration time the way
its paper says (strict priority: the urgent job gains; Crux: the GPU-intense job gains
and the GPU utilisation sum W_j / T_j rises)."""

from __future__ import annotations

import json
from functools import cache

import pytest
import yaml

from coflowbed.experiment.binding import scenario_fabric, scenario_policy
from coflowbed.experiment.scenario import load_scenario
from coflowbed.sim import SimResult, simulate
from tests.data import SCENARIOS
from tests.unit.coflowbed.experiment.test_jobs import scenario

SHARED = SCENARIOS / "two-moe-shared.yaml"


def run(path, overrides=None) -> SimResult:
    """The scenario at ``path`` simulated on its fabric at its levels."""
    scen = load_scenario(path, overrides)
    return simulate(scen.dag, scenario_fabric(scen), scenario_policy(scen), scen.levels)


def job_times(result: SimResult) -> dict[str, float]:
    """{job: iteration time} (one iteration per job)."""
    return {it.job: it.time_s for it in result.iteration_records() if it.time_s is not None}


def cct(result: SimResult) -> dict[str, float]:
    """{coflow id: CCT}."""
    return {r.coflow_id: r.cct_s for r in result.coflow_records() if r.cct_s is not None}


@pytest.fixture
def disjoint(tmp_path):
    """(both jobs, a alone, b alone) on disjoint leaves, as scenario files."""
    both = scenario()
    paths = []
    for name, jobs in (("both", both["workload"]["jobs"]),) + tuple(
        (j["name"], [j]) for j in both["workload"]["jobs"]
    ):
        data = {**both, "workload": {"jobs": jobs}}
        p = tmp_path / f"{name}.yaml"
        p.write_text(yaml.safe_dump(data))
        paths.append(p)
    return paths


def test_jobs_on_disjoint_leaves_run_exactly_as_each_alone(disjoint):
    """No host, leaf or uplink in common, so every coflow's CCT and each job's
    iteration time are the alone ones (to float rounding, 1e-9)."""
    both, a, b = (run(p) for p in disjoint)
    assert cct(both) == pytest.approx({**cct(a), **cct(b)}, rel=1e-9)
    assert job_times(both) == pytest.approx({**job_times(a), **job_times(b)}, rel=1e-9)
    assert len(cct(both)) == len(both.sim.dag.coflows)


def test_a_late_job_runs_the_same_shifted_by_its_start(disjoint, tmp_path):
    """b starting at 0.5 s on its own leaves: each of its coflows arrives exactly 0.5 s
    later with the same CCT; its iteration time (from its first real node) is unchanged."""
    data = yaml.safe_load(disjoint[0].read_text())
    data["workload"]["jobs"][1]["start_s"] = 0.5
    late = tmp_path / "late.yaml"
    late.write_text(yaml.safe_dump(data))
    base, shifted = run(disjoint[0]), run(late)
    arrive = {r.coflow_id: r.arrival_s for r in base.coflow_records()}
    for r in shifted.coflow_records():
        extra = 0.5 if r.job == "b" else 0.0
        assert r.arrival_s == pytest.approx(arrive[r.coflow_id] + extra, abs=1e-9)
    assert cct(shifted) == pytest.approx(cct(base), rel=1e-9)
    assert job_times(shifted) == pytest.approx(job_times(base), rel=1e-9)


@cache
def shared_times(mode: str) -> dict[str, float]:
    """Per-job iteration time of the shipped two-job scenario under ``mode``."""
    return job_times(run(SHARED, {"workload.inter_job": mode}))


def test_strict_priority_speeds_up_the_urgent_job_at_the_others_cost():
    """a has priority 0: faster than under fair, b slower."""
    fair, prio = shared_times("fair"), shared_times("priority")
    assert prio["a"] < fair["a"] and prio["b"] > fair["b"]


def test_strict_priority_leaves_the_urgent_job_near_its_alone_time():
    """b only gets capacity a leaves idle; a's ranks now have 4 levels instead of 8,
    which reorders a little inside a: within 3% of a alone."""
    entry = yaml.safe_load(SHARED.read_text())["workload"]["jobs"][0]
    alone = job_times(run(SHARED, {"workload.jobs": [entry]}))["a"]
    assert shared_times("priority")["a"] == pytest.approx(alone, rel=0.03)


def test_crux_speeds_up_the_gpu_intense_job_and_raises_gpu_utilisation():
    """b has twice a's GPU intensity, so Crux puts it first: b faster than under fair,
    and sum_j W_j / T_j (W_b = 2 W_a) higher than under fair."""
    fair, crux = shared_times("fair"), shared_times("crux")
    assert crux["b"] < fair["b"]

    def utilisation(t: dict[str, float]) -> float:
        return 1.0 / t["a"] + 2.0 / t["b"]

    assert utilisation(crux) > utilisation(fair)


def test_results_carry_the_job_per_iteration_and_per_job_figures(disjoint, tmp_path):
    result = run(disjoint[0])
    summary = result.write(tmp_path / "out")
    header = (tmp_path / "out" / "iterations.csv").read_text().splitlines()[0]
    assert "job" in header.split(",")
    jobs = json.loads((tmp_path / "out" / "summary.json").read_text())["jobs"]
    assert summary.jobs is not None and sorted(jobs) == ["a", "b"]
    for job, t in job_times(result).items():
        assert jobs[job]["iteration_time_s"] == pytest.approx(t)
        mine = [r for r in result.coflow_records() if r.job == job]
        assert jobs[job]["coflows"] == len(mine) == len(result.sim.dag.coflows) // 2
        ep = [r.cct_s for r in mine if r.ctype == "EP"]
        assert jobs[job]["cct_by_type"]["EP"]["avg_s"] == pytest.approx(sum(ep) / len(ep))
