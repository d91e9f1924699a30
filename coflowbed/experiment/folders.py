"""Run folders: ``results/<time>-<topo>-<workload>-<policy>/`` holding the resolved
inputs (``scenario.yaml``, ``dag.json``, ``fabric.json``) and the versions of what ran."""

from __future__ import annotations

import functools
import json
import platform
import re
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

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


PLUGINS_DIR = "plugins"  # a run folder's copies of the scenario's plugin files


def resolved_scenario(scen: Scenario) -> dict:
    """The scenario as run: the file's content plus every default made explicit, its
    workload files as absolute paths and its plugins as the run folder's copies, so
    ``coflowbed run|simulate <folder>/scenario.yaml`` runs it again."""
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
        out["plugins"] = [f"{PLUGINS_DIR}/{name}" for name in plugin_copies(scen)]
    if isinstance(out.get("workload"), dict) and Path(scen.source).is_file():
        out["workload"] = _absolute_files(out["workload"], Path(scen.source).parent)
    if scen.inter_job is not None:  # as run (compare's POLICY+MODE sets it)
        out["workload"] = {**out["workload"], "inter_job": scen.inter_job.mode}
    out["fabric"] = {
        k: v for k, v in scen.plan.to_dict().items() if k not in ("hosts", "switches", "links")
    }
    return out


def plugin_copies(scen: Scenario) -> dict[str, Path]:
    """Name in the run folder's ``plugins/`` -> the plugin file it copies (numbered, so
    two files of one name stay two)."""
    return {f"{i}_{Path(f).name}": Path(f) for i, f in enumerate(scen.plugins)}


def _absolute_files(workload: dict, base: Path) -> dict:
    """``workload`` with the files it names (a job file, a trace, an import, each job of
    ``jobs``) made absolute against ``base`` (preset names stay names)."""

    def fix(value: Any) -> Any:
        if isinstance(value, str) and (base / value).is_file():
            return str((base / value).resolve())
        return value

    out = dict(workload)
    for key in ("job", "import"):
        if key in out:
            out[key] = fix(out[key])
    if isinstance(out.get("trace"), dict) and "path" in out["trace"]:
        out["trace"] = {**out["trace"], "path": fix(out["trace"]["path"])}
    if isinstance(out.get("jobs"), list):
        out["jobs"] = [
            {**j, "job": fix(j["job"])} if isinstance(j, dict) and "job" in j else j
            for j in out["jobs"]
        ]
    return out


def versions() -> dict:
    """Versions of what ran: python, packages, OVS (and the datapath it can use),
    kernel, git commit (asked once per process: a sweep writes them for every run)."""
    return dict(_versions())


@functools.cache
def _versions() -> dict:
    """``versions``, computed (three subprocesses and package metadata)."""
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


def write_scenario(scen: Scenario, out_dir: Path) -> None:
    """What re-creates a run: the resolved ``scenario.yaml``, a copy of every plugin file
    it uses (``plugins/``) and ``versions.json``; emulated and simulated runs alike."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scenario.yaml").write_text(yaml.safe_dump(resolved_scenario(scen), sort_keys=False))
    for name, src in plugin_copies(scen).items():
        (out_dir / PLUGINS_DIR).mkdir(exist_ok=True)
        shutil.copyfile(src, out_dir / PLUGINS_DIR / name)
    (out_dir / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")


def write_inputs(scen: Scenario, out_dir: Path) -> None:
    """An emulated run's inputs: ``write_scenario``'s files, the DAG and the fabric plan."""
    write_scenario(scen, out_dir)
    dagjson.dump(scen.dag, out_dir / "dag.json")
    (out_dir / "fabric.json").write_text(json.dumps(fabric_record(scen), indent=1))
    if scen.inter_job is not None:  # the jobs' classes, for the fidelity replay
        (out_dir / INTER_JOB_FILE).write_text(json.dumps(scen.inter_job.to_wire(), indent=1))
