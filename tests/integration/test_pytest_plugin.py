"""The pytest plugin on the real fabric: a user's test with ``coflowbed_run`` runs the
default scenario (OVS, os-ken, Mininet, tc; ~35 s) in a pytest of its own and passes on
its CCT and fidelity assertions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.processes, pytest.mark.sockets]
pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

# urgent (level 0, 10 MB per flow over 100 Mbit/s host links, 0.8 s alone) against bulk
# (level 7) on the same downlinks: measured 0.83-1.23 s in three runs (2026-12-01).
USER_TEST = """
def test_urgent_overtakes_bulk(coflowbed_run):
    res = coflowbed_run("mechanism")
    alone_s = 10e6 * 8 / 100e6
    assert not res.partial and (res.path / "controller.log").exists()
    assert res.coflow("urgent").cct_s <= 1.75 * alone_s < res.coflow("bulk").cct_s
    assert res.fidelity is not None and res.fidelity.coflows_compared == 3
    assert 0.67 < res.fidelity.iteration_ratio < 1.5 and 0.67 < res.fidelity.cct_ratio_p50 < 1.5
"""


def test_a_users_coflowbed_run_test_passes_on_the_fabric(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(USER_TEST)
    result = pytester.runpytest_subprocess("-p", "coflowbed.testing.pytest_plugin", timeout=150)
    result.assert_outcomes(passed=1)
