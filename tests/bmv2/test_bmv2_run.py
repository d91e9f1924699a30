"""A whole orchestrated run on BMv2 switches (``switch: bmv2``), through the CLI: the
P4Runtime controller, the BMv2 fabric, agents, results.  Skipped without BMv2."""

from __future__ import annotations

import json

import pytest

from coflowbed.results.files import read_coflows_csv
from tests.cli import SCENARIOS, coflowbed_ok

pytestmark = [pytest.mark.root, pytest.mark.bmv2, pytest.mark.slow]


def test_default_bmv2_scenario_runs_with_priority_and_meter(tmp_path):
    out = tmp_path / "run"
    coflowbed_ok("run", SCENARIOS / "default-bmv2.yaml", "--out", out)
    assert json.loads((out / "summary.json").read_text())["partial"] is False
    cf = {r["coflow_id"]: r for r in read_coflows_csv(out / "coflows.csv")}
    assert cf["bulk"]["finish_s"] > cf["urgent"]["finish_s"]  # level 7 yields to level 0
    # 1 MB through a 2 Mbit/s meter: 4 s, within the OVS fabric's 15 %
    assert cf["metered"]["cct_s"] == pytest.approx(1e6 * 8 / 2e6, rel=0.15)
