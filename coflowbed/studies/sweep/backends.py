"""Where a sweep's runs execute: in this process one after another (``serial``: emulated
runs, one fabric at a time), a process pool on this machine (``local``), or Ray tasks on
a cluster (``ray``).  Each backend calls ``on_done`` with every SweepResult as it arrives;
Ctrl-C (KeyboardInterrupt) cancels what has not started and is raised again, after the
runs already finished have been handed over."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from coflowbed.core.errors import UserError
from coflowbed.studies.sweep.grid import RunSpec
from coflowbed.studies.sweep.worker import SweepResult, failed

log = logging.getLogger("sweep")

RunFn = Callable[[RunSpec], SweepResult]
OnDone = Callable[[SweepResult], None]
Backend = Callable[[Sequence[RunSpec], RunFn, OnDone], None]


def serial(specs: Sequence[RunSpec], run: RunFn, on_done: OnDone) -> None:
    """Each run in this process, in order."""
    for spec in specs:
        on_done(_guarded(run, spec))


def _guarded(run: RunFn, spec: RunSpec) -> SweepResult:
    """``run(spec)``; an error (not Ctrl-C) becomes the run's failed result, logged."""
    try:
        return run(spec)
    except Exception as exc:  # recorded in the table and the log, the sweep is partial
        log.error("run %s failed: %s: %s", spec.run_id, type(exc).__name__, exc)
        return failed(spec, exc)


def local(jobs: int) -> Backend:
    """A pool of ``jobs`` worker processes (spawned: no inherited threads or locks)."""

    def backend(specs: Sequence[RunSpec], run: RunFn, on_done: OnDone) -> None:
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
        futures = {pool.submit(_guarded, run, s): s for s in specs}
        try:
            _collect(futures, on_done)
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)
            _harvest(futures, on_done)
            raise
        pool.shutdown(wait=True)

    return backend


def _collect(futures: dict[Future, RunSpec], on_done: OnDone) -> None:
    """Hand over results as they complete (``futures`` shrinks to what is pending)."""
    while futures:
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        for fut in done:
            spec = futures.pop(fut)
            exc = fut.exception()
            on_done(failed(spec, exc) if exc is not None else fut.result())


def _harvest(futures: dict[Future, RunSpec], on_done: OnDone) -> None:
    """After an interrupt: the runs that still finished cleanly."""
    for fut in list(futures):
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            on_done(fut.result())


def ray(address: str | None) -> Backend:
    """One Ray task per run on the cluster at ``address`` (None: a local instance, its
    session files in a temporary directory removed after it stops: Ray's default,
    ``/tmp/ray``, would keep every session's)."""
    ray_mod = import_ray()

    def backend(specs: Sequence[RunSpec], run: RunFn, on_done: OnDone) -> None:
        with _session_dir(address) as temp_dir:
            ray_mod.init(address=address, log_to_driver=False, **temp_dir)
            task = ray_mod.remote(num_cpus=1)(_guarded)
            refs = {task.remote(run, s): s for s in specs}
            try:
                _collect_ray(ray_mod, refs, on_done)
            except KeyboardInterrupt:
                for ref in refs:
                    ray_mod.cancel(ref, force=True)
                raise
            finally:
                ray_mod.shutdown()

    return backend


@contextlib.contextmanager
def _session_dir(address: str | None) -> Iterator[dict[str, str]]:
    """``ray.init``'s session directory argument: for a local instance a temporary
    directory, removed on exit; none when joining a cluster (its own)."""
    if address is not None:
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="coflowbed-ray-") as d:
        yield {"_temp_dir": d}


def _collect_ray(ray_mod: Any, refs: dict, on_done: OnDone) -> None:
    """Hand over Ray results as they complete (``refs`` shrinks to what is pending)."""
    while refs:
        done, _ = ray_mod.wait(list(refs), num_returns=1)
        for ref in done:
            spec = refs.pop(ref)
            try:
                on_done(ray_mod.get(ref))
            except ray_mod.exceptions.RayError as exc:  # the task's worker died
                log.error("run %s failed in Ray: %s", spec.run_id, exc)
                on_done(failed(spec, exc))


def import_ray() -> Any:
    """The ``ray`` module; UserError (one line) when it is not installed."""
    try:
        import ray as ray_mod
    except ImportError:
        raise UserError(
            "--backend ray", None, "Ray is not installed: pip install 'coflowbed[ray]'"
        ) from None
    return ray_mod
