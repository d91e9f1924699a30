"""A scenario's ``workload.jobs``: several LLM jobs on one emulated fabric.

    workload:
      inter_job: fair | priority | crux     # default fair (controller.policies.interjob)
      jobs:
        - {job: small-moe, hosts: [h11, h21, h31, h41], start_s: 0, overrides: {...}}
        - {job: small-moe, name: b, leaves: [1, 2], priority: 1, shared: false}

Each job is a preset name or a job YAML (relative to the scenario) placed on its own
``hosts`` (names) or on every host of its ``leaves``; ``name`` defaults to the job's
own and must be unique; ``start_s`` delays the whole job; ``priority`` (smaller is
more urgent) is read by ``inter_job: priority``.  Two jobs may share hosts only when
both say ``shared: true``.  Every problem is one UserError naming file and key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coflowbed.core.config import Section, choice, integer, number, string
from coflowbed.core.errors import UserError
from controller.policies.interjob import DEFAULT_MODE, INTER_JOB_MODES, InterJobSpec, JobClass
from topo.plan import FabricPlan
from workload import generate
from workload.dag import Dag
from workload.jobspec import load_job
from workload.multijob import JobDag, gpu_intensity, merge_jobs
from workload.presets import job_file, unknown_job


@dataclass(frozen=True)
class JobEntry:
    """One validated entry of ``workload.jobs`` (before its DAG is generated)."""

    index: int
    ref: str  # preset name or job YAML path as written
    path: Path  # the job file
    name: str
    hosts: tuple[str, ...]
    start_s: float
    priority: int
    shared: bool
    overrides: dict


@dataclass(frozen=True)
class MultiJob:
    """The merged DAG of every job and the inter-job rule with its jobs."""

    dag: Dag
    inter_job: InterJobSpec


def parse_jobs(sec: Section, plan: FabricPlan, path: Path) -> MultiJob:
    """``workload.jobs`` and ``workload.inter_job`` of a scenario read from ``path``."""
    items = sec.get("jobs")
    if not isinstance(items, list) or not items:
        raise sec.fail("jobs", "must be a non-empty list of {job, hosts | leaves, ...}")
    mode = sec.get("inter_job", DEFAULT_MODE, choice(INTER_JOB_MODES))
    entries = [
        _entry(Section(it, sec.source, f"workload.jobs[{i}]"), i, plan, path)
        for i, it in enumerate(items)
    ]
    _check_unique_names(sec, entries)
    _check_overlaps(sec, entries)
    dags = [_generate(sec, e) for e in entries]
    try:
        dag = merge_jobs([JobDag(e.name, d, e.start_s) for e, d in zip(entries, dags)])
    except ValueError as exc:
        raise sec.fail("jobs", str(exc)) from None
    host_bps = plan.host_bw_mbps * 1e6
    classes = tuple(_job_class(e, d, plan, host_bps) for e, d in zip(entries, dags))
    return MultiJob(dag, InterJobSpec(mode, classes))


def _entry(js: Section, i: int, plan: FabricPlan, path: Path) -> JobEntry:
    """One job entry: its file, name, hosts and options, checked against the fabric."""
    ref = js.need("job", string)
    job_path = job_file(ref, path.parent)
    if job_path is None:
        raise js.fail("job", unknown_job(ref))
    hosts = _hosts(js, plan)
    name = js.get("name", None, string) or _job_name(js, job_path)
    entry = JobEntry(
        i,
        ref,
        job_path,
        name,
        hosts,
        js.get("start_s", 0.0, number(lo=0.0)),
        js.get("priority", 0, integer(0)),
        js.get("shared", False, _boolean),
        js.get("overrides", {}, _mapping),
    )
    js.done()
    return entry


def _job_name(js: Section, job_path: Path) -> str:
    """The job's own name (its file's ``name``), read before the job is generated."""
    try:
        overrides = js.get("overrides", {}, _mapping)
        return load_job(job_path, overrides, (js.source, f"{js.path}.overrides")).name
    except UserError:
        raise
    except ValueError as exc:
        raise UserError(str(job_path), None, str(exc)) from None


def _hosts(js: Section, plan: FabricPlan) -> tuple[str, ...]:
    """The entry's ``hosts`` or the hosts of its ``leaves`` (exactly one of them)."""
    if js.has("hosts") == js.has("leaves"):
        raise js.fail("hosts", "give exactly one of hosts (names) or leaves (numbers)")
    if js.has("hosts"):
        return js.need("hosts", _host_list(plan))
    leaves = js.need("leaves", _leaf_list(plan))
    return tuple(h.name for h in plan.hosts if h.leaf in leaves)


def _host_list(plan: FabricPlan):
    """Checker: a non-empty list of distinct hosts of ``plan``."""
    known = plan.host_names()

    def check(v: Any) -> tuple[str, ...]:
        if not isinstance(v, list) or not v:
            raise ValueError("must be a non-empty list of host names")
        for h in v:
            if h not in known:
                raise ValueError(f"host {h!r} is not on the fabric (hosts: {', '.join(known)})")
        if len(set(v)) != len(v):
            raise ValueError(f"lists a host twice: {v}")
        return tuple(v)

    return check


def _leaf_list(plan: FabricPlan):
    """Checker: a non-empty list of distinct leaf numbers of ``plan`` (1-based)."""

    def check(v: Any) -> set[int]:
        if not isinstance(v, list) or not v:
            raise ValueError("must be a non-empty list of leaf numbers")
        for lf in v:
            if isinstance(lf, bool) or not isinstance(lf, int) or not 1 <= lf <= plan.leaves:
                raise ValueError(f"leaf {lf!r} is not on the fabric (leaves 1..{plan.leaves})")
        if len(set(v)) != len(v):
            raise ValueError(f"lists a leaf twice: {v}")
        return set(v)

    return check


def _check_unique_names(sec: Section, entries: Sequence[JobEntry]) -> None:
    """Job names must differ (they prefix the ids); the later entry is blamed."""
    seen: dict[str, int] = {}
    for e in entries:
        if e.name in seen:
            raise sec.fail(
                f"jobs[{e.index}].name",
                f"job name {e.name!r} already used by jobs[{seen[e.name]}]; set a distinct name",
            )
        seen[e.name] = e.index


def _check_overlaps(sec: Section, entries: Sequence[JobEntry]) -> None:
    """No two jobs on a common host unless both are ``shared``."""
    for e in entries:
        for other in entries[: e.index]:
            common = sorted(set(e.hosts) & set(other.hosts))
            if common and not (e.shared and other.shared):
                raise sec.fail(
                    f"jobs[{e.index}].hosts",
                    f"hosts {', '.join(common)} are also job {other.name!r}'s "
                    f"(jobs[{other.index}]); set shared: true on both to share them",
                )


def _generate(sec: Section, e: JobEntry) -> Dag:
    """The entry's DAG on its hosts; UserError when the job does not fit them."""
    try:
        job = load_job(e.path, e.overrides, (sec.source, f"{sec.path}.jobs[{e.index}].overrides"))
    except UserError:
        raise
    except ValueError as exc:
        raise UserError(str(e.path), None, str(exc)) from None
    if job.hosts_needed > len(e.hosts):
        raise sec.fail(
            f"jobs[{e.index}].hosts",
            f"job {e.name!r} needs {job.hosts_needed} hosts, {len(e.hosts)} given",
        )
    try:
        return generate(job, list(e.hosts))
    except UserError:
        raise
    except ValueError as exc:
        raise UserError(str(e.path), None, str(exc)) from None


def _job_class(e: JobEntry, dag: Dag, plan: FabricPlan, host_bps: float) -> JobClass:
    """What the inter-job layer needs of the job: priority, GPU intensity, leaves."""
    leaves = tuple(sorted({plan.host(h).leaf for h in dag.hosts()}))
    return JobClass(e.name, e.priority, gpu_intensity(dag, host_bps), leaves)


def _boolean(v: Any) -> bool:
    """Checker: true or false."""
    if not isinstance(v, bool):
        raise ValueError(f"must be true or false, got {v!r}")
    return v


def _mapping(v: Any) -> dict:
    """Checker: a mapping."""
    if not isinstance(v, dict):
        raise ValueError(f"must be a mapping, got {v!r}")
    return v
