"""Own pytest checks on measured CCTs and iteration times (docs/python-api.md).

Run them with ``pytest examples/test_my_policy.py`` (the coflowbed plugin is loaded by
itself where coflowbed is installed); the emulated test is skipped, with the reason, on
a machine that cannot emulate."""

from pathlib import Path

import pytest

SCENARIO = Path(__file__).with_name("my_scenario.yaml")


def test_my_policy_is_no_slower_than_fair(coflowbed_compare):
    cmp = coflowbed_compare(SCENARIO, ["fair", "pp-then-least-sent"])
    assert cmp.speedup("pp-then-least-sent").value >= 1.0


def test_every_coflow_finishes_in_the_model(coflowbed_sim):
    res = coflowbed_sim(SCENARIO)
    assert not res.partial and res.iteration_time_s > 0


@pytest.mark.coflowbed_emulated
def test_the_emulator_agrees_with_the_model(coflowbed_run):
    # against the model with the run's own controller delay: a policy that re-ranks while
    # flows run still pays 5-15 % more on the emulator (docs/emulation.md)
    res = coflowbed_run(SCENARIO)
    assert res.fidelity is not None
    assert res.fidelity.iteration_ratio_with_delay is not None
    assert res.fidelity.iteration_ratio_with_delay < 1.2
