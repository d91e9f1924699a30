"""Run one scenario under several policies, N times each, interleaved (a b c a b c ...)
so that the drift of a shared machine hits every policy alike, and tabulate
(``coflowbed.analysis.comparison``, files by ``coflowbed.analysis.report.tables``, plots by
``coflowbed.analysis.plots.comparison``).  Runs go to ``OUT/<policy>/r<k>/``.  Ctrl-C or SIGTERM
stops the comparison: the runs done are kept and tabulated, the rest named as not done."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from coflowbed.analysis.comparison import ComparedRun, Comparison, PlannedRun, run_result, tabulate
from coflowbed.analysis.plots.comparison import compare_bars, plot_comparison
from coflowbed.analysis.report.tables import write_all
from coflowbed.core import progress
from coflowbed.core.errors import UserError
from coflowbed.emulation.precheck import check_can_run
from coflowbed.experiment.overrides import apply_overrides
from coflowbed.experiment.scenario import Scenario, scenario_from_raw
from coflowbed.experiment.simulate import FLUID, Engine, simulate_scenario
from coflowbed.results.records import RunSummary
from coflowbed.studies.single import emulate
from controller import policies as registry
from controller.policies.interjob import INTER_JOB_MODES

log = logging.getLogger("compare")

RunOne = Callable[[Scenario, Path], RunSummary]  # (scenario with policy set, out dir) -> summary


class Stopped(Exception):
    """Ctrl-C or SIGTERM during a comparison; ``summary``: the partial run it cut short
    when that run wrote one."""

    def __init__(self, why: str, summary: RunSummary | None = None) -> None:
        super().__init__(why)
        self.summary = summary


def parse_policies(text: str, source: str) -> list[str]:
    """The comma-separated policy names of a comparison (``POLICY+MODE``: the policy
    with inter-job rule MODE); UserError naming ``source`` on an unknown one or none."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    known = registry.names()
    split = [n.partition("+") for n in names]
    bad = [
        n
        for n, (p, plus, m) in zip(names, split)
        if p not in known or (plus and m not in INTER_JOB_MODES)
    ]
    if not names or bad:
        raise UserError(
            source,
            "--policies",
            f"unknown policy {bad[0]!r} (known: {', '.join(known)})"
            if bad
            else "needs at least one policy",
        )
    return names


def emulated(scen: Scenario, check: bool = True) -> RunOne:
    """The run of one policy on the emulated fabric (``check``: with its fidelity); the
    machine is checked now, before any run."""
    check_can_run(scen)

    def one(s: Scenario, out: Path) -> RunSummary:
        outcome = emulate(s, out, check)
        if outcome.interrupted:
            raise Stopped(outcome.error or "interrupted", outcome.summary)
        return outcome.summary

    return one


def simulated(engine: Engine = FLUID) -> RunOne:
    """The run of one policy simulated by ``engine`` (the fluid model by default)."""

    def one(s: Scenario, out: Path) -> RunSummary:
        return simulate_scenario(s, out, engine=engine)

    return one


def with_policy(scen: Scenario, policy: str) -> Scenario:
    """A copy of ``scen`` scheduled by ``policy`` (no parameters); ``POLICY+MODE`` also
    sets the inter-job rule of a scenario with several jobs (UserError without)."""
    name, plus, mode = policy.partition("+")
    if not plus:
        return replace(scen, policy=policy, policy_params={})
    if scen.inter_job is None:
        raise UserError(scen.source, "workload.jobs", f"needed by --policies {policy}")
    inter = replace(scen.inter_job, mode=mode)
    return replace(scen, policy=name, policy_params={}, inter_job=inter)


def with_seed(scen: Scenario, seed: int) -> Scenario:
    """``scen`` (as loaded: its overrides and plugins kept) again with ``seed``: the
    scenario's own ``seed`` (recorded) and, for an LLM job, the job's ``ep_skew.seed``
    (the expert routing the workload draws)."""
    overrides: dict = {"seed": seed}
    work = scen.raw.get("workload")
    if isinstance(work, dict) and "job" in work:
        job_overrides = {**(work.get("overrides") or {}), "ep_skew.seed": seed}
        overrides["workload"] = {**work, "overrides": job_overrides}
    raw = apply_overrides(scen.raw, overrides, scen.source)
    return scenario_from_raw(raw, Path(scen.source))


def plan_runs(policies: Sequence[str], seeds: Sequence[int]) -> list[PlannedRun]:
    """Repetition k (seed ``seeds[k-1]``) of every policy, then k + 1: interleaved."""
    return [PlannedRun(p, k, s) for k, s in enumerate(seeds, 1) for p in policies]


def compare(
    scen: Scenario,
    policies: Sequence[str],
    out_dir: Path,
    run_one: RunOne,
    repeat: int = 1,
    seeds: Sequence[int] | None = None,
) -> Comparison:
    """Run every policy ``repeat`` times into ``out_dir/<policy>/r<k>``; write the
    comparison's files and plots; return it.  ``seeds``: one per repetition (default the
    scenario's, as it is)."""
    if repeat < 1 or (seeds is not None and len(seeds) != repeat):
        raise ValueError(f"repeat {repeat} with {len(seeds or ())} seeds")
    scens = {s: with_seed(scen, s) for s in set(seeds)} if seeds else {scen.seed: scen}
    plan = plan_runs(policies, list(seeds) if seeds else [scen.seed] * repeat)
    runs, interrupted = execute(plan, scens, out_dir, run_one)
    result = tabulate(scen.name, scen.source, plan, runs, interrupted)
    rows = write_all(result, out_dir)
    compare_bars(rows, out_dir / "compare.png", f"{scen.name}: policies compared")
    plot_comparison(result, out_dir)
    return result


def execute(
    plan: Sequence[PlannedRun], scens: dict[int, Scenario], out_dir: Path, run_one: RunOne
) -> tuple[list[ComparedRun], bool]:
    """The planned runs in order, with a progress bar; (runs done, interrupted)."""
    runs: list[ComparedRun] = []
    with progress.bar(len(plan), "compare") as b, _sigterm_stops():
        for p in plan:
            b.set_postfix_str(p.name)
            try:
                runs.append(_one(p, scens[p.seed], out_dir, run_one))
            except (Stopped, KeyboardInterrupt) as exc:
                if isinstance(exc, Stopped) and exc.summary is not None:
                    runs.append(run_result(p, str(run_dir(out_dir, p)), exc.summary))
                log.error("comparison interrupted at %s (%s)", p.name, type(exc).__name__)
                return runs, True
            b.update(1)
    return runs, False


def _one(p: PlannedRun, scen: Scenario, out_dir: Path, run_one: RunOne) -> ComparedRun:
    """One planned run into ``out_dir/<policy>/r<k>``."""
    log.info("run %s (seed %d)", p.name, p.seed)
    folder = run_dir(out_dir, p)
    return run_result(p, str(folder), run_one(with_policy(scen, p.policy), folder))


def run_dir(out_dir: Path, p: PlannedRun) -> Path:
    """``out_dir/<policy>/r<k>``."""
    return out_dir / p.policy / f"r{p.repetition}"


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """SIGTERM raises ``Stopped`` while the comparison runs (an emulated run installs
    its own handler for its duration, ``runner._signals_raise``, and restores this one)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame):
        raise Stopped(signal.Signals(signum).name)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
