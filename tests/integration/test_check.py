"""The emulator checked against the flow-level simulator (root): an emulated run of the
default scenario and its simulation agree on every coflow's CCT.

Tolerance 15 %: the model has no TCP slow start, connection set-up or meter bursts; on
10-25 MB flows at 100 Mbit/s these cost a few percent (measured ratios 0.97-1.06).  The
default fabric's 200 Mbit/s core keeps ECMP's choice of spine (which the simulator cannot
reproduce) out of the result."""

from __future__ import annotations

import pytest

from coflowbed.commands.check import compare_run
from tests.cli import SCENARIOS, coflowbed_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_default_scenario_agrees_with_its_simulation(tmp_path):
    out = tmp_path / "run"
    coflowbed_ok("run", SCENARIOS / "mechanism.yaml", "--out", out, timeout=300)
    rows = compare_run(out)
    assert {r["coflow_id"] for r in rows} == {"bulk", "urgent", "metered"}
    for r in rows:
        assert r["ratio"] == pytest.approx(1.0, abs=0.15), r
