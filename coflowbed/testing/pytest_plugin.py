"""The pytest plugin for users (entry point ``pytest11``; docs/python-api.md): fixtures
``coflowbed_run`` and ``coflowbed_sim``, callables ``(scenario, **overrides)`` that run
the scenario emulated or in the flow-level simulator into a fresh folder under pytest's
temporary directory and return its ``coflowbed.RunResult``.

Fixtures only: no hook, so loading the plugin changes no collection or report.  The
fixture module imports nothing of the emulator or the simulator until a test calls one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from coflowbed.results.read import RunResult

RunFixture = Callable[..., "RunResult"]  # (scenario, /, **overrides) -> RunResult


def _api() -> ModuleType:
    """``coflowbed.api``, imported when a fixture is first used: the plugin is loaded into
    every pytest session where coflowbed is installed, most of which never use it."""
    from coflowbed import api  # late, deliberately (the docstring says why)

    return api


@pytest.fixture
def coflowbed_sim(tmp_path_factory: pytest.TempPathFactory) -> RunFixture:
    """``coflowbed_sim(scenario, **overrides)``: the scenario in the flow-level simulator."""
    api = _api()

    def simulate(scenario: str | Path, /, **overrides: Any) -> RunResult:
        """Simulate ``scenario`` with ``overrides`` into a fresh temporary folder."""
        return api.simulate(scenario, out=tmp_path_factory.mktemp("coflowbed-sim"), **overrides)

    return simulate


@pytest.fixture
def coflowbed_run(tmp_path_factory: pytest.TempPathFactory) -> RunFixture:
    """``coflowbed_run(scenario, check=True, **overrides)``: one emulated run; the test is
    skipped, with the reason, on a machine without root, Open vSwitch and Mininet (and
    BMv2 for a ``switch: bmv2`` scenario)."""
    api = _api()

    def run(scenario: str | Path, /, *, check: bool = True, **overrides: Any) -> RunResult:
        """Run ``scenario`` with ``overrides`` on the emulated fabric, or skip."""
        scen = api.load(scenario, overrides)
        skip_unless_runnable(scen)
        return api.emulate(scen, tmp_path_factory.mktemp("coflowbed-run"), check)

    return run


def skip_unless_runnable(scen: Any) -> None:
    """Skip the calling test, naming what this machine lacks to emulate ``scen``."""
    missing = _api().machine_missing(scen)
    if missing is not None:
        pytest.skip(f"coflowbed_run: {missing}")
