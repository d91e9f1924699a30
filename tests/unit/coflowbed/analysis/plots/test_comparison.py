"""coflowbed.analysis.plots.comparison: iteration bars with their CI as error bars, and one CCT CDF
panel per coflow type with a line per policy over its complete runs pooled."""

from __future__ import annotations

import pytest

from coflowbed.analysis.comparison import ComparedRun, PlannedRun, tabulate
from coflowbed.analysis.plots import comparison as compare_plots
from coflowbed.experiment.scenario import load_scenario
from coflowbed.studies.compare import compare
from tests.compare_fakes import FakeRuns
from tests.data import MECHANISM_SCENARIO

TIMES = {"fair": [10.0, 12.0, 11.0], "hermod": [8.0, 9.0, 10.0]}


@pytest.fixture
def result(tmp_path):
    fake = FakeRuns(TIMES, partial={("hermod", 3)})
    return compare(load_scenario(MECHANISM_SCENARIO), list(TIMES), tmp_path, fake, 3)


def test_ccts_are_pooled_per_type_and_policy_over_complete_runs(result):
    pooled = compare_plots.pooled_ccts(result)
    assert sorted(pooled) == ["DP", "PP"]
    assert pooled["DP"]["fair"] == [5.0, 5.5, 6.0]
    assert pooled["DP"]["hermod"] == [4.0, 4.5]  # hermod/r3 is partial: left out


def test_iteration_bars_carry_the_confidence_interval(result, tmp_path, monkeypatch):
    bars = []
    real = compare_plots.plt.Axes.bar

    def spy(ax, x, height, **kw):
        bars.append((x, height, kw.get("yerr")))
        return real(ax, x, height, **kw)

    monkeypatch.setattr(compare_plots.plt.Axes, "bar", spy)
    out = compare_plots.iteration_ci(result, tmp_path / "i.png")
    fair = result.stats[0].metrics["iteration_time_s"]
    assert bars[0][:2] == (0, 11.0)
    (low,), (high,) = bars[0][2]
    assert (low, high) == pytest.approx((11.0 - fair.ci_low, fair.ci_high - 11.0))
    assert bars[1][1] == 8.5  # hermod's two complete runs
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_one_cdf_panel_per_coflow_type(result, tmp_path, monkeypatch):
    titles = []
    real = compare_plots.save_figure

    def spy(fig, out):
        titles.extend(ax.get_title() for ax in fig.axes)
        lines = [len(ax.get_lines()) for ax in fig.axes]
        assert lines == [2, 2]
        return real(fig, out)

    monkeypatch.setattr(compare_plots, "save_figure", spy)
    compare_plots.cct_cdf_by_type(result, tmp_path / "c.png")
    assert titles == ["DP coflows", "PP coflows"]


def _checked(policy: str, k: int, it: float) -> ComparedRun:
    """A checked emulated run: the model's iteration time and emulated / simulated."""
    model = {"fair": 10.0, "hermod": 8.0}[policy]
    metrics = {
        "iteration_time_s": it,
        "avg_cct_s": it / 4,
        "avg_cct_DP_s": it / 3,
        "sim_iteration_time_s": model,
        "fidelity_iter": it / model,
        "fidelity_sum_DP": 1.1,
    }
    return ComparedRun(policy, k, 1, f"/x/{policy}/r{k}", False, 3, None, metrics)


@pytest.fixture
def checked():
    its = {"fair": [10.5, 11.0], "hermod": [8.2, 8.6]}
    plan = [PlannedRun(p, k, 1) for k in (1, 2) for p in its]
    runs = [_checked(p, k, its[p][k - 1]) for k in (1, 2) for p in its]
    return tabulate("s", "s.yaml", plan, runs, False)


def _spy_bars(monkeypatch) -> list:
    bars: list = []
    real = compare_plots.plt.Axes.bar

    def spy(ax, x, height, *args, **kw):
        bars.append((x, height, kw.get("label")))
        return real(ax, x, height, *args, **kw)

    monkeypatch.setattr(compare_plots.plt.Axes, "bar", spy)
    return bars


def test_the_models_iteration_time_stands_beside_each_measured_bar(checked, tmp_path, monkeypatch):
    bars = _spy_bars(monkeypatch)
    compare_plots.iteration_ci(checked, tmp_path / "i.png")
    drawn = [v for x, h, _ in bars for v in (x, h)]
    assert drawn == pytest.approx([-0.2, 10.75, 0.2, 10.0, 0.8, 8.4, 1.2, 8.0])
    assert bars[1][2] == "model (simulated)"


def test_average_cct_per_type_has_a_bar_per_policy(checked, tmp_path, monkeypatch):
    bars = _spy_bars(monkeypatch)
    assert compare_plots.cct_by_type(checked, tmp_path / "t.png") is not None
    assert [(lbl, h) for _, h, lbl in bars] == [
        ("fair", [pytest.approx(10.75 / 3)]),
        ("hermod", [pytest.approx(8.4 / 3)]),
    ]


def test_emulated_vs_simulated_is_drawn_only_when_the_runs_were_checked(checked, result, tmp_path):
    assert compare_plots.fidelity_ratios(checked) == {
        "iteration": "fidelity_iter",
        "summed CCT DP": "fidelity_sum_DP",
    }
    assert compare_plots.fidelity_bars(checked, tmp_path / "f.png").is_file()
    assert compare_plots.fidelity_bars(result, tmp_path / "g.png") is None  # no check
    assert not (tmp_path / "g.png").exists()
