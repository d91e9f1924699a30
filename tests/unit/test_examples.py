"""Every file of examples/ runs as its README says: the scenario simulates, the plugin's
policy is compared against fair and Hermod from the command line, the job generates, and
the user's pytest file passes (its emulated test skipped where the machine cannot)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from coflowbed.cli.main import main
from coflowbed.results.files import read_csv_rows
from controller import policies
from controller.policies.plugins import module_name
from tests.data import REPO

EXAMPLES = REPO / "examples"
MINE = "pp-then-least-sent"
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _forget_the_plugin():
    """Each test loads the example plugin afresh (as a new process would)."""
    yield
    if MINE in policies.names():
        policies.unregister(MINE)
    sys.modules.pop(module_name(EXAMPLES / "my_policy.py"), None)


def test_the_scenario_simulates(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["simulate", "examples/my_scenario.yaml", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "plugins" / "0_my_policy.py").is_file()


def test_the_plugin_is_compared_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    argv = ["compare", "examples/my_scenario.yaml", "--sim", "--out", str(tmp_path / "c")]
    plugin = ["--plugin", "examples/my_policy.py"]
    assert main([*argv, "--policies", f"fair,hermod,{MINE}", *plugin]) == 0
    rows = {r["policy"]: r for r in read_csv_rows(tmp_path / "c" / "compare.csv")}
    assert set(rows) == {"fair", "hermod", MINE} and rows[MINE]["iteration_time_s"] > 0


def test_the_job_generates(tmp_path):
    assert main(["workload", str(EXAMPLES / "my_job.yaml"), "-o", str(tmp_path / "d.json")]) == 0
    assert (tmp_path / "d.json").stat().st_size > 1000


def test_the_users_pytest_file_passes(pytester, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # no emulated run inside the unit tests
    for name in ("my_policy.py", "my_job.yaml", "my_scenario.yaml", "test_my_policy.py"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    result = pytester.runpytest("-p", "coflowbed.testing.pytest_plugin", "-rs", "test_my_policy.py")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *coflowbed_emulated: an emulated run needs root*"])
