"""The emulator against its own model: an emulated run's DAG simulated on the run's
fabric, and the measured / simulated ratios (``summary.json`` ``fidelity``, ``fidelity.csv``,
``coflowbed check``).  See docs/simulator.md, "Fidelity of every run".

Which simulation is the reference (``reference``):

- ``levels``: policies whose levels are fixed for the whole DAG (``static`` and every
  policy with ``ranks_by_identity = True``: fair, Hermod, Lina, ByteScheduler, the
  X-first rules).
  The run's levels are the levels, so each coflow is simulated at the level ``coflows.csv``
  recorded (``StaticPolicy``), with the scenario's ``rate_mbps`` meters under ``static``.
  Re-running such a policy in the simulator would compress the ranks of the *active*
  coflows at each decision, not the whole DAG's once as the emulator does.
- ``policy``: dynamic policies (FIFO, SEBF, D-CLAS, Sincronia, user policies) re-rank
  while the run goes, and a coflow's last level says nothing about its earlier ones: the
  same policy (name and parameters) decides in the simulator, its ranks compressed onto
  the run's K levels, and its per-flow rates enforced as the emulator enforces them
  (``policy_rates``: meters or pacing, both hard caps; a rate of 0 installs no cap).

Each figure comes twice: against the model without a control delay (``iteration_ratio``)
and against the model with the delay the run measured (``iteration_ratio_with_delay``:
``measured_delay``, from summary.json's ``release`` and ``level_change_s``), which the
reference policy pays unless its levels are fixed for the DAG (``coflowbed.sim.control``).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from coflowbed.analysis import placement
from coflowbed.analysis.placement import LinkBytes
from coflowbed.core.config import load_yaml
from coflowbed.core.errors import UserError
from coflowbed.experiment.binding import SimInputs, make_policy, plan_fabric
from coflowbed.experiment.faults import recorded_sim_faults
from coflowbed.experiment.folders import INTER_JOB_FILE
from coflowbed.experiment.simulate import run_model
from coflowbed.results.files import read_csv_rows
from coflowbed.results.records import RunSummary, mean, percentile
from coflowbed.sim import (
    MAX_CONTROL_DELAY_S,
    NO_DELAY,
    ControlDelay,
    LeafSpine,
    LinkFault,
    SimResult,
    pays_control_delay,
)
from controller.policies.base import CoflowState, Decision, FabricView, Policy, TableDecision
from controller.policies.interjob import InterJobPolicy, InterJobSpec
from controller.policies.static import StaticPolicy
from topo.plan import FabricPlan
from workload import dagjson
from workload.dag import DEFAULT_JOB, Coflow
from workload.marking import MAX_LEVELS

log = logging.getLogger("fidelity")

LEVELS, POLICY, AUTO = "levels", "policy", "auto"
WALL_LIMIT_S = 300.0  # a fidelity simulation taking longer is reported as an error
MIN_CAP_BPS = 500.0  # the emulator installs no cap below 0.5 kbit/s (rounds to 0 Mbit/s)
TABLE = "fidelity.csv"


@dataclass(frozen=True)
class RunInputs:
    """What the fidelity simulation needs from a run's resolved scenario."""

    plan: FabricPlan
    levels: int
    policy: str
    params: dict
    policy_rates: str = "meters"
    meters_bps: Mapping[str, float] | None = None  # scenario rate_mbps per coflow (static)
    faults: Sequence[LinkFault] = ()  # links down as the run's faults.csv recorded them
    inter_job: InterJobSpec | None = None  # several jobs: the run's inter_job.json


@dataclass(frozen=True)
class CoflowComparison:
    """One coflow: the level the run recorded, measured and simulated CCT, their ratio."""

    coflow_id: str
    level: int | None
    measured_cct_s: float | None
    simulated_cct_s: float | None
    ratio: float | None
    ctype: str | None = None  # EP, PP, DP, TP or OTHER, as coflows.csv recorded it


@dataclass(frozen=True)
class _Block:
    """A ``fidelity`` block of summary.json."""

    def to_json(self) -> dict:
        """The block as written to summary.json."""
        return asdict(self)


@dataclass(frozen=True)
class Fidelity(_Block):
    """``summary.json`` ``fidelity``: emulated / simulated figures of one run.  In a
    partial run (``partial``) they cover the coflows and iterations that finished."""

    reference: str  # "levels" | "policy" (module docstring)
    sim_policy: str  # the policy simulated ("static": the recorded levels)
    levels: int
    rate_caps: str  # "none" | "meters" | "pacing": how rates were capped in the model
    model: str  # the fabric model simulated
    partial: bool
    coflows_compared: int
    coflows_total: int
    iteration_ratio: float | None  # emulated / simulated mean iteration time
    cct_ratio_p50: float | None  # of the per-coflow measured / simulated CCTs
    cct_ratio_p90: float | None
    sim_iteration_time_s: float | None
    sim_avg_cct_s: float | None  # over the compared coflows
    sim_wall_s: float
    # multi-job runs: per job, emulated / simulated mean iteration time ({} for one job)
    job_iteration_ratio: Mapping[str, float | None] = field(default_factory=dict)
    # per coflow type: summed measured / summed simulated CCT of the compared coflows
    cct_sum_ratio_by_type: Mapping[str, float | None] = field(default_factory=dict)
    # [smallest, largest] over the leaf-spine links of the bytes their switch ports sent
    # / the payload the model places on them (coflowbed.analysis.placement; None: not checked)
    spine_link_ratio: tuple[float, float] | None = None
    # The control delay the run measured (``measured_delay``: release_s, rerank_s; None
    # when it made no controller round trip: levels fixed for the DAG), and the
    # iteration against the model with it (the same as without it under ``levels``)
    control_delay: Mapping[str, float] | None = None
    iteration_ratio_with_delay: float | None = None
    sim_iteration_time_with_delay_s: float | None = None


@dataclass(frozen=True)
class FidelitySkipped(_Block):
    """No fidelity figure, and why (the caller did not ask for it, no coflow finished)."""

    skipped: str


@dataclass(frozen=True)
class FidelityError(_Block):
    """The fidelity simulation failed; the run's own results stand."""

    error: str


FidelityBlock = Fidelity | FidelitySkipped | FidelityError


@dataclass
class Replay:
    """A reference simulation of a run: which reference, the policy simulated, its result
    and its wall time."""

    reference: str
    policy: Policy
    result: SimResult
    wall_s: float


class EmulatedRates(Policy):
    """``inner`` with its per-flow rates enforced as on the emulated fabric: a rate is a
    hard cap (a meter or the sender's pacing rate, ``policy_rates``), and a rate of 0
    ("wait") installs no cap, so its level alone keeps the flow behind.  Decides as
    ``inner`` in every other respect (ranks, thresholds, held rates, compression)."""

    rates_are_limits = True

    def __init__(self, inner: Policy) -> None:
        """Wrap ``inner``; mirror the attributes the simulator reads."""
        super().__init__()
        self.inner, self.name, self.saw_rates = inner, inner.name, False
        for attr in ("clairvoyant", "hold_rates", "byte_thresholds", "compression"):
            setattr(self, attr, getattr(inner, attr))

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """``inner``'s decisions with rates too small to install dropped."""
        return {
            cid: Decision(d.rank, self._caps(d.flow_rates_bps))
            for cid, d in self.inner.decide(states, fabric, now).items()
        }

    def decide_table(
        self, table, ids: Sequence[str], seq: np.ndarray, now: float
    ) -> TableDecision | None:
        """``inner``'s vectorised decision with uninstalled rates made infinite."""
        got = self.inner.decide_table(table, ids, seq, now)
        if got is None or got.flow_rates_bps is None:
            return got
        self.saw_rates = True
        rates = np.asarray(got.flow_rates_bps, dtype=float)
        return TableDecision(got.ranks, np.where(rates > MIN_CAP_BPS, rates, np.inf))

    def _caps(self, rates: Mapping[str, float] | None) -> dict[str, float] | None:
        """The rates the emulator would install (the others are no cap)."""
        if not rates:
            return None
        self.saw_rates = True
        return {fid: bps for fid, bps in rates.items() if bps > MIN_CAP_BPS} or None


# --- a run folder's inputs -------------------------------------------------------------


def need(path: Path) -> Path:
    """``path`` if it exists, else UserError naming it."""
    if not path.exists():
        raise UserError(str(path), None, "missing: not an emulated run folder?")
    return path


def read_inputs(run_dir: Path) -> RunInputs:
    """The run's fabric, K, policy and rate settings from its resolved inputs."""
    scen = load_yaml(need(run_dir / "scenario.yaml"))
    if not isinstance(scen, dict):
        raise UserError(str(run_dir / "scenario.yaml"), None, "must be a mapping")
    name, params = _policy_spec(scen.get("policy", "static"))
    plan = _read_plan(run_dir, scen)
    return RunInputs(
        plan,
        int(scen.get("levels", MAX_LEVELS)),
        name,
        params,
        scen.get("policy_rates", "meters"),
        _meters_bps(scen),
        tuple(recorded_sim_faults(run_dir, plan)),
        _inter_job(run_dir),
    )


def _inter_job(run_dir: Path) -> InterJobSpec | None:
    """The run's inter-job rule and jobs (None for one job); UserError if unreadable."""
    path = run_dir / INTER_JOB_FILE
    if not path.exists():
        return None
    try:
        return InterJobSpec.from_wire(json.loads(path.read_text()))
    except (ValueError, TypeError) as exc:
        raise UserError(str(path), None, str(exc)) from None


def _read_plan(run_dir: Path, scen: dict):
    """The FabricPlan of ``fabric.json`` (else the scenario's fabric section)."""
    try:
        fabric = (
            json.loads((run_dir / "fabric.json").read_text())
            if (run_dir / "fabric.json").exists()
            else dict(scen["fabric"])
        )
        fabric.setdefault("fabric_bw_mbps", fabric.get("host_bw_mbps"))  # loader's default
        return FabricPlan.from_dict(fabric)
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(str(run_dir / "scenario.yaml"), "fabric", f"unusable: {exc}") from None


def _policy_spec(spec) -> tuple[str, dict]:
    """(name, params) of a resolved ``policy`` (a name or ``{name, params}``)."""
    if isinstance(spec, dict):
        return str(spec.get("name", "static")), dict(spec.get("params") or {})
    return str(spec), {}


def _meters_bps(scen: dict) -> dict[str, float]:
    """Each listed coflow's ``rate_mbps`` in bit/s (ids as the scenario loader makes them)."""
    items = (scen.get("workload") or {}).get("coflows") or []
    return {
        str(c.get("id", f"c{i + 1}")): float(c["rate_mbps"]) * 1e6
        for i, c in enumerate(items)
        if isinstance(c, dict) and c.get("rate_mbps")
    }


def read_dag(run_dir: Path):
    """The coflows the run executed (``dag.json``)."""
    try:
        return dagjson.load(need(run_dir / "dag.json"))
    except ValueError as exc:
        raise UserError(str(run_dir / "dag.json"), None, str(exc)) from None


def read_measured(run_dir: Path) -> dict[str, dict]:
    """``coflows.csv`` rows by coflow id."""
    return {r["coflow_id"]: r for r in read_csv_rows(need(run_dir / "coflows.csv"))}


def used_levels(measured: Mapping[str, dict]) -> dict[str, int]:
    """The (last) level the run recorded per coflow."""
    return {cid: int(r["level"]) for cid, r in measured.items() if r.get("level") is not None}


# --- the reference simulation ------------------------------------------------------------


def run_policy(inputs: RunInputs) -> Policy | None:
    """The run's registered policy object (None under ``static``: the replay takes the
    recorded levels and the scenario's meters, ``levels_policy``)."""
    if inputs.policy == "static":
        return None
    policy = make_policy(inputs.policy, inputs.params, "scenario.yaml")
    return policy if inputs.inter_job is None else InterJobPolicy(policy, inputs.inter_job)


def levels_policy(inputs: RunInputs, used: Mapping[str, int]) -> Policy:
    """``StaticPolicy`` at the recorded levels; meters only where the run had them
    (``static``: other policies' levels carry no rate)."""
    meters = inputs.meters_bps if inputs.policy == "static" else {}
    return StaticPolicy(used, inputs.levels - 1, meters)


def reference_of(policy: Policy | None) -> str:
    """``levels`` for static-level policies, ``policy`` for dynamic ones."""
    return LEVELS if policy is None or policy.ranks_by_identity else POLICY


def reference_policy(
    inputs: RunInputs, used: Mapping[str, int], reference: str = AUTO
) -> tuple[str, Policy]:
    """(reference, the policy to simulate): ``auto`` picks by the run's policy."""
    policy = run_policy(inputs)
    if reference == AUTO:
        reference = reference_of(policy)
    if reference == LEVELS or policy is None:  # ``static`` has only its levels to replay
        return LEVELS, levels_policy(inputs, used)
    return POLICY, EmulatedRates(policy)


def replay(
    inputs: RunInputs,
    dag,
    used: Mapping[str, int],
    reference: str = AUTO,
    fabric_kind: str = "leafspine",
    wall_limit_s: float = math.inf,
    control_delay: ControlDelay = NO_DELAY,
) -> Replay:
    """Simulate ``dag`` on the run's fabric and K levels with the reference policy (and
    ``control_delay``, which only a dynamic policy pays)."""
    kind, policy = reference_policy(inputs, used, reference)
    fabric = plan_fabric(inputs.plan, fabric_kind)
    t0 = time.perf_counter()
    faults = inputs.faults if isinstance(fabric, LeafSpine) else ()  # a big switch: no spines
    bound = SimInputs(dag, fabric, policy, inputs.levels, tuple(faults), control_delay)
    result = run_model(bound, wall_limit_s=wall_limit_s)
    return Replay(kind, policy, result, time.perf_counter() - t0)


def check_run(run_dir: Path, fabric_kind: str = "leafspine") -> list[CoflowComparison]:
    """Per coflow of an emulated run: its level, measured and simulated CCT and their
    ratio, the model run at the levels the run recorded (reference ``levels``; the
    ``coflowbed check`` table)."""
    inputs, measured = read_inputs(run_dir), read_measured(run_dir)
    used = used_levels(measured)
    rp = replay(inputs, read_dag(run_dir), used, LEVELS, fabric_kind)
    return compare_coflows(rp.result, measured, used)


def compare_coflows(
    result, measured: Mapping[str, dict], used: Mapping[str, int]
) -> list[CoflowComparison]:
    """Per simulated coflow: recorded level, measured and simulated CCT, their ratio."""
    rows = []
    for rec in result.coflow_records():
        row = measured.get(rec.coflow_id, {})
        cct_m, cct_s = row.get("cct_s"), rec.cct_s
        ratio = cct_m / cct_s if cct_m is not None and cct_s else None
        level = used.get(rec.coflow_id)
        rows.append(CoflowComparison(rec.coflow_id, level, cct_m, cct_s, ratio, row.get("ctype")))
    return rows


def sum_ratios_by_type(rows: Sequence[CoflowComparison]) -> dict[str, float | None]:
    """Per coflow type: summed measured / summed simulated CCT of the coflows compared
    (None if their simulated CCTs sum to 0).  The iteration's ratio can hide one kind
    running slower and another faster (docs/fabric.md, "Hermod's PP sum")."""
    measured: dict[str, float] = {}
    simulated: dict[str, float] = {}
    for r in rows:
        if r.ratio is None or not math.isfinite(r.ratio) or r.measured_cct_s is None:
            continue
        kind = r.ctype or "OTHER"
        measured[kind] = measured.get(kind, 0.0) + r.measured_cct_s
        simulated[kind] = simulated.get(kind, 0.0) + (r.simulated_cct_s or 0.0)
    return {k: measured[k] / simulated[k] if simulated[k] else None for k in sorted(measured)}


def write_table(rows: Sequence[CoflowComparison], path: Path) -> None:
    """The per-coflow comparison as CSV (blanks for None)."""
    names = [f.name for f in fields(CoflowComparison)]
    with Path(path).open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names)
        w.writeheader()
        w.writerows({k: "" if v is None else v for k, v in asdict(r).items()} for r in rows)


# --- the figure ----------------------------------------------------------------------------


def measure(
    run_dir: Path, partial: bool, delay: ControlDelay | None = None
) -> Fidelity | FidelitySkipped:
    """The fidelity figure of the run in ``run_dir`` (writes ``fidelity.csv`` there),
    also against the model with the run's measured control ``delay`` (None: none)."""
    inputs, measured = read_inputs(run_dir), read_measured(run_dir)
    if not any(r.get("cct_s") is not None for r in measured.values()):
        return FidelitySkipped("no coflow finished")
    used, dag = used_levels(measured), read_dag(run_dir)
    rp = _replay_whole(inputs, dag, used, NO_DELAY)
    rows = compare_coflows(rp.result, measured, used)
    write_table(rows, run_dir / TABLE)
    its = iteration_times(read_csv_rows(need(run_dir / "iterations.csv")))
    links = spine_link_ratio(run_dir, inputs, dag.coflows, partial)
    fid = replace(figure(rp, inputs, rows, its, partial), spine_link_ratio=links)
    return with_delay(fid, (inputs, dag, used, rp.policy), its, delay)


def _replay_whole(inputs: RunInputs, dag, used: Mapping[str, int], delay: ControlDelay) -> Replay:
    """The reference replay within ``WALL_LIMIT_S``; RuntimeError if it stopped short."""
    rp = replay(inputs, dag, used, AUTO, wall_limit_s=WALL_LIMIT_S, control_delay=delay)
    if rp.result.partial:
        raise RuntimeError(
            f"simulation stopped unfinished after {rp.wall_s:.0f} s (limit {WALL_LIMIT_S:.0f} s)"
        )
    return rp


def with_delay(
    fid: Fidelity,
    replayed: tuple[RunInputs, Any, Mapping[str, int], Policy],
    emulated_its: Mapping[tuple[str, int], float],
    delay: ControlDelay | None,
) -> Fidelity:
    """``fid`` with the iteration against the model with the run's control ``delay``
    (``replayed``: the run's inputs, DAG and levels, the reference policy): simulated
    again, or the same figure when there is no delay or the policy pays none."""
    inputs, dag, used, policy = replayed
    fid = replace(fid, control_delay=None if delay is None else delay.to_json())
    if delay is None or not delay or not pays_control_delay(policy):
        return replace(
            fid,
            iteration_ratio_with_delay=fid.iteration_ratio,
            sim_iteration_time_with_delay_s=fid.sim_iteration_time_s,
        )
    rp = _replay_whole(inputs, dag, used, delay)
    ratio, sim_it = iteration_ratio(rp.result, emulated_its)
    return replace(
        fid,
        iteration_ratio_with_delay=ratio,
        sim_iteration_time_with_delay_s=sim_it,
        sim_wall_s=round(fid.sim_wall_s + rp.wall_s, 3),
    )


def measured_delay(summary: RunSummary) -> ControlDelay | None:
    """The run's control delay: release -> installed, the median ``register`` round trip
    (``release.write_ms``: answered once the coflow's entry is written, or decided for a
    meters-only entry, its flows marked with the level's code meanwhile); re-rank ->
    installed, the median switch write (``level_change_s``; the round trip if none).
    None when no release waited for the controller (levels fixed for the DAG)."""
    write = ((summary.release or {}).get("write_ms") or {}).get("median")
    if write is None:
        return None
    release_s = min(float(write) / 1e3, MAX_CONTROL_DELAY_S)
    rerank = (summary.level_change_s or {}).get("median")
    rerank_s = release_s if rerank is None else min(float(rerank), MAX_CONTROL_DELAY_S)
    return ControlDelay(release_s, rerank_s)


def iteration_ratio(
    result: SimResult, emulated_its: Mapping[tuple[str, int], float]
) -> tuple[float | None, float | None]:
    """(emulated / simulated mean iteration time, the simulated mean) over the
    iterations both finished."""
    sim_its = sim_iteration_times(result)
    common = sorted(emulated_its.keys() & sim_its.keys())
    sim_it = mean([sim_its[i] for i in common])
    emu_it = mean([emulated_its[i] for i in common])
    return (emu_it / sim_it if sim_it and emu_it is not None else None), sim_it


def spine_link_ratio(
    run_dir: Path, inputs: RunInputs, coflows: Sequence[Coflow], partial: bool
) -> tuple[float, float] | None:
    """[smallest, largest] switch / model bytes over the leaf-spine links (``spine_links``);
    None for a partial run or one ``spine_links`` does not check."""
    rows = None if partial else spine_links(run_dir, inputs, coflows)
    found = None if rows is None else placement.ratio_range(rows)
    return None if found is None else (round(found[0], 4), round(found[1], 4))


def spine_links(
    run_dir: Path, inputs: RunInputs, coflows: Sequence[Coflow]
) -> list[LinkBytes] | None:
    """Every leaf-spine link's switch / model bytes (``coflowbed.analysis.placement``); None for a
    run with link faults, one leaf, or no ``counters.json``."""
    path = run_dir / "counters.json"
    if inputs.faults or not path.exists() or inputs.plan.leaves < 2:
        return None
    ports = json.loads(path.read_text())["ports"]
    return placement.compare_links(coflows, inputs.plan, ports)


def figure(
    rp: Replay,
    inputs: RunInputs,
    rows: Sequence[CoflowComparison],
    emulated_its: Mapping[tuple[str, int], float],
    partial: bool,
) -> Fidelity:
    """The block from a replay, its per-coflow rows and the run's iteration times."""
    compared = [r for r in rows if r.ratio is not None and math.isfinite(r.ratio)]
    ratios = [r.ratio for r in compared if r.ratio is not None]
    sim_its = sim_iteration_times(rp.result)
    common = sorted(emulated_its.keys() & sim_its.keys())
    it_ratio, sim_it = iteration_ratio(rp.result, emulated_its)
    return Fidelity(
        reference=rp.reference,
        sim_policy=rp.policy.name,
        levels=inputs.levels,
        rate_caps=_rate_caps(rp, inputs),
        model=rp.result.sim.fabric.description,
        partial=partial,
        coflows_compared=len(compared),
        coflows_total=len(rows),
        iteration_ratio=it_ratio,
        cct_ratio_p50=percentile(ratios, 50),
        cct_ratio_p90=percentile(ratios, 90),
        sim_iteration_time_s=sim_it,
        sim_avg_cct_s=mean([r.simulated_cct_s for r in compared if r.simulated_cct_s is not None]),
        sim_wall_s=round(rp.wall_s, 3),
        job_iteration_ratio=job_ratios(emulated_its, sim_its, common),
        cct_sum_ratio_by_type=sum_ratios_by_type(compared),
    )


def sim_iteration_times(result: SimResult) -> dict[tuple[str, int], float]:
    """{(job, iteration): time_s} of the model's finished iterations."""
    return {
        (it.job, it.iteration): it.time_s
        for it in result.iteration_records()
        if it.time_s is not None
    }


def job_ratios(
    emulated: Mapping[tuple[str, int], float],
    simulated: Mapping[tuple[str, int], float],
    common: Sequence[tuple[str, int]],
) -> dict[str, float | None]:
    """Per job (when there are several): emulated / simulated mean iteration time over
    the iterations both finished."""
    jobs = sorted({job for job, _ in common})
    if len(jobs) < 2:
        return {}
    out: dict[str, float | None] = {}
    for job in jobs:
        keys = [k for k in common if k[0] == job]
        sim, emu = mean([simulated[k] for k in keys]), mean([emulated[k] for k in keys])
        out[job] = emu / sim if sim and emu is not None else None
    return out


def iteration_times(rows: Sequence[dict]) -> dict[tuple[str, int], float]:
    """{(job, iteration): time_s} of the finished iterations of an ``iterations.csv``."""
    return {
        (str(r.get("job") or DEFAULT_JOB), int(r["iteration"])): float(r["time_s"])
        for r in rows
        if r.get("time_s") is not None
    }


def _rate_caps(rp: Replay, inputs: RunInputs) -> str:
    """How the model capped rates: the run's meters, its policy's rates, or not at all."""
    if isinstance(rp.policy, EmulatedRates):
        return inputs.policy_rates if rp.policy.saw_rates else "none"
    return "meters" if isinstance(rp.policy, StaticPolicy) and rp.policy.rates_bps else "none"


def attach(run_dir: Path, summary: RunSummary, skip: str | None = None) -> RunSummary:
    """``summary`` with its ``fidelity`` block (measured unless ``skip`` gives a reason),
    rewritten to ``run_dir/summary.json``.  A failing simulation is logged and recorded
    as ``{"error": ...}``: the run's results stay as written."""
    block = FidelitySkipped(skip) if skip else _measure_or_error(run_dir, summary)
    summary = replace(summary, fidelity=block.to_json())
    summary.write(run_dir)
    return summary


def _measure_or_error(run_dir: Path, summary: RunSummary) -> FidelityBlock:
    """``measure`` (with the control delay the run measured); any exception becomes a
    logged FidelityError (not a lost run)."""
    try:
        return measure(run_dir, summary.partial, measured_delay(summary))
    except Exception as exc:  # the model or its inputs failed; the measurement stands
        error = f"{type(exc).__name__}: {exc}"
        log.error("fidelity simulation failed (results kept without it): %s", error)
        log.debug("fidelity simulation traceback", exc_info=True)
        return FidelityError(error)


def describe(block: Mapping[str, Any] | None) -> str:
    """One line for logs and the run summary: the ratios, or why there are none."""
    if not block:
        return "fidelity n/a"
    if "error" in block or "skipped" in block:
        return (
            f"fidelity {'failed' if 'error' in block else 'skipped'}: "
            f"{block.get('error') or block.get('skipped')}"
        )
    return (
        f"fidelity ({block['reference']}{', partial' if block['partial'] else ''}): "
        f"iteration x{_fmt(block['iteration_ratio'])}, CCT x{_fmt(block['cct_ratio_p50'])} "
        f"p50 / x{_fmt(block['cct_ratio_p90'])} p90 over {block['coflows_compared']} "
        f"coflows{_by_type(block.get('cct_sum_ratio_by_type'))}"
        f"{_links(block.get('spine_link_ratio'))}{_delayed(block)}, "
        f"simulated in {block['sim_wall_s']:.2f} s"
    )


def _delayed(block: Mapping[str, Any]) -> str:
    """``, iteration x1.050 with the run's control delay (5.20 ms / 2.90 ms)`` when the
    run measured one."""
    delay = block.get("control_delay")
    if not delay:
        return ""
    return (
        f", iteration x{_fmt(block.get('iteration_ratio_with_delay'))} with the run's "
        f"control delay ({delay['release_s'] * 1e3:.2f} ms / {delay['rerank_s'] * 1e3:.2f} ms)"
    )


def _links(found: Sequence[float] | None) -> str:
    """``, spine-link bytes x1.005-1.090`` (switch / model) when they were checked."""
    return "" if not found else f", spine-link bytes x{found[0]:.3f}-{found[1]:.3f}"


def _by_type(by_type: Mapping[str, float | None] | None) -> str:
    """``, summed CCT EP x0.950 / PP x1.270`` when the run has more than one type."""
    if not by_type or len(by_type) < 2:
        return ""
    return ", summed CCT " + " / ".join(f"{k} x{_fmt(v)}" for k, v in by_type.items())


def _fmt(v: float | None) -> str:
    """Three decimals, or n/a."""
    return "n/a" if v is None else f"{v:.3f}"
