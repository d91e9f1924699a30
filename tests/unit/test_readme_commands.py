"""The README's commands run as written.  Every ``coflowbed`` line of the README's shell
blocks that names no placeholder (``SCENARIO.yaml``, ``<run>``) and needs no emulated
fabric is run, in a scratch folder that sees the repository's ``coflowbed/``,
``examples/``, ``workload/`` and ``data/`` as the README's working directory does; each
must exit 0.  Emulated commands (``run``, ``compare`` without ``--sim``) are listed but
left to the integration tests (they need root and Open vSwitch)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.data import REPO

BLOCK = re.compile(r"```(?:sh|bash|console)\n(.*?)```", re.S)
SEEN_FROM_README = ("coflowbed", "examples", "workload", "data")
EMULATED = ("run", "clean", "check", "plot", "report")  # need a fabric or a run folder


def commands(text: str) -> list[list[str]]:
    """The ``coflowbed`` command lines of ``text``'s shell blocks, comments cut."""
    found = []
    for block in BLOCK.findall(text):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] in (".venv/bin/coflowbed", "coflowbed"):
                found.append(words[1:])
    return found


def runnable(argv: list[str]) -> bool:
    """A simulator-side command with nothing to fill in."""
    placeholder = any(re.search(r"<|>|\[|\]|\.\.\.|^[A-Z][A-Z_.]*$|SCENARIO", w) for w in argv)
    emulated = argv[0] in EMULATED or (argv[0] == "compare" and "--sim" not in argv)
    return not placeholder and not emulated


README_COMMANDS = commands((REPO / "README.md").read_text())


def test_the_readme_has_commands_to_run():
    assert len(README_COMMANDS) >= 5 and any(runnable(c) for c in README_COMMANDS)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize(
    "argv", [c for c in README_COMMANDS if runnable(c)], ids=lambda c: " ".join(c)[:60]
)
def test_a_readme_command_runs_as_written(argv, tmp_path):
    for name in SEEN_FROM_README:
        (tmp_path / name).symlink_to(REPO / name)
    res = subprocess.run(
        [sys.executable, "-m", "coflowbed", "-q", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, f"{' '.join(argv)}: {res.stderr[-2000:]}"


def test_placeholders_and_emulated_commands_are_told_apart():
    assert runnable(["simulate", "coflowbed/scenarios/mechanism.yaml"])
    assert not runnable(["simulate", "SCENARIO.yaml", "--policy", "hermod"])
    assert not runnable(["plot", "results/<run>/"])
    assert not runnable(["compare", "coflowbed/scenarios/small-moe.yaml", "--policies", "a"])
    assert runnable(["compare", "coflowbed/scenarios/small-moe.yaml", "--sim", "--policies", "a"])
    assert commands("```sh\n.venv/bin/coflowbed policies   # list\nls\n```\n") == [["policies"]]
