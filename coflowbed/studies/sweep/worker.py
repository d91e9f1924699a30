"""One run of a sweep, in whatever process executes it (pool worker, Ray task, or the
sweep's own for emulated runs): RunSpec in, SweepResult out.  A run is written into
``<out>.part`` and renamed into place when done, so a folder with ``result.json`` is a
finished run and an interrupted one leaves no half-written result behind."""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from coflowbed.experiment.scenario import scenario_from_raw
from coflowbed.experiment.simulate import FLUID, Engine, simulate_scenario
from coflowbed.results.records import RunSummary
from coflowbed.studies.single import emulate
from coflowbed.studies.sweep.grid import RunSpec

RESULT_FILE = "result.json"
INTERRUPTED = ("Interrupted", "KeyboardInterrupt")  # how runner.py names a stopped run


@dataclass(frozen=True)
class SweepResult:
    """What a run measured (None where it has no figure), as it crosses back."""

    run_id: str
    fingerprint: str
    partial: bool
    coflows: int
    iteration_time_s: float | None
    avg_cct_s: float | None
    p95_cct_s: float | None
    cct_by_type: tuple[tuple[str, float | None], ...]
    wall_s: float
    fidelity_iter: float | None = None
    fidelity_cct_p50: float | None = None
    error: str | None = None

    def to_json(self) -> dict:
        """JSON-ready mapping."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SweepResult:
        """Inverse of ``to_json``."""
        by_type = tuple((str(t), v) for t, v in data["cct_by_type"])
        return cls(**{**data, "cct_by_type": by_type})


def execute(spec: RunSpec) -> SweepResult:
    """Run ``spec`` (simulated or emulated) into its folder; its result."""
    part = spec.out_dir.with_name(spec.out_dir.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    t0 = time.perf_counter()
    summary = _run(spec, part)
    result = result_of(spec, summary, time.perf_counter() - t0)
    (part / RESULT_FILE).write_text(json.dumps(result.to_json(), indent=1) + "\n")
    shutil.rmtree(spec.out_dir, ignore_errors=True)
    part.rename(spec.out_dir)
    if (summary.error or "").startswith(INTERRUPTED):  # an emulated run caught Ctrl-C
        raise KeyboardInterrupt(spec.run_id)
    return result


def _run(spec: RunSpec, out: Path) -> RunSummary:
    """The run itself; its summary."""
    scen = scenario_from_raw(yaml.safe_load(spec.scenario_yaml), spec.scenario_path, spec.run_id)
    out.mkdir(parents=True)
    (out / "scenario.yaml").write_text(spec.scenario_yaml)
    if spec.mode == "emulate":
        return emulate(scen, out).summary
    limit = spec.wall_limit_s or math.inf
    engine = Engine("packet", *spec.packet) if spec.mode == "packet" else FLUID
    return simulate_scenario(
        scen, out, wall_limit_s=limit, summary_only=spec.results != "full", engine=engine
    )


def result_of(spec: RunSpec, s: RunSummary, wall_s: float) -> SweepResult:
    """The sweep's figures of one run's summary."""
    fid = s.fidelity or {}
    return SweepResult(
        spec.run_id,
        spec.fingerprint,
        s.partial,
        s.coflows,
        s.iteration_time_s,
        s.avg_cct_s,
        s.p95_cct_s,
        tuple((t, st.avg_s) for t, st in sorted(s.cct_by_type.items())),
        round(wall_s, 3),
        fid.get("iteration_ratio"),
        fid.get("cct_ratio_p50"),
    )


def failed(spec: RunSpec, error: BaseException, wall_s: float = 0.0) -> SweepResult:
    """The result of a run that raised ``error`` (recorded, and the sweep is partial)."""
    return SweepResult(
        spec.run_id,
        spec.fingerprint,
        True,
        0,
        None,
        None,
        None,
        (),
        wall_s,
        error=f"{type(error).__name__}: {error}",
    )


def finished(spec: RunSpec) -> SweepResult | None:
    """The stored result of ``spec`` when it is complete and of the same inputs."""
    file = spec.out_dir / RESULT_FILE
    if not file.is_file():
        return None
    result = SweepResult.from_json(json.loads(file.read_text()))
    ok = result.fingerprint == spec.fingerprint and not result.partial
    return result if ok else None
