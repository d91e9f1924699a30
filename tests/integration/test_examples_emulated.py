"""The user's pytest file of examples/ passes where the machine can emulate (root, Open
vSwitch): its emulated test runs ``examples/my_scenario.yaml`` under the example plugin
and holds the emulator to the model within 15 % (the unit suite runs the same file with
the emulated test skipped)."""

from __future__ import annotations

import shutil
import sys

import pytest

from controller import policies
from controller.policies.plugins import module_name
from tests.data import REPO

pytestmark = [pytest.mark.root, pytest.mark.slow]
pytest_plugins = ["pytester"]

EXAMPLES = REPO / "examples"
FILES = ("my_policy.py", "my_job.yaml", "my_scenario.yaml", "test_my_policy.py")


@pytest.fixture(autouse=True)
def _forget_the_plugin():
    """The example plugin loaded afresh, and forgotten after (as by a new process)."""
    yield
    if "pp-then-least-sent" in policies.names():
        policies.unregister("pp-then-least-sent")
    sys.modules.pop(module_name(EXAMPLES / "my_policy.py"), None)


def test_the_users_pytest_file_passes_with_its_emulated_test(pytester):
    for name in FILES:
        shutil.copy(EXAMPLES / name, pytester.path / name)
    result = pytester.runpytest("-p", "coflowbed.testing.pytest_plugin", "-rs", "test_my_policy.py")
    result.assert_outcomes(passed=3)
