"""``coflowbed policies``, ``scenarios`` and ``presets``: every name a user can use, a
line each that fits 100 columns."""

from __future__ import annotations

from coflowbed.cli import catalogue
from coflowbed.cli.main import main
from controller import policies
from tests.data import SCENARIOS
from workload.presets import preset_names


def _names(lines: list[str]) -> list[str]:
    """The first column of a listing's rows (header and parameter lines left out)."""
    return [ln.split()[0] for ln in lines[1:] if not ln.startswith(" ")]


def test_policies_lists_each_with_its_parameters(capsys):
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert _names(lines) == policies.names()
    dclas = lines.index(next(ln for ln in lines if ln.startswith("dclas ")))
    assert lines[dclas + 1].split() == ["parameters:", "queues=8,", *lines[dclas + 1].split()[2:]]
    assert all(len(ln) <= catalogue.WIDTH for ln in lines)


def test_scenarios_and_presets_list_every_shipped_one(capsys):
    assert main(["scenarios"]) == 0 and main(["presets"]) == 0
    out = capsys.readouterr().out.splitlines()
    split = next(i for i, ln in enumerate(out) if ln.startswith("preset "))
    assert _names(out[:split]) == sorted(p.stem for p in SCENARIOS.glob("*.yaml"))
    assert _names(out[split:]) == preset_names()
    assert all(len(ln) <= catalogue.WIDTH for ln in out)


def test_first_line_is_the_first_sentence_without_markup():
    doc = "Varys ``SEBF``: smallest first.  More text.\n\nA second paragraph."
    assert catalogue.first_line(doc) == "Varys SEBF: smallest first."
