"""Registry: built-in names, user registration, and clear errors for bad names/params."""

from __future__ import annotations

import pytest

import controller.policies as policies
from controller.policies import CoflowState, Decision, FabricView, Policy
from workload.dag import Coflow, Flow

BUILTIN = {
    "fair",
    "fifo",
    "sebf",
    "dclas",
    "sincronia",
    "hermod",
    "lina",
    "bytescheduler",
    "dp-first",
    "pp-first",
    "ep-first",
}


def _state(cid: str, seq: int) -> CoflowState:
    """A one-flow coflow state."""
    return CoflowState(Coflow(cid, (Flow(f"{cid}.f", "h1", "h2", 1000),)), 0.0, seq)


def test_every_builtin_name_is_registered_and_instantiates():
    assert BUILTIN <= set(policies.names())
    for name in BUILTIN:
        pol = policies.get(name)
        assert pol.name == name
        out = pol.decide([_state("a", 0)], FabricView.uniform(["h1", "h2"], 1e9), 0.0)
        assert set(out) == {"a"} and isinstance(out["a"].rank, tuple)


def test_clairvoyance_flags_match_the_papers():
    assert policies.get("sebf").clairvoyant and policies.get("sincronia").clairvoyant
    assert not policies.get("dclas").clairvoyant and not policies.get("hermod").clairvoyant


def test_aliases_select_the_same_class():
    assert type(policies.get("megatron")) is type(policies.get("fair"))
    assert type(policies.get("varys")) is type(policies.get("sebf"))
    assert type(policies.get("aalo")) is type(policies.get("dclas"))


def test_user_policy_registered_by_decorator_is_found_by_name():
    @policies.register
    class Reverse(Policy):
        """Last-come first-served (test policy)."""

        name = "test-lcfs"

        def decide(self, states, fabric, now):
            """Rank by negated arrival."""
            return {s.coflow_id: Decision(rank=(-s.arrival_seq,)) for s in states}

    try:
        assert "test-lcfs" in policies.names()
        pol = policies.get("test-lcfs")
        assert isinstance(pol, Reverse)
        out = pol.decide([_state("a", 0), _state("b", 1)], FabricView.uniform(["h1", "h2"], 1), 0)
        assert out["b"].rank < out["a"].rank
    finally:
        policies.unregister("test-lcfs")
    assert "test-lcfs" not in policies.names()


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as err:
        policies.get("hermes")
    msg = str(err.value)
    assert "'hermes'" in msg and "\n" not in msg
    for name in BUILTIN:
        assert name in msg


@pytest.mark.parametrize(
    "name, params, words",
    [
        ("hermod", {"interleave": True}, ["'hermod'", "interleave", "encoding, interleaved"]),
        ("fifo", {"k": 3}, ["'fifo'", "k"]),
        ("hermod", {"interleaved": "yes"}, ["'interleaved'", "true or false", "'yes'"]),
        ("dclas", {"queues": 9}, ["'queues'", "1..8", "9"]),
        ("dclas", {"multiplier": 1}, ["'multiplier'", "> 1"]),
        ("dclas", {"first_threshold_bytes": -5}, ["'first_threshold_bytes'", "> 0"]),
        ("sebf", {"top_up": 1}, ["'top_up'"]),
        ("sincronia", {"weights": {"a": 0}}, ["'weights'", "'a'", "> 0"]),
        ("lina", {"backward_only": None}, ["'backward_only'"]),
    ],
)
def test_bad_params_give_one_line_error_naming_key_and_reason(name, params, words):
    with pytest.raises(ValueError) as err:
        policies.get(name, **params)
    msg = str(err.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg


def test_registering_a_taken_name_or_a_non_policy_fails():
    class Clash(Policy):
        """Uses a built-in name."""

        name = "fifo"

        def decide(self, states, fabric, now):
            """Unused."""
            return {}

    with pytest.raises(ValueError, match="already taken"):
        policies.register(Clash)
    with pytest.raises(ValueError, match="not a subclass of Policy"):
        policies.register(dict)
    assert type(policies.get("fifo")).__name__ == "Fifo"
