"""Run folders: ``results/<time>-<topo>-<workload>-<policy>/`` holding the resolved
inputs (``scenario.yaml``, ``dag.json``, ``fabric.json``) and the versions of what ran."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import time
from importlib import metadata
from pathlib import Path

import yaml

from coflowbed.experiment.scenario import Scenario
from topo.ovs import detect_datapath
from workload import dagjson

REPO = Path(__file__).resolve().parents[2]


def stamped_name(*parts: str, now: float | None = None) -> str:
    """``<YYYYmmdd-HHMMSS>-<part>-<part>...``, filesystem-safe: the name of every results
    folder (a run, a simulation, a comparison, a sweep)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return re.sub(r"[^A-Za-z0-9._-]", "_", "-".join([stamp, *parts]))


def run_dir_name(scen: Scenario, policy: str | None = None, now: float | None = None) -> str:
    """An emulated run's folder: ``<time>-<S>s<L>l<H>h-<scenario>-<policy>``."""
    p = scen.plan
    topo = f"{p.spines}s{p.leaves}l{p.hosts_per_leaf}h"
    return stamped_name(topo, scen.name, policy or scen.policy, now=now)


def folder_path(base: Path, *parts: str) -> Path:
    """A results folder under ``base`` named ``stamped_name(*parts)`` (suffix -2, -3...
    if that exists), not yet created: the writer makes it when there is something to
    write."""
    name = stamped_name(*parts)
    for i in range(1, 1000):
        d = Path(base) / (name if i == 1 else f"{name}-{i}")
        if not d.exists():
            return d
    raise RuntimeError(f"cannot name a results folder under {base}")


def new_run_dir(base: Path, scen: Scenario, policy: str | None = None) -> Path:
    """Create a fresh emulated run's folder under ``base`` (suffix -2, -3... if the name
    exists; created at once, so two runs never share one)."""
    name = run_dir_name(scen, policy)
    for i in range(1, 1000):
        d = Path(base) / (name if i == 1 else f"{name}-{i}")
        try:
            d.mkdir(parents=True)
            return d
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a run folder under {base}")


def resolved_scenario(scen: Scenario) -> dict:
    """The scenario as run: the file's content plus every default made explicit."""
    out = dict(scen.raw)
    out.update(
        name=scen.name,
        levels=scen.levels,
        queue_packets=scen.queue_packets,
        switch=scen.switch,
        seed=scen.seed,
        timeout_s=scen.timeout_s,
        policy_rates=scen.policy_rates,
        sample_period_s=scen.sample_period_s,
        policy={"name": scen.policy, "params": scen.policy_params},
    )
    if scen.plugins:
        out["plugins"] = scen.plugins  # absolute: the run folder is elsewhere
    if scen.inter_job is not None:  # as run (compare's POLICY+MODE sets it)
        out["workload"] = {**out["workload"], "inter_job": scen.inter_job.mode}
    out["fabric"] = {
        k: v for k, v in scen.plan.to_dict().items() if k not in ("hosts", "switches", "links")
    }
    return out


def versions() -> dict:
    """Versions of what ran: python, packages, OVS (and the datapath it can use),
    kernel, git commit."""
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "kernel": platform.release(),
    }
    for pkg in ("os-ken", "mininet", "numpy", "scipy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    out["ovs"] = _cmd_first_line(["ovs-vswitchd", "--version"])
    out["ovs_datapath"] = detect_datapath()  # system (kernel module) or netdev
    out["git"] = _cmd_first_line(["git", "-C", str(REPO), "describe", "--always", "--dirty"])
    return out


def _cmd_first_line(argv: list[str]) -> str | None:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = res.stdout.strip().splitlines()
    return lines[0] if res.returncode == 0 and lines else None


def fabric_record(scen: Scenario) -> dict:
    """fabric.json: the plan (MTU included) and, on OVS, the bridges' datapath."""
    out = scen.plan.to_dict()
    if scen.switch == "ovs":
        out["datapath"] = detect_datapath()
    return out


INTER_JOB_FILE = "inter_job.json"  # several jobs: the InterJobSpec the run used


def write_inputs(scen: Scenario, out_dir: Path) -> None:
    """Write the resolved scenario, the DAG, the fabric plan and versions."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scenario.yaml").write_text(yaml.safe_dump(resolved_scenario(scen), sort_keys=False))
    dagjson.dump(scen.dag, out_dir / "dag.json")
    (out_dir / "fabric.json").write_text(json.dumps(fabric_record(scen), indent=1))
    (out_dir / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")
    if scen.inter_job is not None:  # the jobs' classes, for the fidelity replay
        (out_dir / INTER_JOB_FILE).write_text(json.dumps(scen.inter_job.to_wire(), indent=1))
