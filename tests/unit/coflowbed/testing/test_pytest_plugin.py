"""The pytest plugin for users, through pytester: a user's test with ``coflowbed_sim``
passes or fails on its CCT bound, one with ``coflowbed_run`` is skipped with the reason
where the machine lacks what an emulated run needs; the entry point is declared and,
auto-loaded, is the same plugin as ``-p coflowbed.testing.pytest_plugin``."""

from __future__ import annotations

import os
import shutil
import tomllib

import pytest

import coflowbed.testing.pytest_plugin as plugin
from tests.data import REPO

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module", autouse=True)
def _modules_loaded(tmp_path_factory):
    """Import everything a simulation and a comparison import, once, before pytester's
    in-process runs: pytester unloads the modules such a run imported, and numpy's and
    numba's cannot be loaded twice in one process."""
    import coflowbed.emulation.runner  # noqa: F401  (the emulated path, up to its skip)
    from coflowbed import api

    api.compare("mechanism", ["fair"], out=tmp_path_factory.mktemp("warm"), sim=True)


PLUGIN = ("-p", "coflowbed.testing.pytest_plugin")

# A user's test: urgent (10 MB per flow over 100 Mbit/s host links) within 5 % of the
# time it takes alone, whatever the policy passed in.
CCT_BOUND = """
def test_urgent_is_not_slowed(coflowbed_sim):
    res = coflowbed_sim("mechanism", policy="{policy}")
    alone_s = 10e6 * 8 / 100e6
    assert res.coflow("urgent").cct_s <= 1.05 * alone_s
    assert res.path.is_relative_to(res.path.parents[1]) and (res.path / "summary.json").exists()
"""


def test_a_cct_bound_that_holds_passes(pytester):
    pytester.makepyfile(CCT_BOUND.format(policy="static"))  # urgent at level 0
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_a_cct_bound_that_does_not_hold_fails(pytester):
    pytester.makepyfile(CCT_BOUND.format(policy="fair"))  # urgent shares with bulk
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*assert *cct_s <= *"])


def test_a_bad_override_fails_the_users_test_naming_it(pytester):
    pytester.makepyfile(
        "def test_x(coflowbed_sim):\n    coflowbed_sim('default', **{'fabric.bw': 1})\n"
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UserError: *(overrides): fabric.bw: unknown key*"])


RUN_TEST = """
def test_on_the_fabric(coflowbed_run):
    coflowbed_run("{scenario}")
    raise AssertionError("ran although the machine cannot")
"""


def test_coflowbed_run_skips_without_root(pytester, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    pytester.makepyfile(RUN_TEST.format(scenario="mechanism"))
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED *coflowbed_run: *mechanism.yaml: an emulated run needs root*"]
    )


def test_coflowbed_run_skips_a_bmv2_scenario_without_bmv2(pytester, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "simple_switch_grpc" else which(t))
    pytester.makepyfile(RUN_TEST.format(scenario="default-bmv2"))
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *coflowbed_run: *switch: bmv2 needs BMv2*"])


def test_coflowbed_run_skips_without_open_vswitch(pytester, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "ovs-vswitchd" else which(t))
    pytester.makepyfile(RUN_TEST.format(scenario="mechanism"))
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *coflowbed_run: *ovs-vswitchd not installed*"])


def entry_points() -> dict[str, str]:
    """The pytest11 entry points pyproject.toml declares."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    return data["project"]["entry-points"]["pytest11"]


def test_the_entry_point_is_declared_and_names_the_plugin():
    assert entry_points() == {"coflowbed.testing.pytest_plugin": "coflowbed.testing.pytest_plugin"}


def test_the_plugins_hooks_are_the_markers_only():
    hooks = sorted(name for name in vars(plugin) if name.startswith("pytest_"))
    assert hooks == ["pytest_configure", "pytest_runtest_setup"]
    assert callable(plugin.coflowbed_run) and callable(plugin.coflowbed_compare)


COMPARE_TEST = """
def test_hermod_beats_fair(coflowbed_compare):
    cmp = coflowbed_compare("tiny-moe", ["fair", "hermod"])
    assert cmp.speedup("hermod").value {op} 1.0
"""


def test_a_comparison_fixture_gives_the_speedup(pytester):
    pytester.makepyfile(COMPARE_TEST.format(op=">"))
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)
    pytester.makepyfile(COMPARE_TEST.format(op="<"))
    pytester.runpytest(*PLUGIN).assert_outcomes(failed=1)


MARKED = """
import pytest


@pytest.mark.{marker}
def test_on_the_fabric():
    raise AssertionError("ran although the machine cannot")
"""


@pytest.mark.parametrize("marker", ["coflowbed_emulated", "coflowbed_bmv2"])
def test_a_marked_test_is_skipped_with_the_reason(pytester, monkeypatch, marker):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    pytester.makepyfile(MARKED.format(marker=marker))
    result = pytester.runpytest(*PLUGIN, "-rs", "--strict-markers")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED *{marker}: an emulated run needs root*"])


def test_the_bmv2_marker_needs_bmv2(pytester, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "simple_switch_grpc" else which(t))
    pytester.makepyfile(MARKED.format(marker="coflowbed_bmv2"))
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *coflowbed_bmv2: bmv2 needs BMv2*"])


def test_a_failed_assertion_shows_a_short_result(pytester):
    pytester.makepyfile(
        "def test_x(coflowbed_sim):\n    res = coflowbed_sim('mechanism')\n    assert res is None\n"
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    line = next(ln for ln in result.outlines if "RunResult(" in ln)
    assert "static, 3/3 coflows, iteration 4 s" in line and len(line) < 200


def test_the_installed_entry_point_loads_the_fixtures_alone_and_beside_p(pytester, monkeypatch):
    """An installed distribution with pyproject's entry point (a dist-info on sys.path)."""
    site = pytester.mkdir("site")
    info = site / "coflowbed_ep-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: coflowbed-ep\nVersion: 0\n")
    lines = [f"{name} = {target}" for name, target in entry_points().items()]
    (info / "entry_points.txt").write_text("[pytest11]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(site))
    pytester.makepyfile("def test_x(coflowbed_sim, coflowbed_run):\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_without_the_plugin_there_are_no_fixtures(pytester):
    """The check above is not vacuous: the fixtures come from the plugin alone."""
    pytester.makepyfile("def test_x(coflowbed_sim):\n    pass\n")
    pytester.runpytest("-p", "no:coflowbed.testing.pytest_plugin").assert_outcomes(errors=1)


USER_POLICY = '''
from controller.policies import Decision, Policy, register


@register
class Lcfs(Policy):
    """Last-come first-served."""

    name = "test-plugin-lcfs"
    compression = "top"

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision(rank=(-s.arrival_seq,)) for s in states}
'''
USER_SCENARIO = """
name: lcfs
plugins: [lcfs.py]
policy: test-plugin-lcfs
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_bw_mbps: 100}
levels: 4
workload:
  coflows:
    - {id: old, arrival_s: 0, flows: [{src: h11, dst: h21, bytes: 20000000}]}
    - {id: new, arrival_s: 0.5, flows: [{src: h12, dst: h21, bytes: 5000000}]}
"""
USER_POLICY_TESTS = """
from pathlib import Path

SCENARIO = Path(__file__).with_name("lcfs.yaml")
ALONE_S = 5e6 * 8 / 100e6


def test_lcfs_lets_the_newest_coflow_through(coflowbed_sim):
    assert coflowbed_sim(SCENARIO).coflow("new").cct_s <= 1.05 * ALONE_S


def test_fifo_does_not(coflowbed_sim):
    assert coflowbed_sim(SCENARIO, policy="fifo").coflow("new").cct_s <= 1.05 * ALONE_S
"""


def test_a_users_own_registered_policy(pytester):
    """docs/python-api.md's example: the user's policy passes its bound, FIFO fails it."""
    from controller import policies

    pytester.makepyfile(lcfs=USER_POLICY, test_lcfs=USER_POLICY_TESTS)
    (pytester.path / "lcfs.yaml").write_text(USER_SCENARIO)
    try:
        result = pytester.runpytest(*PLUGIN, "-rf")
    finally:
        policies.unregister("test-plugin-lcfs")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["FAILED test_lcfs.py::test_fifo_does_not - AssertionError: assert *"]
    )
