"""Run a sweep: validate every run's scenario, skip the runs already complete in the
output folder, run the rest on a backend with a progress bar, and write the table (and
the plot) with whatever is done -- marked partial when a run failed or Ctrl-C stopped
the sweep."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from coflowbed.core.errors import UserError
from coflowbed.core.progress import bar
from coflowbed.emulation.precheck import check_can_run
from coflowbed.experiment.scenario import scenario_from_raw
from coflowbed.studies.sweep import table
from coflowbed.studies.sweep.backends import Backend, RunFn
from coflowbed.studies.sweep.grid import RunSpec, expand
from coflowbed.studies.sweep.plot import sweep_lines
from coflowbed.studies.sweep.spec import SweepSpec
from coflowbed.studies.sweep.worker import SweepResult, execute, finished

log = logging.getLogger("sweep")


@dataclass(frozen=True)
class SweepOutcome:
    """What a sweep did: runs in all, skipped as already complete, finished now, and whether
    the table is partial (a run failed or the sweep was interrupted)."""

    runs: int
    skipped: int
    ran: int
    partial: bool
    interrupted: bool
    rows: tuple[dict, ...]


def validate(specs: list[RunSpec], source: Path) -> None:
    """Load every run's scenario (DAG included) now, and for emulated runs check this
    machine can run them; UserError naming the sweep file and the first bad run.  Runs
    that differ only in policy share a check."""
    seen: set[tuple[str, int]] = set()
    with bar(len(specs), "validating", unit="scenario") as b:
        for spec in specs:
            key = (_without_policy(spec.scenario_yaml), spec.seed)
            if key not in seen:
                seen.add(key)
                where = f"{source} (run {spec.run_id})"
                try:
                    scen = scenario_from_raw(
                        yaml.safe_load(spec.scenario_yaml), spec.scenario_path, where
                    )
                    if spec.mode == "emulate":
                        check_can_run(scen)
                except UserError as exc:
                    if exc.source == where:
                        raise
                    raise UserError(where, None, str(exc)) from None
            b.update(1)


def _without_policy(text: str) -> str:
    """A resolved scenario without its policy line (the policy is checked once, by the
    sweep file's own ``policies``)."""
    raw = yaml.safe_load(text)
    raw.pop("policy", None)
    return yaml.safe_dump(raw, sort_keys=True)


def run_sweep(
    spec: SweepSpec, out_dir: Path, backend: Backend, run: RunFn = execute
) -> SweepOutcome:
    """The whole sweep into ``out_dir``; the table is written even when interrupted."""
    specs = expand(spec, out_dir)
    _check_unique(specs, spec)
    validate(specs, spec.source)
    results = {s.run_id: r for s in specs if (r := finished(s)) is not None}
    todo = [s for s in specs if s.run_id not in results]
    log.info(
        "%d runs: %d already complete (skipped), %d to run", len(specs), len(results), len(todo)
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    skipped = len(results)
    interrupted = _run_all(todo, run, backend, results)
    rows = table.rows(specs, results, spec.keys)
    partial = len(rows) < len(specs) or any(r["partial"] for r in rows)
    table.write(rows, out_dir, _meta(spec, len(specs), skipped, partial))
    _plot(spec, rows, out_dir)
    ran = len(results) - skipped
    return SweepOutcome(len(specs), skipped, ran, partial, interrupted, tuple(rows))


def _run_all(todo: list[RunSpec], run: RunFn, backend: Backend, results: dict) -> bool:
    """Run ``todo`` on ``backend`` into ``results``; True if Ctrl-C stopped it."""
    done: list[str] = []
    with bar(len(todo), "sweep") as b:

        def on_done(r: SweepResult) -> None:
            results[r.run_id] = r
            done.append(r.run_id)
            b.update(1)
            b.set_postfix_str(r.run_id)

        try:
            backend(todo, run, on_done)
        except KeyboardInterrupt:
            log.warning("interrupted: %d of %d runs finished", len(done), len(todo))
            return True
    return False


def _check_unique(specs: list[RunSpec], spec: SweepSpec) -> None:
    """Two runs may not share a folder (grid values that spell the same)."""
    ids = [s.run_id for s in specs]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise UserError(str(spec.source), "grid", f"two runs would share the folder {dup!r}")


def _meta(spec: SweepSpec, runs: int, skipped: int, partial: bool) -> dict:
    """sweep.json's header."""
    return {
        "name": spec.name,
        "source": str(spec.source),
        "mode": spec.mode,
        "keys": list(spec.keys),
        "policies": list(spec.policies),
        "seeds": list(spec.seeds),
        "runs": runs,
        "skipped": skipped,
        "partial": partial,
        "plot": asdict(spec.plot) if spec.plot else None,
    }


def _plot(spec: SweepSpec, rows: list[dict], out_dir: Path) -> None:
    """The sweep's line plot, when the sweep file names one."""
    if spec.plot is not None and rows:
        sweep_lines(rows, asdict(spec.plot), out_dir / spec.plot.file, spec.name)
