"""The sweep file's schema: strict keys, one-line errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from coflowbed.core.errors import UserError
from coflowbed.studies.sweep.spec import load_sweep
from tests.unit.coflowbed.studies.sweep.conftest import TINY, write


def test_tiny_sweep_is_read(tiny_sweep):
    spec = load_sweep(tiny_sweep)
    assert spec.keys == ("fabric.host_bw_mbps", "levels")
    assert spec.policies == ("fair", "hermod") and spec.seeds == (1,) and spec.mode == "sim"
    assert spec.scenario["workload"] == {"job": "tiny-moe"}


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        ("colour: red\n", "colour", "unknown"),
        ("mode: fast\n", "mode", "must be one of"),
        ("seeds: [1, 1]\n", "seeds", "twice"),
        ("plot: {x: nope}\n", "plot.x", "must be a grid key"),
        ("plot: {x: levels, style: dots}\n", "plot.style", "unknown"),
    ],
)
def test_bad_top_level_keys_name_file_and_key(tmp_path, extra, key, reason):
    path = write(tmp_path, TINY + extra)
    with pytest.raises(UserError) as err:
        load_sweep(path)
    assert err.value.source == str(path) and err.value.key == key
    assert reason in err.value.reason and "\n" not in str(err.value)


def test_unknown_policy_is_rejected(tmp_path):
    path = write(tmp_path, TINY.replace("[fair, hermod]", "[fair, best]"))
    with pytest.raises(UserError, match="policies: unknown policy 'best'"):
        load_sweep(path)


def test_grid_values_must_be_a_list(tmp_path):
    path = write(tmp_path, TINY.replace("levels: [2, 4]", "levels: 4"))
    with pytest.raises(UserError, match=r"grid\.levels: must be a non-empty list"):
        load_sweep(path)


def test_policy_is_not_a_grid_key(tmp_path):
    path = write(tmp_path, TINY + "  policy: [fair]\n")
    with pytest.raises(UserError, match=r"grid\.policy: a dotted scenario key"):
        load_sweep(path)


def test_scenario_file_is_relative_to_the_sweep(tmp_path):
    (tmp_path / "base.yaml").write_text("name: base\n")
    path = write(tmp_path, "scenario: base.yaml\npolicies: [fair]\n")
    spec = load_sweep(path)
    assert spec.scenario == {"name": "base"} and spec.scenario_path == tmp_path / "base.yaml"


@pytest.mark.parametrize(
    "name",
    ["bandwidth", "ecmp-seeds", "fabric-conditions", "job-conditions", "nic-per-gpu", "rail"],
)
def test_shipped_sweeps_are_valid(name):
    from coflowbed.studies.sweep.spec import find_sweep as sweep_path

    spec = load_sweep(sweep_path(Path(name)))
    assert spec.mode == "sim" and "fair" in spec.policies and spec.plot is not None
