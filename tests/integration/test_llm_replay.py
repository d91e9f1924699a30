"""An LLM job replayed on the emulated fabric (root): every iteration completes, and
the measured time respects the DAG's lower bounds (critical path at line rate, and
compute alone)."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from tests.cli import coflowbed_ok
from workload import dagjson
from workload.critpath import iteration_bounds

pytestmark = [pytest.mark.root, pytest.mark.slow]

HOST_MBPS = 100


@pytest.fixture(scope="module")
def tiny_moe_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("llm")
    scen = {
        "name": "tiny-moe-2it",
        "policy": "fair",
        "timeout_s": 300,
        "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 2, "host_bw_mbps": HOST_MBPS},
        "workload": {"job": "tiny-moe", "overrides": {"iterations": 2}},
    }
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(scen))
    out = tmp / "run"
    coflowbed_ok("run", path, "--out", out)
    return out


def test_every_iteration_completes(tiny_moe_run):
    summary = json.loads((tiny_moe_run / "summary.json").read_text())
    dag = dagjson.load(tiny_moe_run / "dag.json")
    assert summary["partial"] is False
    assert summary["iterations"] == 2 == len(dag.iterations())
    assert summary["coflows"] == len(dag.coflows) and set(summary["cct_by_type"]) >= {
        "PP",
        "EP",
        "DP",
    }


def test_measured_time_is_above_the_lower_bounds(tiny_moe_run):
    dag = dagjson.load(tiny_moe_run / "dag.json")
    with (tiny_moe_run / "iterations.csv").open() as fh:
        finish = {int(r["iteration"]): float(r["finish_s"]) for r in csv.DictReader(fh)}
    at_line_rate = iteration_bounds(dag, HOST_MBPS * 1e6)
    compute_alone = iteration_bounds(dag, float("inf"))  # coflows cost nothing
    assert set(finish) == set(at_line_rate) == {0, 1}
    for it, t in finish.items():
        assert compute_alone[it] > 0 and at_line_rate[it] > compute_alone[it]
        assert t >= at_line_rate[it], (it, t, at_line_rate[it])
