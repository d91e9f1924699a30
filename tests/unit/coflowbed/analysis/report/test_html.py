"""report.html from a run folder and a comparison folder (the page's rendering in a real
browser: tests/integration/test_report_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coflowbed.analysis.report.environment import environment
from coflowbed.analysis.report.html import key_figures, page, write_report
from coflowbed.analysis.report.markup import sig3
from coflowbed.cli.commands.report import check_folder
from coflowbed.core.errors import UserError
from coflowbed.results.files import write_results
from coflowbed.results.records import CoflowRecord


def _run(folder):
    r = CoflowRecord("a", "EP", "j", 0, 0, 0, "", 0, 1, 10, arrival_s=0.0)
    r.finish_s, r.level = 2.0, 3
    write_results(
        folder,
        [],
        [r],
        [],
        False,
        {
            "switch": "ovs",
            "fidelity": {
                "iteration_ratio": 1.1,
                "sim_iteration_time_s": 1.0,
                "sim_avg_cct_s": 1.6,
                "cct_sum_ratio_by_type": {"EP": 1.25},
                "spine_link_ratio": [1.006, 1.09],
            },
        },
    )
    (folder / "fidelity.csv").write_text(
        "coflow_id,level,measured_cct_s,simulated_cct_s,ratio\na,3,2.0,1.6,1.25\n"
    )
    (folder / "scenario.yaml").write_text("name: <b>x</b>\n")


def test_an_emulated_figure_has_its_simulated_value_and_ratio(tmp_path):
    _run(tmp_path)
    rows = {
        r[0]: r[1:]
        for r in key_figures(tmp_path, json.loads((tmp_path / "summary.json").read_text()))
    }
    assert rows["avg_cct_s"] == (2.0, 1.6, pytest.approx(1.25))
    assert rows["max_cct_s"] == (2.0, 1.6, pytest.approx(1.25))
    assert rows["summed CCT ratio, EP coflows"] == (None, None, 1.25)
    assert rows["spine-link bytes, switch / model, lowest"] == (None, None, 1.006)
    assert rows["spine-link bytes, switch / model, highest"] == (None, None, 1.09)


def test_the_page_escapes_text_and_inlines_images(tmp_path):
    _run(tmp_path)
    (tmp_path / "x.png").write_bytes(b"\x89PNG fake")
    text = page(tmp_path)
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
    assert 'src="data:image/png;base64,iVBORyBmYWtl"' in text
    assert "http" not in text.replace('lang="en"', "")


def test_a_comparison_folder_renders_every_csv(tmp_path):
    (tmp_path / "compare.csv").write_text("policy,iteration_time_s\nfair,12.5\nhermod,10.1\n")
    (tmp_path / "runs.csv").write_text("policy,repeat\nfair,1\n")
    text = write_report(tmp_path).read_text()
    assert text.count("<table") == 2 and "<td>hermod</td><td>10.1</td>" in text
    assert '<a href="runs.csv">runs.csv</a>' in text


def test_a_folder_that_is_neither_run_nor_comparison_is_refused(tmp_path):
    with pytest.raises(UserError, match="not a run or comparison"):
        check_folder(tmp_path)


def test_a_run_page_shows_numbers_to_three_digits_and_its_plots_first(tmp_path):
    _run(tmp_path)
    (tmp_path / "coflows.csv").write_text(
        (tmp_path / "coflows.csv").read_text().replace("2.0", "2.0123456789")
    )
    (tmp_path / "timeline.png").write_bytes(b"\x89PNG fake")
    text = page(tmp_path)
    assert "2.0123456789" not in text and "<td>2.01</td>" in text
    assert text.index('alt="timeline.png"') < text.index("<h2>Coflows by type</h2>")


def test_the_environment_says_what_tcp_sent_again():
    """30,000 of 1,001,000 bytes is 3.00 %; an unmeasured run (simulated) has no value."""
    block = {"bytes": 30_000, "share": 30_000 / 1_001_000, "flows": 1, "flows_measured": 2}
    rows = dict(environment(Path("/nonexistent"), {"retransmitted": block}))
    assert rows["sent again by TCP"] == "30000 B (3.00 % of the bytes) by 1 of 2 flows"
    assert dict(environment(Path("/nonexistent"), {}))["sent again by TCP"] == sig3(None)


def test_the_environment_says_how_often_levels_moved():
    """A dynamic policy's run: moves up / down as the controller counted them; static
    levels and simulations have none."""
    key = "levels moved while running (up / down)"
    rows = dict(environment(Path("/nonexistent"), {"level_moves": {"up": 132, "down": 7}}))
    assert rows[key] == "132 / 7"
    assert dict(environment(Path("/nonexistent"), {}))[key] == sig3(None)
