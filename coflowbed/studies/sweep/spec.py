"""The sweep file (YAML, strict): a base scenario, a grid over its keys, policies and
seeds, and how to run and draw them (schema in docs/sweeps.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coflowbed.core.config import Section, choice, integer, load_yaml, number, string
from coflowbed.core.errors import UserError
from coflowbed.experiment.scenario import SHIPPED_SCENARIOS, shipped_scenarios
from controller import policies
from workload.schema import did_you_mean, typos_first

SHIPPED_SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"

MODES = ("sim", "emulate", "packet")  # fluid model, emulated fabric, ns-3 packet engine
TRANSPORTS = ("tcp", "dctcp", "cubic")
RESULTS = ("full", "summary")  # every result file of a run, or summary.json only
SERIES_METRICS = ("speedup_iteration", "speedup_avg_cct", "iteration_time_s", "avg_cct_s")


@dataclass(frozen=True)
class PlotSpec:
    """A line plot of ``y`` against grid key ``x``, a line per policy, a panel per value
    of grid key ``panels`` (None: one panel)."""

    x: str
    y: str = "speedup_iteration"
    panels: str | None = None
    file: str = "sweep.png"


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep file; ``grid`` keeps the file's key order."""

    source: Path
    name: str
    scenario: dict
    scenario_path: Path  # relative paths of the scenario are relative to this file
    mode: str
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    grid: tuple[tuple[str, tuple[Any, ...]], ...]
    results: str = "full"
    wall_limit_s: float | None = None
    plot: PlotSpec | None = None
    packet: tuple[str, float] = ("tcp", 1.0)  # mode packet: (transport, scale)

    @property
    def keys(self) -> tuple[str, ...]:
        """The grid's dotted scenario keys."""
        return tuple(k for k, _ in self.grid)


def with_plugins(spec: SweepSpec, plugins: Sequence[Path]) -> SweepSpec:
    """``spec`` whose every run also loads the policy files ``plugins`` (absolute)."""
    if not plugins:
        return spec
    own = list(spec.scenario.get("plugins") or [])
    added = [str(f) for f in plugins if str(f) not in own]
    return replace(spec, scenario={**spec.scenario, "plugins": own + added})


def load_sweep(path: Path) -> SweepSpec:
    """Read and validate a sweep file; UserError (one line) on any problem."""
    with typos_first():
        return _read_sweep(load_yaml(path), path)


def _read_sweep(raw: Any, path: Path) -> SweepSpec:
    """``load_sweep`` of the parsed file ``raw``."""
    top = Section(raw, str(path))
    scenario, scen_path = _scenario(top, path)
    grid = _grid(top)
    spec = SweepSpec(
        path,
        top.get("name", path.stem, string),
        scenario,
        scen_path,
        top.get("mode", "sim", choice(MODES)),
        _policies(top),
        tuple(top.get("seeds", [1], _int_list)),
        grid,
        top.get("results", "full", choice(RESULTS)),
        top.get("wall_limit_s", None, number(positive=True)),
        _plot(top, [k for k, _ in grid]),
        _packet(top),
    )
    top.done()
    return spec


def _packet(top: Section) -> tuple[str, float]:
    """``packet: {transport, scale}`` of a ``mode: packet`` sweep (docs/packet.md)."""
    sec = top.section("packet", required=False)
    if sec is None:
        return ("tcp", 1.0)
    out = (
        sec.get("transport", "tcp", choice(TRANSPORTS)),
        sec.get("scale", 1.0, number(positive=True, hi=1.0)),
    )
    sec.done()
    return out


def _scenario(top: Section, path: Path) -> tuple[dict, Path]:
    """The base scenario: a file (relative to the sweep file) or an inline mapping."""
    value = top.need("scenario")
    if isinstance(value, dict):
        return value, path
    if not isinstance(value, str) or not value:
        raise top.fail("scenario", "must be a scenario file path or a mapping")
    file = _shipped_or_relative(value, path)
    if not file.is_file():
        names = shipped_scenarios()
        hint = did_you_mean(value, names)
        raise top.fail(
            "scenario",
            f"no such file or shipped scenario {value!r}{hint} (shipped: {', '.join(names)})",
        )
    raw = load_yaml(file)
    if not isinstance(raw, dict):
        raise UserError(str(file), None, "a scenario must be a mapping")
    return raw, file


def _shipped_or_relative(ref: str, path: Path) -> Path:
    """``ref`` relative to the sweep file, else a shipped scenario of that name."""
    local = path.parent / ref
    if local.is_file():
        return local
    shipped = SHIPPED_SCENARIOS / f"{ref}.yaml"
    return shipped if shipped.is_file() else local


def find_sweep(ref: Path) -> Path:
    """``ref``, or the shipped sweep ``coflowbed/sweeps/<ref>.yaml``; UserError listing
    the shipped sweeps when it is neither."""
    if ref.exists():
        return ref
    shipped = SHIPPED_SWEEPS / f"{ref}.yaml"
    if shipped.is_file():
        return shipped
    names = sorted(p.stem for p in SHIPPED_SWEEPS.glob("*.yaml"))
    hint = did_you_mean(str(ref), names)
    raise UserError(
        str(ref), None, f"no such file or shipped sweep{hint} (shipped: {', '.join(names)})"
    )


def _policies(top: Section) -> tuple[str, ...]:
    """Registered policy names, at least one, no repeats."""
    names = top.need("policies", _str_list)
    known = policies.names()
    bad = [n for n in names if n not in known]
    if bad:
        raise top.fail("policies", f"unknown policy {bad[0]!r} (known: {', '.join(known)})")
    if len(set(names)) != len(names):
        raise top.fail("policies", "a policy appears twice")
    return tuple(names)


def _grid(top: Section) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``grid``: dotted scenario key -> non-empty list of values (no repeats)."""
    raw = top.get("grid", {})
    if not isinstance(raw, dict):
        raise top.fail("grid", "must be a mapping of dotted scenario keys to value lists")
    out = []
    for key, values in raw.items():
        if not isinstance(key, str) or not key or key.split(".")[0] in ("policy", "seed"):
            raise top.fail(f"grid.{key}", "a dotted scenario key (policy and seed have their own)")
        if not isinstance(values, list) or not values:
            raise top.fail(f"grid.{key}", "must be a non-empty list of values")
        if len({repr(v) for v in values}) != len(values):
            raise top.fail(f"grid.{key}", "a value appears twice")
        out.append((key, tuple(values)))
    return tuple(out)


def _plot(top: Section, keys: list[str]) -> PlotSpec | None:
    """The optional ``plot`` section; its keys must be grid keys."""
    sec = top.section("plot", required=False)
    if sec is None:
        return None

    def grid_key(v: Any) -> str:
        if v not in keys:
            raise ValueError(f"must be a grid key ({', '.join(keys) or 'the grid is empty'})")
        return v

    spec = PlotSpec(
        sec.need("x", grid_key),
        sec.get("y", "speedup_iteration", choice(SERIES_METRICS)),
        sec.get("panels", None, grid_key),
        sec.get("file", "sweep.png", string),
    )
    sec.done()
    return spec


def _str_list(v: Any) -> list[str]:
    """Checker: a non-empty list of non-empty strings."""
    if not isinstance(v, list) or not v or not all(isinstance(s, str) and s for s in v):
        raise ValueError(f"must be a non-empty list of names, got {v!r}")
    return v


def _int_list(v: Any) -> list[int]:
    """Checker: a non-empty list of distinct integers >= 0."""
    check = integer(0)
    if not isinstance(v, list) or not v:
        raise ValueError(f"must be a non-empty list of integers, got {v!r}")
    if len(set(map(check, v))) != len(v):
        raise ValueError("a seed appears twice")
    return v
