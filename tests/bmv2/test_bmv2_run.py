"""A whole orchestrated run on BMv2 switches (``switch: bmv2``), through the CLI: the
P4Runtime controller, the BMv2 fabric, agents, results.  Skipped without BMv2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coflowbed.results import read_coflows_csv

pytestmark = [pytest.mark.root, pytest.mark.bmv2, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_default_bmv2_scenario_runs_with_priority_and_meter(tmp_path):
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "coflowbed", "run",
                          str(REPO / "coflowbed/scenarios/default-bmv2.yaml"), "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["partial"] is False
    cf = {r["coflow_id"]: r for r in read_coflows_csv(out / "coflows.csv")}
    assert cf["bulk"]["finish_s"] > cf["urgent"]["finish_s"]  # level 7 yields to level 0
    # 1 MB through a 2 Mbit/s meter: 4 s, within the OVS fabric's 15 %
    assert cf["metered"]["cct_s"] == pytest.approx(1e6 * 8 / 2e6, rel=0.15)
