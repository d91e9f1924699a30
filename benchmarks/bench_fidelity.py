"""What the fidelity figure costs an emulated run (docs/simulator.md, "Fidelity of every
run"): for each shipped scenario (``coflowbed/scenarios/*.yaml``, or those named), the
reference simulation ``coflowbed.analysis.fidelity.measure`` runs after a run, timed on a run
folder written as the runner writes it (every coflow "measured" at 1 s at the level the
emulator would record).  No fabric.  Each scenario runs in its own child process: the
first measurement pays loading the compiled kernels, as the first run of a
``coflowbed run`` / ``compare`` process does; the second is warm.
Usage: ``.venv/bin/python benchmarks/bench_fidelity.py [SCENARIO.yaml ...]``
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def recorded_levels(scen) -> dict[str, int]:
    """The level per coflow a run of ``scen`` records for a static-level policy
    ({} for dynamic ones: their reference is the policy, not the levels)."""
    from controller import policies
    from controller.policies.base import FabricView
    from controller.scheduler import LiveScheduler

    if scen.policy == "static":
        return dict(scen.static_levels)
    policy = policies.get(scen.policy, **scen.policy_params)
    if not policy.ranks_by_identity:
        return {}
    view = FabricView.uniform(scen.plan.host_names(), scen.plan.host_bw_mbps * 1e6, scen.levels)
    return LiveScheduler(policy, view, scen.levels, all_coflows=scen.dag.coflows).fixed


def write_run(scen, run: Path) -> None:
    """A complete run folder of ``scen``: inputs, every coflow done in 1 s."""
    from coflowbed.experiment.folders import write_inputs
    from coflowbed.results.files import write_results
    from coflowbed.results.records import CoflowRecord, IterationRecord

    write_inputs(scen, run)
    levels, recs = recorded_levels(scen), []
    for cf in scen.dag.coflows:
        r = CoflowRecord.of(cf)
        r.arrival_s, r.level = cf.release_s, levels.get(cf.coflow_id)
        r.finish_s = cf.release_s + 1.0
        recs.append(r)
    its = sorted({cf.identity.iteration for cf in scen.dag.coflows})
    write_results(run, [], recs, [IterationRecord(i, 0.0, 1.0) for i in its], False)


def child(path: str) -> dict:
    """Measure one scenario in this process: cold, then warm."""
    from coflowbed.analysis import fidelity
    from coflowbed.experiment.scenario import load_scenario

    scen = load_scenario(path)
    with tempfile.TemporaryDirectory() as tmp:
        write_run(scen, Path(tmp))
        t0 = time.perf_counter()
        cold = fidelity.measure(Path(tmp), False)
        t1 = time.perf_counter()
        warm = fidelity.measure(Path(tmp), False)
        t2 = time.perf_counter()
    flows = sum(len(cf.flows) for cf in scen.dag.coflows)
    return {
        "scenario": Path(path).name,
        "policy": scen.policy,
        "reference": cold.reference,
        "coflows": len(scen.dag.coflows),
        "flows": flows,
        "computes": len(scen.dag.computes),
        "cold_sim_s": cold.sim_wall_s,
        "cold_total_s": round(t1 - t0, 3),
        "warm_sim_s": warm.sim_wall_s,
        "warm_total_s": round(t2 - t1, 3),
        "sim_avg_cct_s": cold.sim_avg_cct_s,
        "sim_iteration_s": cold.sim_iteration_time_s,
    }


def main(argv: list[str]) -> int:
    """One child per scenario; print a table."""
    if argv[:1] == ["--child"]:
        print(json.dumps(child(argv[1])))
        return 0
    paths = argv or sorted(str(p) for p in (REPO / "coflowbed" / "scenarios").glob("*.yaml"))
    print(
        f"{'scenario':<22} {'policy':<8} {'ref':<7} {'coflows':>7} {'flows':>6} "
        f"{'cold s':>7} {'warm s':>7} {'sim avg CCT':>11} {'sim iter':>9}"
    )
    for path in paths:
        res = subprocess.run(
            [sys.executable, __file__, "--child", path],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(
            f"{r['scenario']:<22} {r['policy']:<8} {r['reference']:<7} {r['coflows']:>7} "
            f"{r['flows']:>6} {r['cold_total_s']:>7.2f} {r['warm_total_s']:>7.2f} "
            f"{r['sim_avg_cct_s']:>11.3f} {r['sim_iteration_s']:>9.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
