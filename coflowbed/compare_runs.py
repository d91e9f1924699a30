"""Run one scenario under several policies, N times each, interleaved (a b c a b c ...)
so that the drift of a shared machine hits every policy alike, and tabulate
(``coflowbed.comparison``, files by ``coflowbed.compare_files``, plots by
``coflowbed.compare_plots``).  Runs go to ``OUT/<policy>/r<k>/``.  Ctrl-C or SIGTERM
stops the comparison: the runs done are kept and tabulated, the rest named as not done."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from coflowbed import progress
from coflowbed.compare_files import write_all
from coflowbed.compare_plots import plot_comparison
from coflowbed.comparison import ComparedRun, Comparison, PlannedRun, run_result, tabulate
from coflowbed.errors import UserError
from coflowbed.results import RunSummary
from coflowbed.scenario import Scenario

log = logging.getLogger("compare")

RunOne = Callable[[Scenario, Path], RunSummary]  # (scenario with policy set, out dir) -> summary


class Stopped(Exception):
    """Ctrl-C or SIGTERM during a comparison; ``summary``: the partial run it cut short
    when that run wrote one."""

    def __init__(self, why: str, summary: RunSummary | None = None) -> None:
        super().__init__(why)
        self.summary = summary


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
    """``scen`` loaded again with ``seed``: the scenario's own ``seed`` (recorded) and, for
    an LLM job, the job's ``ep_skew.seed`` (the expert routing the workload draws)."""
    from coflowbed.scenario import load_scenario

    overrides: dict = {"seed": seed}
    work = scen.raw.get("workload")
    if isinstance(work, dict) and "job" in work:
        job_overrides = {**(work.get("overrides") or {}), "ep_skew.seed": seed}
        overrides["workload"] = {**work, "overrides": job_overrides}
    return load_scenario(scen.source, overrides)


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
    from coflowbed.plots import compare_bars

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
