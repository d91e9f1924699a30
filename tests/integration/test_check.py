"""The emulator checked against the flow-level simulator (root): emulated runs of the
mechanism scenario and their simulations agree on every coflow's CCT.

Tolerance 15 %: the model has no TCP slow start, connection set-up or meter bursts; on
10-25 MB flows at 100 Mbit/s these cost a few percent (measured ratios 0.97-1.06).  The
default fabric's 200 Mbit/s core keeps ECMP's choice of spine (which the simulator cannot
reproduce) out of the result.

The median of RUNS runs per coflow is held to it, as in test_trust: "bulk" is starved by
"urgent" for 0.8 s, and in about one run in ten (20 runs at load 3 on 2026-12-02: bulk
2.84-3.03 s against 2.80 s simulated, once 3.21 s and once 3.42 s; CI: 3.80 s) its
sender's timeout retransmission is tail-dropped at its full bucket, so it resumes only at
its next, backed-off timeout, up to 1 s after its link freed (docs/emulation.md,
"Starved flows").  A single run past the bound is that artefact; the median of three
moving past it is the emulator drifting."""

from __future__ import annotations

import statistics
from dataclasses import asdict

import pytest

from coflowbed.analysis.fidelity import check_run
from tests.cli import SCENARIOS, coflowbed_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]

RUNS = 3


def test_mechanism_runs_agree_with_their_simulation(tmp_path):
    by_coflow: dict[str, list[float]] = {}
    for i in range(RUNS):
        out = tmp_path / f"run{i}"
        coflowbed_ok("run", SCENARIOS / "mechanism.yaml", "--out", out, timeout=300)
        for r in map(asdict, check_run(out)):
            by_coflow.setdefault(r["coflow_id"], []).append(r["ratio"])
    assert set(by_coflow) == {"bulk", "urgent", "metered"}
    for coflow, ratios in by_coflow.items():
        assert statistics.median(ratios) == pytest.approx(1.0, abs=0.15), (coflow, ratios)
