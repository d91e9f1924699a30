"""coflowbed.analysis.report.compared: a comparison folder's page (from compare.json, a
fake comparison's run folders): the answer first with compare.json's numbers, every run's
own page written and linked, compact tables to 3 significant digits, no compare.md box,
the environment the runs share once."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from coflowbed.analysis.report import compared, environment
from coflowbed.analysis.report.html import write_report
from coflowbed.analysis.report.markup import sig3
from coflowbed.experiment.scenario import load_scenario
from coflowbed.studies.compare import compare
from tests.compare_fakes import FakeRuns
from tests.data import MECHANISM_SCENARIO

TIMES = {"fair": [10.0, 12.0], "hermod": [8.0, 9.5]}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A two-repetition comparison of fake runs (seeds 1 and 2) with its report."""
    out = tmp_path_factory.mktemp("cmp")
    compare(load_scenario(MECHANISM_SCENARIO), list(TIMES), out, FakeRuns(TIMES), 2, [1, 2])
    write_report(out)
    return out


def _body(folder) -> str:
    return (folder / "report.html").read_text().split("<body>", 1)[1]


def test_compare_json_loads_back_into_the_same_comparison(folder):
    saved = json.loads((folder / "compare.json").read_text())
    assert compared.load(folder).to_dict() == saved


def test_a_moved_comparison_finds_its_runs_under_its_own_folder(folder, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    runs = compared.load(moved).runs
    assert {r.run_dir for r in runs} == {str(moved / r.name) for r in runs}


def test_the_page_opens_with_the_answer_in_compare_json_numbers(folder):
    saved = json.loads((folder / "compare.json").read_text())
    hermod = next(s for s in saved["stats"] if s["policy"] == "hermod")["speedups"]
    it, cct = hermod["speedup_iteration_time"], hermod["speedup_avg_cct"]
    answer = re.search(r'<p class="answer">(.*?)</p>', _body(folder)).group(1)
    assert answer == (
        f"hermod is better than fair on iteration time ({sig3(it['value'])}× faster "
        f"[{sig3(it['ci_low'])}, {sig3(it['ci_high'])}]) and better than fair on average CCT "
        f"({sig3(cct['value'])}× faster [{sig3(cct['ci_low'])}, {sig3(cct['ci_high'])}])."
    )
    assert _body(folder).index('class="answer"') < _body(folder).index("<h2>")


def test_the_interval_sentence_comes_from_the_runs_seeds(folder):
    assert "differences between seeds 1, 2" in _body(folder)


def test_every_run_has_its_own_page_linked_from_the_comparison(folder):
    body = _body(folder)
    for name in ("fair/r1", "fair/r2", "hermod/r1", "hermod/r2"):
        assert (folder / name / "report.html").is_file()
        assert f'<a href="{name}/report.html">{name}</a>' in body
        own = (folder / name / "report.html").read_text()
        assert f"<title>{name}</title>" in own and '<a href="../../report.html">' in own


def test_tables_show_three_digits_and_compare_md_is_only_linked(folder):
    body = _body(folder)
    cells = re.findall(r"<td>([^<]*)</td>", "".join(re.findall(r"<table.*?</table>", body)))
    fractions = [x for c in cells for x in re.findall(r"\d+\.\d+", c)]
    assert len(fractions) > 20
    assert all(len(x.replace(".", "").lstrip("0")) <= 3 for x in fractions), fractions
    assert "<pre>" not in body and "| policy |" not in body
    assert '<a href="compare.md">compare.md</a>' in body


def test_the_comparison_plots_are_drawn_and_inlined(folder):
    body = _body(folder)
    for name in ("compare_iteration.png", "compare_cct_types.png", "compare_cct_cdf.png"):
        assert (folder / name).is_file() and f'alt="{name}"' in body
    assert not (folder / "compare_fidelity.png").exists()  # fake runs: no model check


def test_the_environment_says_a_shared_value_once_and_differing_ones_per_run(tmp_path):
    for name, switch in (("a", "ovs"), ("b", "ovs"), ("c", "bmv2")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"switch": switch, "levels": 8}))
    rows = dict(environment.merged([(n, tmp_path / n) for n in "abc"]))
    assert rows["levels"] == "8"
    assert rows["switch"] == "ovs (a, b); bmv2 (c)"


def test_the_ecmp_seeds_and_the_mode_come_from_the_run_folders(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    for run in compared.load(copy).runs:
        (Path(run.run_dir) / "scenario.yaml").write_text("fabric:\n  ecmp_seed: 3\n")
        summary = Path(run.run_dir) / "summary.json"
        summary.write_text(json.dumps({**json.loads(summary.read_text()), "mode": "simulated"}))
    c = compared.load(copy)
    assert compared.ecmp_seeds(c) == {3} and compared.simulated(c)
    write_report(copy)
    body = _body(copy)
    assert "seeds 1, 2 (a workload draw each; ECMP seed 3); the simulator adds no noise" in body
    assert compared.SIMULATED_NOTE in body
