"""The pytest plugin for users (entry point ``pytest11``; docs/python-api.md): fixtures
``coflowbed_run`` and ``coflowbed_sim``, callables ``(scenario, **overrides)`` that run
the scenario emulated or in the flow-level simulator into a fresh folder under pytest's
temporary directory and return its ``coflowbed.RunResult``; ``coflowbed_compare``, which
compares policies on one scenario and returns the ``coflowbed.Comparison``; and two
markers, ``coflowbed_emulated`` and ``coflowbed_bmv2``, that skip a test, with the
reason, on a machine that cannot emulate (no root, Open vSwitch, Mininet; or no BMv2).

Its only hooks register the markers and apply them; nothing else changes a collection or
a report.  It imports nothing of the emulator or the simulator until a test needs it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from coflowbed.api import Comparison
    from coflowbed.results.read import RunResult

RunFixture = Callable[..., "RunResult"]  # (scenario, /, **overrides) -> RunResult
CompareFixture = Callable[..., "Comparison"]  # (scenario, policies, /, **options) -> ...
MARKERS = {
    "coflowbed_emulated": ("ovs", "needs a machine that emulates (root, Open vSwitch, Mininet)"),
    "coflowbed_bmv2": ("bmv2", "needs a machine that emulates BMv2 switches (and root, OVS)"),
}


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers (``--strict-markers`` knows them)."""
    for name, (_switch, text) in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}; skipped otherwise, with the reason")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a marked test, naming what this machine lacks."""
    for name, (switch, _text) in MARKERS.items():
        if item.get_closest_marker(name) is not None:
            lacks = _api().machine_lacks(switch)
            if lacks is not None:
                pytest.skip(f"{name}: {lacks}")


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


@pytest.fixture
def coflowbed_compare(tmp_path_factory: pytest.TempPathFactory) -> CompareFixture:
    """``coflowbed_compare(scenario, policies, sim=True, repeat=1, seeds=None,
    **overrides)``: the scenario under each policy (simulated by default; ``sim=False``
    emulates, or skips with the reason); returns the ``coflowbed.Comparison`` (its
    ``.speedup(policy)``, ``.stats(policy)``, ``.run(policy)``)."""
    api = _api()

    def compare(
        scenario: str | Path, policies: Sequence[str], /, *, sim: bool = True, **options: Any
    ) -> Comparison:
        """Compare ``policies`` on ``scenario`` into a fresh temporary folder."""
        if not sim:
            skip_unless_runnable(api.load(scenario, {}))
        out = tmp_path_factory.mktemp("coflowbed-compare")
        return api.compare(scenario, policies, out=out, sim=sim, **options)

    return compare


def skip_unless_runnable(scen: Any) -> None:
    """Skip the calling test, naming what this machine lacks to emulate ``scen``."""
    missing = _api().machine_missing(scen)
    if missing is not None:
        pytest.skip(f"coflowbed_run: {missing}")
