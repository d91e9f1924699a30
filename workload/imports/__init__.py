"""Imports of other simulators' workloads as coflow DAGs: SimAI/AICB text workloads
(``aicb``) and ASTRA-sim 1.0 text workloads (``astrasim``).  docs/workloads.md lists
what is mapped and what is ignored.

    dag = import_workload(path, "aicb", hosts, ImportOptions(byte_scale=1e-3))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from workload.dag import Dag
from workload.imports import aicb, astrasim
from workload.imports.build import ImportOptions, to_dag
from workload.imports.model import ImportedWorkload

FORMATS = ("aicb", "astrasim")


def read_workload(path: str | Path, fmt: str, npus: int, cycle_s: float = 1e-9) -> ImportedWorkload:
    """Parse ``path`` in format ``fmt``; ``npus`` (ASTRA-sim only) = ranks to run on."""
    if fmt == "aicb":
        return aicb.read(str(path))
    if fmt == "astrasim":
        return astrasim.read(str(path), npus, cycle_s)
    raise ValueError(f"unknown workload format {fmt!r} (known: {', '.join(FORMATS)})")


def import_workload(
    path: str | Path,
    fmt: str,
    hosts: Sequence[str],
    opts: ImportOptions | None = None,
    npus: int | None = None,
) -> Dag:
    """The DAG of workload file ``path`` on ``hosts``; ASTRA-sim runs on ``npus`` ranks
    (default: every host's GPUs)."""
    opts = opts or ImportOptions()
    wl = read_workload(path, fmt, npus or len(hosts) * opts.gpus_per_host)
    return to_dag(wl, hosts, opts)


__all__ = ["FORMATS", "ImportOptions", "import_workload", "read_workload"]
