"""The Python API: coflowbed.run / simulate / compare, scenarios by path or shipped name,
overrides, and a cheap ``import coflowbed``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import coflowbed
from coflowbed import api
from coflowbed.core.errors import UserError
from coflowbed.experiment.scenario import find_scenario
from coflowbed.results.read import RunResult

REPO = Path(__file__).resolve().parents[3]
MECHANISM = REPO / "coflowbed" / "scenarios" / "mechanism.yaml"


def test_a_bare_name_is_a_shipped_scenario_and_a_file_wins(tmp_path, monkeypatch):
    assert find_scenario("mechanism") == MECHANISM
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mechanism").write_text("name: mine\n")
    assert find_scenario("mechanism") == Path("mechanism")
    with pytest.raises(UserError, match=r"^nowhere: no such file or shipped scenario \(shipped: "):
        api.load("nowhere")


def test_simulate_returns_the_folder_it_wrote(tmp_path):
    res = coflowbed.simulate("mechanism", out=tmp_path / "sim", policy="fair")
    assert res == RunResult.read(tmp_path / "sim") and res.path == (tmp_path / "sim").resolve()
    assert res.summary.policy == "fair" and res.fidelity is None and not res.partial
    assert {cf.coflow_id for cf in res.coflows} == {"bulk", "urgent", "metered"}


def test_overrides_reach_the_simulation(tmp_path):
    slow = coflowbed.simulate(MECHANISM, out=tmp_path / "a")
    faster = {"fabric.host_bw_mbps": 200, "fabric.fabric_bw_mbps": 400}
    fast = coflowbed.simulate(MECHANISM, out=tmp_path / "b", **faster)
    # urgent (level 0) has its path to itself: every link twice as fast, half the time
    assert fast.coflow("urgent").cct_s == pytest.approx(slow.coflow("urgent").cct_s / 2)


def test_a_bad_override_starts_nothing(tmp_path):
    with pytest.raises(UserError, match=r"\(overrides\): fabric.host_bw_mbpz: unknown key"):
        coflowbed.simulate("mechanism", out=tmp_path / "x", **{"fabric.host_bw_mbpz": 200})
    assert not (tmp_path / "x").exists()


def test_run_without_root_is_a_user_error_before_any_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(UserError, match="an emulated run needs root"):
        coflowbed.run("mechanism", out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_compare_wraps_the_comparison_table(tmp_path):
    cmp = coflowbed.compare(
        "mechanism", ["fair", "sebf"], out=tmp_path / "cmp", sim=True, repeat=2, seeds=[1, 2]
    )
    assert list(cmp.runs) == ["fair", "sebf"] and not cmp.partial
    table = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert cmp.table.to_dict() == table
    sebf = cmp.stats("sebf").metrics["avg_cct_s"]
    assert sebf.mean == pytest.approx(cmp.run("sebf", 2).summary.avg_cct_s)  # the simulator
    assert cmp.speedup("fair").value == pytest.approx(1.0)
    assert [r.path.name for r in cmp.runs["fair"]] == ["r1", "r2"]
    with pytest.raises(LookupError, match="'hermod' not compared"):
        cmp.run("hermod")
    with pytest.raises(LookupError, match="runs 1..2"):
        cmp.run("fair", 3)


def test_compare_refuses_a_bad_repeat_before_running(tmp_path):
    with pytest.raises(UserError, match="seeds: 1 seeds for repeat 2"):
        coflowbed.compare("mechanism", ["fair"], out=tmp_path / "c", sim=True, repeat=2, seeds=[1])
    with pytest.raises(UserError, match="repeat: must be an integer >= 1"):
        coflowbed.compare("mechanism", ["fair"], out=tmp_path / "c", sim=True, repeat=0)
    assert not (tmp_path / "c").exists()


def test_compare_refuses_an_unknown_policy(tmp_path):
    with pytest.raises(UserError, match="unknown policy 'nope'"):
        coflowbed.compare("mechanism", ["fair", "nope"], out=tmp_path / "c", sim=True)
    assert not (tmp_path / "c").exists()


@pytest.mark.processes
def test_import_coflowbed_stays_cheap():
    code = (
        "import sys, coflowbed; heavy = ('numpy', 'numba', 'matplotlib', 'os_ken', 'yaml',"
        " 'coflowbed.api'); print([m for m in heavy if m in sys.modules])"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
