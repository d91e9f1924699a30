"""Per-job iteration times of a multi-job scenario in the flow-level simulator
(docs/scenarios.md, "Several jobs"): each job alone on the fabric, then all jobs under
every inter-job rule (fair, priority, crux), with Crux's GPU intensity per job and the
GPU utilisation figure sum_j W_j / T_j (GPU-seconds of work per iteration over the
iteration time) that Crux maximises.  No fabric is started.
Usage: ``.venv/bin/python benchmarks/bench_multijob.py [SCENARIO.yaml]``
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT = REPO / "coflowbed" / "scenarios" / "two-moe-shared.yaml"


def job_times(path: Path, overrides: dict) -> dict[str, float]:
    """{job: mean simulated iteration time} of the scenario with ``overrides``."""
    from coflowbed.experiment.binding import scenario_fabric, scenario_policy
    from coflowbed.experiment.scenario import load_scenario
    from coflowbed.sim import simulate

    scen = load_scenario(path, overrides)
    result = simulate(scen.dag, scenario_fabric(scen), scenario_policy(scen), scen.levels)
    times: dict[str, list[float]] = {}
    for it in result.iteration_records():
        if it.time_s is not None:
            times.setdefault(it.job, []).append(it.time_s)
    return {job: sum(v) / len(v) for job, v in times.items()}


def work(path: Path) -> dict[str, float]:
    """GPU-seconds of compute per iteration of each job (Crux's W_j)."""
    from coflowbed.experiment.scenario import load_scenario

    scen = load_scenario(path)
    out: dict[str, float] = {}
    for c in scen.dag.computes:
        if c.iteration >= 0:
            out[c.job] = out.get(c.job, 0.0) + c.duration_s
    return out


def main(path: Path) -> None:
    """Print the table."""
    from coflowbed.core.config import load_yaml
    from coflowbed.experiment.scenario import load_scenario

    entries = load_yaml(path)["workload"]["jobs"]
    classes = load_scenario(path).inter_job
    assert classes is not None, f"{path} has no workload.jobs"
    w = work(path)
    print(f"scenario {path.name}")
    for jc in classes.jobs:
        print(f"  job {jc.name}: GPU intensity {jc.intensity:.4g}, priority {jc.priority}")
    for entry in entries:
        alone = job_times(path, {"workload.jobs": [entry]})
        for job, t in alone.items():
            print(f"alone     job {job}: iteration {t:.3f} s")
    for mode in ("fair", "priority", "crux"):
        times = job_times(path, {"workload.inter_job": mode})
        util = sum(w[j] / t for j, t in times.items())
        cells = ", ".join(f"{j} {t:.3f} s" for j, t in sorted(times.items()))
        print(f"{mode:9s} {cells}; GPU utilisation sum W/T {util:.4f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
