"""Grid expansion: every (grid point, policy, seed) of a sweep as a ``RunSpec``, the
typed unit of work that crosses to a worker process or a Ray task."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from coflowbed.studies.sweep.spec import SweepSpec

OVERRIDES = "workload.overrides."  # below this, the rest of the key is one job override


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its grid values, policy and seed, the resolved scenario
    (YAML text, relative paths against ``scenario_path``) and where its result goes."""

    run_id: str
    point: tuple[tuple[str, Any], ...]
    policy: str
    seed: int
    scenario_yaml: str
    scenario_path: Path
    mode: str
    results: str
    out_dir: Path
    wall_limit_s: float | None = None
    packet: tuple[str, float] = ("tcp", 1.0)  # mode packet: (transport, scale)

    @property
    def fingerprint(self) -> str:
        """Hash of everything that decides the run's result (not where it is written)."""
        parts = [self.scenario_yaml, self.mode, self.results, self.wall_limit_s]
        key = json.dumps(parts + ([list(self.packet)] if self.mode == "packet" else []))
        return hashlib.sha256(key.encode()).hexdigest()[:16]


def points(spec: SweepSpec) -> list[tuple[tuple[str, Any], ...]]:
    """The grid's points in file order (the last key varies fastest)."""
    values = [vals for _, vals in spec.grid]
    return [tuple(zip(spec.keys, combo)) for combo in itertools.product(*values)]


def expand(spec: SweepSpec, out_dir: Path) -> list[RunSpec]:
    """Every run of the sweep: points x policies x seeds, runs under ``out_dir/runs``."""
    runs = []
    for point in points(spec):
        for policy in spec.policies:
            for seed in spec.seeds:
                raw = resolved(spec.scenario, point, policy, seed)
                rid = run_id(point, policy, seed)
                runs.append(
                    RunSpec(
                        rid,
                        point,
                        policy,
                        seed,
                        yaml.safe_dump(raw, sort_keys=False),
                        spec.scenario_path,
                        spec.mode,
                        spec.results,
                        out_dir / "runs" / rid,
                        spec.wall_limit_s,
                        spec.packet,
                    )
                )
    return runs


def resolved(base: dict, point: tuple[tuple[str, Any], ...], policy: str, seed: int) -> dict:
    """The base scenario with the point's keys set, the policy and the seed (also the
    job's EP-skew seed when the workload is an LLM job)."""
    raw = copy.deepcopy(base)
    for key, value in point:
        set_key(raw, key, value)
    raw["policy"], raw["seed"] = policy, seed
    workload = raw.get("workload")
    if isinstance(workload, dict) and "job" in workload:
        set_key(raw, OVERRIDES + "ep_skew.seed", seed)
    return raw


def set_key(raw: dict, dotted: str, value: Any) -> None:
    """Set a dotted key in a scenario mapping; under ``workload.overrides`` the rest is
    one dotted job override (applied last, so it wins over the file's own)."""
    if dotted.startswith(OVERRIDES):
        overrides = _node(raw, OVERRIDES.rstrip(".").split("."))
        rest = dotted.removeprefix(OVERRIDES)
        overrides.pop(rest, None)
        overrides[rest] = copy.deepcopy(value)
        return
    *parents, last = dotted.split(".")
    _node(raw, parents)[last] = copy.deepcopy(value)


def _node(raw: dict, parts: list[str]) -> dict:
    """The mapping at ``parts`` (created where missing; a non-mapping is replaced: the
    scenario's validation then names what is wrong)."""
    node = raw
    for part in parts:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    return node


def run_id(point: tuple[tuple[str, Any], ...], policy: str, seed: int) -> str:
    """A folder name: ``<key>-<value>_..._<policy>_s<seed>`` (last part of each key),
    with a short hash of the full point when that would be long or ambiguous."""
    parts = [f"{k.rsplit('.', 1)[-1]}-{_slug(v)}" for k, v in point]
    text = "_".join([*parts, policy, f"s{seed}"])
    if len(text) > 100 or len({k.rsplit(".", 1)[-1] for k, _ in point}) < len(point):
        digest = hashlib.sha256(repr(point).encode()).hexdigest()[:8]
        text = f"p{digest}_{policy}_s{seed}"
    return text


def _slug(value: Any) -> str:
    """A value as a folder-name fragment."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return re.sub(r"[^A-Za-z0-9.+-]+", "", text) or "x"
