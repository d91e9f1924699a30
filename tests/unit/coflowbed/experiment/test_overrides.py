"""Scenario overrides: dotted keys set before validation, errors naming the override."""

from __future__ import annotations

import pytest

from coflowbed.core.errors import UserError
from coflowbed.experiment.overrides import FlagOverrides, apply_overrides
from coflowbed.experiment.scenario import load_scenario
from tests.data import REPO

MECHANISM = REPO / "coflowbed" / "scenarios" / "mechanism.yaml"


def test_dotted_keys_reach_nested_mappings_and_leave_the_input_alone():
    raw = {"fabric": {"spines": 2, "leaves": 4}, "levels": 8}
    out = apply_overrides(raw, {"fabric.spines": 1, "levels": 4, "policy.name": "x"}, "s.yaml")
    assert out == {"fabric": {"spines": 1, "leaves": 4}, "levels": 4, "policy": {"name": "x"}}
    assert raw == {"fabric": {"spines": 2, "leaves": 4}, "levels": 8}


def test_a_key_inside_a_plain_value_is_refused_naming_it():
    with pytest.raises(UserError, match=r"^s.yaml \(overrides\): fabric.spines.x: fabric.spines"):
        apply_overrides({"fabric": {"spines": 2}}, {"fabric.spines.x": 1}, "s.yaml")


@pytest.mark.parametrize("key", ["", "fabric.", ".levels", "a..b"])
def test_an_empty_segment_is_refused(key):
    with pytest.raises(UserError, match="not a dotted scenario key"):
        apply_overrides({}, {key: 1}, "s.yaml")


def test_overrides_change_the_loaded_scenario():
    scen = load_scenario(MECHANISM, {"fabric.host_bw_mbps": 200, "policy": "hermod", "seed": 7})
    assert (scen.plan.host_bw_mbps, scen.policy, scen.seed) == (200, "hermod", 7)
    assert scen.plan.fabric_bw_mbps == load_scenario(MECHANISM).plan.fabric_bw_mbps


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"fabric.host_bw_mbpz": 200}, "fabric.host_bw_mbpz: unknown key"),
        ({"polcy": "hermod"}, "polcy: unknown key"),
        ({"levels": 9}, "levels: must be <= 8"),
        ({"policy": "nope"}, "policy: unknown policy 'nope'"),
    ],
)
def test_a_bad_override_is_one_line_naming_the_override(overrides, key):
    with pytest.raises(UserError) as info:
        load_scenario(MECHANISM, overrides)
    message = str(info.value)
    assert message.startswith(f"{MECHANISM} (overrides): {key}") and "\n" not in message


def test_an_error_in_the_file_itself_still_names_the_file():
    with pytest.raises(UserError, match=rf"^{MECHANISM}: workload.coflows\[0\].level"):
        load_scenario(MECHANISM, {"levels": 4})  # the file's coflow at level 7 is now the error


@pytest.mark.parametrize(
    ("flags", "overrides", "message"),
    [
        ({"polcy": "--set"}, {"polcy": "x"}, "--set: polcy: unknown key (did you mean 'policy'?)"),
        ({"levels": "--set"}, {"levels": 9}, "--set: levels: must be <= 8"),
        ({"policy": "--policy"}, {"policy": "nope"}, "--policy: unknown policy 'nope'"),
        ({"fabric.spines": "--set"}, {"fabric.spines.x": 1}, f"{MECHANISM} (overrides): "),
    ],
)
def test_overrides_from_flags_are_blamed_on_the_flag(flags, overrides, message):
    with pytest.raises(UserError) as info:
        load_scenario(MECHANISM, FlagOverrides(overrides, flags))
    assert str(info.value).startswith(message)
