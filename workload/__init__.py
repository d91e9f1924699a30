"""LLM-training workloads as coflow DAGs.

Public entry points (imported lazily so that light users of the package, such as the
per-host traffic agent, do not pay for numpy/scipy):

- ``generate(job_spec, hosts, nics=1, slots=1) -> Dag``          (workload.generator)
- ``critical_path(dag, line_rate_bps) -> float``  (workload.critpath)
- ``workload.jobspec.load_job(path, overrides=None) -> JobSpec``
- ``workload.dagjson.dump(dag, path)`` / ``workload.dagjson.load(path) -> Dag``
- ``workload.jobspec.preset_path(name) -> Path | None``,
  ``workload.presets.load_preset(name, overrides=None)``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workload.dag import Dag
    from workload.jobspec import JobSpec


def generate(job_spec: JobSpec, hosts: Sequence[str] | None, nics: int = 1, slots: int = 1) -> Dag:
    """The coflow DAG of ``job_spec`` placed on ``hosts`` (see workload.generator)."""
    from workload.generator import generate as _generate

    return _generate(job_spec, hosts, nics, slots)


def critical_path(dag: Dag, line_rate_bps: float) -> float:
    """Lower bound on the DAG's run time at ``line_rate_bps`` (see workload.critpath)."""
    from workload.critpath import critical_path as _cp

    return _cp(dag, line_rate_bps)
