"""Flags shared by the subcommands: ``--plugin`` (a user's own policy, on the command
line, compared against the shipped ones), ``--set`` on run/simulate/compare, ``-q``/``-v``
after the subcommand, ``--version``, and plugins keyed by their path."""

from __future__ import annotations

import json
import logging

import pytest

from coflowbed.cli.main import main
from coflowbed.results.files import read_csv_rows
from controller import policies
from controller.policies.plugins import import_plugin, module_name
from tests.data import FB_TRACE, MECHANISM_SCENARIO

PLUGIN = '''
from controller.policies import Decision, Policy, register


@register
class Mine(Policy):
    """Last-come first-served: the newest coflow first."""

    name = "{name}"
    compression = "top"

    def decide(self, states, fabric, now):
        return {{s.coflow_id: Decision(rank=(-s.arrival_seq,)) for s in states}}
'''
SCENARIO = """
name: two
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_bw_mbps: 100}
levels: 4
policy: fair
workload:
  coflows:
    - {id: old, arrival_s: 0, flows: [{src: h11, dst: h21, bytes: 20000000}]}
    - {id: new, arrival_s: 0.5, flows: [{src: h12, dst: h21, bytes: 5000000}]}
"""


@pytest.fixture
def plugin(tmp_path):
    """A plugin file registering ``test-cli-mine``; unregistered afterwards."""
    path = tmp_path / "sub" / "policy.py"
    path.parent.mkdir()
    path.write_text(PLUGIN.format(name="test-cli-mine"))
    yield path
    if "test-cli-mine" in policies.names():
        policies.unregister("test-cli-mine")


def test_compare_takes_a_plugins_policy_from_the_command_line(tmp_path, plugin, capsys):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "cmp"
    argv = ["compare", str(tmp_path / "s.yaml"), "--sim", "--out", str(out)]
    assert main([*argv, "--policies", "fair,hermod,test-cli-mine", "--plugin", str(plugin)]) == 0
    rows = {r["policy"]: r for r in read_csv_rows(out / "compare.csv")}
    assert set(rows) == {"fair", "hermod", "test-cli-mine"}
    assert "\ntest-cli-mine " in capsys.readouterr().out  # a row of the short table
    # the plugin's own order ran: the newest coflow first, so "new" (5 MB) takes the
    # link alone from 0.5 s (0.4 s) and "old" waits; under fair they share it
    mine = {r["coflow_id"]: r for r in read_csv_rows(out / "test-cli-mine" / "r1" / "coflows.csv")}
    fair = {r["coflow_id"]: r for r in read_csv_rows(out / "fair" / "r1" / "coflows.csv")}
    assert mine["new"]["cct_s"] == pytest.approx(0.4, rel=1e-6)
    assert fair["new"]["cct_s"] > 0.5 and mine["old"]["cct_s"] >= fair["old"]["cct_s"]


def test_a_plugin_flag_names_the_flag_when_the_file_is_bad(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "bad.py").write_text("raise RuntimeError('oops')\n")
    for name, says in (("nowhere.py", "no such file"), ("bad.py", "RuntimeError: oops")):
        argv = ["simulate", str(tmp_path / "s.yaml"), "--plugin", str(tmp_path / name)]
        assert main([*argv, "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("coflowbed: error: --plugin") and says in err and "\n" not in err
    assert not (tmp_path / "r").exists()


def test_plugins_are_keyed_by_path_and_load_once(tmp_path):
    a, b = tmp_path / "a" / "policy.py", tmp_path / "b" / "policy.py"
    for path, name in ((a, "test-key-a"), (b, "test-key-b")):
        path.parent.mkdir()
        path.write_text(PLUGIN.format(name=name))
    try:
        import_plugin(a)
        import_plugin(b)  # the same file name elsewhere is another plugin
        import_plugin(a)  # the same file again is no error (and not run twice)
        assert {"test-key-a", "test-key-b"} <= set(policies.names())
        assert module_name(a) != module_name(b)
        assert module_name(a) == module_name(a.parent / ".." / "a" / "policy.py")
    finally:
        for name in ("test-key-a", "test-key-b"):
            if name in policies.names():
                policies.unregister(name)


def test_set_overrides_a_scenario_key_on_simulate(tmp_path):
    out = tmp_path / "r"
    argv = ["simulate", str(MECHANISM_SCENARIO), "--out", str(out)]
    assert main([*argv, "--set", "fabric.host_bw_mbps=40"]) == 0
    slow = json.loads((out / "summary.json").read_text())["iteration_time_s"]
    assert main(["simulate", str(MECHANISM_SCENARIO), "--out", str(tmp_path / "d")]) == 0
    fast = json.loads((tmp_path / "d" / "summary.json").read_text())["iteration_time_s"]
    assert slow > 1.5 * fast  # 40 Mbit/s hosts instead of 80


def test_a_bad_set_names_the_flag(tmp_path, capsys):
    argv = ["simulate", str(MECHANISM_SCENARIO), "--out", str(tmp_path / "r"), "--set", "x"]
    assert main(argv) == 2
    assert "coflowbed: error: --set: x: expected KEY=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_quiet_and_verbose_go_after_the_subcommand_too(tmp_path):
    root = logging.getLogger()
    argv = ["simulate", str(MECHANISM_SCENARIO), "--out", str(tmp_path / "r"), "-q", "-q"]
    old = root.handlers[:], root.level
    root.handlers[:] = []
    try:
        assert main(argv) == 0
        assert root.level == logging.ERROR  # INFO + 2 x 10
    finally:
        root.handlers[:], root.level = old


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as end:
        main(["--version"])
    assert end.value.code == 0 and capsys.readouterr().out.startswith("coflowbed 0.")


def test_sweep_runs_a_plugins_policy_in_its_workers(tmp_path, plugin):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "sweep.yaml").write_text(
        "name: mine\nscenario: s.yaml\npolicies: [fair, test-cli-mine]\n"
    )
    out = tmp_path / "sw"
    argv = ["sweep", str(tmp_path / "sweep.yaml"), "--jobs", "1", "--out", str(out)]
    assert main([*argv, "--plugin", str(plugin)]) == 0
    rows = {r["policy"]: r for r in read_csv_rows(out / "sweep.csv")}
    assert set(rows) == {"fair", "test-cli-mine"} and rows["test-cli-mine"]["coflows"] == 2


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--limit", "0"], "--limit: must be >= 1, got 0"),
        (["--skip", "-1"], "--skip: must be 0..525 (the trace has 526), got -1"),
        (["--skip", "526"], "--skip: must be 0..525 (the trace has 526), got 526"),
    ],
)
def test_a_trace_window_that_leaves_nothing_is_refused(tmp_path, capsys, flags, says):
    argv = ["simulate", "--trace", str(FB_TRACE), *flags, "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"coflowbed: error: {says}"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["-o", "{tmp}/no/such/dag.json"], "-o/--output: {tmp}/no/such/dag.json: its folder"),
        (["--hosts", "h1,h1,h2,h3,h4,h5,h6,h7"], "--hosts: h1: a host is named twice"),
        (["--line-rate-mbps", "-5", "-o", "{tmp}/d.json"], "--line-rate-mbps: must be > 0"),
    ],
)
def test_workload_refuses_bad_flags_before_writing(tmp_path, capsys, flags, says):
    argv = ["workload", "tiny-moe", *(f.format(tmp=tmp_path) for f in flags)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"coflowbed: error: {says.format(tmp=tmp_path)}") and "\n" not in err
    assert list(tmp_path.iterdir()) == []
