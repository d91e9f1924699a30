"""What a run (emulated or simulated) left in its folder, as typed values for scripts and
tests: ``RunResult.read(path)`` reads ``summary.json`` and ``coflows.csv``.

``result.coflow("urgent").cct_s``, ``result.iteration_time_s``,
``result.by_type("EP").avg_s``, ``result.fidelity`` (emulated / simulated ratios; None
for a simulation or a run without a figure), ``result.partial``, ``result.path``."""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from coflowbed.results.records import CctStats, CoflowRecord, RunSummary


@dataclass(frozen=True)
class FidelityRatios:
    """An emulated run's figures against its own simulation (``summary.json``
    ``fidelity``; docs/simulator.md, "Fidelity of every run")."""

    reference: str  # "levels" | "policy"
    iteration_ratio: float | None  # emulated / simulated mean iteration time
    cct_ratio_p50: float | None  # median of the per-coflow emulated / simulated CCTs
    cct_ratio_p90: float | None
    coflows_compared: int
    partial: bool
    # per coflow type: summed emulated / summed simulated CCT ({} in folders before it)
    cct_sum_ratio_by_type: Mapping[str, float | None] = field(default_factory=dict)
    # [smallest, largest] switch / model bytes over the leaf-spine links (None: not
    # checked, or a folder from before it)
    spine_link_ratio: tuple[float, float] | None = None
    # emulated / simulated mean iteration time against the model with the run's measured
    # control delay (docs/simulator.md, "Control delay"); None in folders before it
    iteration_ratio_with_delay: float | None = None


class NotInRun(LookupError):
    """A coflow id or type the run does not have; the message names those it has."""


@dataclass(frozen=True)
class RunResult:
    """A finished (or partial) run, read back from its folder ``path``."""

    path: Path
    summary: RunSummary
    coflows: tuple[CoflowRecord, ...]
    fidelity: FidelityRatios | None

    def __repr__(self) -> str:
        """One line, short enough for an assertion message: folder, policy, coflows
        finished, iteration time, average CCT, emulated / simulated."""
        s = self.summary
        f = self.fidelity
        fid = "" if f is None else f", emulated/simulated iteration {_g(f.iteration_ratio)}"
        return (
            f"RunResult({self.path.name}: {s.policy}, {s.coflows}/{s.coflows_total} coflows"
            f"{' PARTIAL' if s.partial else ''}, iteration {_g(s.iteration_time_s)} s, "
            f"avg CCT {_g(s.avg_cct_s)} s{fid})"
        )

    @property
    def partial(self) -> bool:
        """Whether some coflow did not finish (or the run stopped on an error)."""
        return self.summary.partial

    @property
    def iteration_time_s(self) -> float | None:
        """Mean time of the finished training iterations (None if none finished)."""
        return self.summary.iteration_time_s

    def coflow(self, coflow_id: str) -> CoflowRecord:
        """The coflow ``coflow_id``; NotInRun naming the run's ids if absent."""
        for cf in self.coflows:
            if cf.coflow_id == coflow_id:
                return cf
        known = ", ".join(cf.coflow_id for cf in self.coflows[:10])
        raise NotInRun(f"{self.path}: no coflow {coflow_id!r} (coflows: {known}, ...)")

    def by_type(self, ctype: str) -> CctStats:
        """CCT figures of the run's finished coflows of type ``ctype`` (EP, PP, DP...)."""
        stats = self.summary.cct_by_type.get(ctype)
        if stats is None:
            known = ", ".join(sorted(self.summary.cct_by_type)) or "none"
            raise NotInRun(f"{self.path}: no coflow of type {ctype!r} (types: {known})")
        return stats

    @classmethod
    def read(cls, path: Path) -> RunResult:
        """The run in folder ``path``; ValueError naming the file when one is not a
        run's."""
        path = Path(path)
        summary = RunSummary.read(path)
        return cls(path, summary, read_coflows(path / "coflows.csv"), ratios(summary.fidelity))


def ratios(block: Mapping[str, Any] | None) -> FidelityRatios | None:
    """The ratios of a ``fidelity`` block; None when it has none (skipped, failed,
    absent: a simulation)."""
    if not block or "iteration_ratio" not in block:
        return None
    names = [f.name for f in fields(FidelityRatios) if f.name in block]
    got = {name: block[name] for name in names}
    if got.get("spine_link_ratio") is not None:  # a JSON list
        got["spine_link_ratio"] = tuple(got["spine_link_ratio"])
    return FidelityRatios(**got)


def read_coflows(path: Path) -> tuple[CoflowRecord, ...]:
    """The rows of a ``coflows.csv`` (empty file: no coflow); ValueError naming it."""
    try:
        with path.open(newline="") as fh:
            return tuple(_coflow(row) for row in csv.DictReader(fh))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{path}: not a coflows table: {exc}") from None


_CONVERT: dict[str, Callable[[str], Any]] = {"str": str, "int": int, "float": float}


def _coflow(row: Mapping[str, str]) -> CoflowRecord:
    """One ``coflows.csv`` row, each column converted to its field's type."""
    return CoflowRecord(**{f.name: _value(row[f.name], str(f.type)) for f in fields(CoflowRecord)})


def _value(text: str, kind: str) -> Any:
    """``text`` as type ``kind`` (a field annotation); a blank optional is None."""
    base, _, optional = kind.partition(" | ")
    if text == "" and optional:
        return None
    return _CONVERT[base](text)


def _g(v: float | None) -> str:
    """A figure to 4 significant digits, ``-`` for none."""
    return "-" if v is None else f"{v:.4g}"
