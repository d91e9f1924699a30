"""Several jobs on the emulated fabric (root, under ``flock /tmp/coflowbed-fabric.lock``):

    flock /tmp/coflowbed-fabric.lock .venv/bin/python -m pytest \\
        tests/integration/test_multijob_emulated.py

- Two jobs on disjoint leaves (no host, leaf or uplink in common) behave as each alone:
  each job's iteration time within 10 % of its time alone.  Noise: repeated small-moe
  runs on this fabric spread over ~5 % (coflowbed/scenarios/small-moe.yaml), and two
  jobs' agents share the machine's 2 cores.  Measured (2026-12-01): a 8.061 s with b
  against 7.693 s alone (+4.8 %), b 9.355 s against 9.289 s (+0.7 %).
- Two jobs on shared leaves (coflowbed/scenarios/two-moe-shared.yaml) move the way the
  inter-job rule's paper says.  Simulated (docs/scenarios.md): under strict priority job
  a takes 0.67 of its fair time, under Crux job b 0.70 of its fair time.  We require
  0.85 (15 % gain), leaving room for the noise and for the emulated/simulated ratios of
  1.0-1.14 measured on this oversubscribed fabric (measured 0.56-0.65 and 0.69-0.73 in
  three runs each).  Under priority the other job must not gain beyond noise (5 %).  Crux
  claims higher GPU utilisation, sum_j W_j / T_j (W_b = 2 W_a), not that a loses: a's
  time under Crux was 13.74 s against fair's 13.82 s in one run, 15.26-15.27 against
  13.40-13.53 s in the two others.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli import SCENARIOS, coflowbed_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]
SHARED = SCENARIOS / "two-moe-shared.yaml"


def run(scenario: Path, out: Path, *flags: str) -> dict[str, float]:
    """``coflowbed run``; {job: iteration time} of the complete run."""
    coflowbed_ok("-q", "run", scenario, "--out", out, *flags, timeout=900)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is False
    if summary.get("jobs") is None:  # one job
        return {"only": summary["iteration_time_s"]}
    return {job: b["iteration_time_s"] for job, b in summary["jobs"].items()}


def disjoint(tmp: Path, jobs: list[int]) -> Path:
    """The shipped scenario with a on leaves 1-2 and b on 3-4, keeping ``jobs``."""
    data = yaml.safe_load(SHARED.read_text())
    entries = data["workload"]["jobs"]
    for entry, leaves in zip(entries, ([1, 2], [3, 4])):
        entry.pop("hosts")
        entry["leaves"] = leaves
    data["workload"]["jobs"] = [entries[i] for i in jobs]
    path = tmp / f"disjoint-{'-'.join(map(str, jobs))}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_jobs_on_disjoint_leaves_run_as_each_alone(tmp_path):
    both = run(disjoint(tmp_path, [0, 1]), tmp_path / "both")
    for i, job in enumerate("ab"):
        alone = run(disjoint(tmp_path, [i]), tmp_path / job)["only"]
        assert both[job] == pytest.approx(alone, rel=0.10), (job, both[job], alone)


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> dict[str, dict[str, float]]:
    tmp = tmp_path_factory.mktemp("shared")
    return {m: run(SHARED, tmp / m, "--inter-job", m) for m in ("fair", "priority", "crux")}


def test_strict_priority_speeds_up_the_urgent_job(shared):
    fair, prio = shared["fair"], shared["priority"]
    assert prio["a"] < 0.85 * fair["a"] and prio["b"] > 0.95 * fair["b"], (fair, prio)


def test_crux_speeds_up_the_gpu_intense_job(shared):
    fair, crux = shared["fair"], shared["crux"]

    def utilisation(t: dict[str, float]) -> float:
        return 1.0 / t["a"] + 2.0 / t["b"]

    assert crux["b"] < 0.85 * fair["b"], (fair, crux)
    assert utilisation(crux) > utilisation(fair), (fair, crux)
