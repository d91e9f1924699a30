"""The sweep driver with a fake run function: validation before anything runs, the
table and its speed-ups, resumption (complete runs skipped, same table), Ctrl-C."""

from __future__ import annotations

import json

import pytest
import yaml

from coflowbed.core.errors import UserError
from coflowbed.studies.sweep import backends
from coflowbed.studies.sweep.driver import run_sweep
from coflowbed.studies.sweep.grid import RunSpec
from coflowbed.studies.sweep.spec import load_sweep
from coflowbed.studies.sweep.worker import RESULT_FILE, SweepResult
from tests.unit.coflowbed.studies.sweep.conftest import TINY, write


class FakeRun:
    """Writes a result as the real worker does; iteration = 100 / bandwidth, hermod 20 %
    faster; raises KeyboardInterrupt at call ``stop_at`` (1-based)."""

    def __init__(self, stop_at: int | None = None, partial: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.stop_at, self.partial = stop_at, partial or set()

    def __call__(self, spec: RunSpec) -> SweepResult:
        self.calls.append(spec.run_id)
        if self.stop_at == len(self.calls):
            raise KeyboardInterrupt
        raw = yaml.safe_load(spec.scenario_yaml)
        it = 100 / raw["fabric"]["host_bw_mbps"] * (0.8 if spec.policy == "hermod" else 1.0)
        r = SweepResult(
            spec.run_id,
            spec.fingerprint,
            spec.run_id in self.partial,
            3,
            it,
            it / 10,
            it / 5,
            (("EP", it / 20),),
            0.5,
        )
        spec.out_dir.mkdir(parents=True, exist_ok=True)
        (spec.out_dir / RESULT_FILE).write_text(json.dumps(r.to_json()))
        return r


def test_table_rows_and_speedups(tiny_sweep, tmp_path):
    out = tmp_path / "out"
    fake = FakeRun()
    outcome = run_sweep(load_sweep(tiny_sweep), out, backends.serial, fake)
    assert (outcome.runs, outcome.skipped, outcome.ran, outcome.partial) == (8, 0, 8, False)
    data = json.loads((out / "sweep.json").read_text())
    assert data["partial"] is False and len(data["rows"]) == 8
    row = data["rows"][1]
    assert (row["fabric.host_bw_mbps"], row["levels"], row["policy"]) == (40, 2, "hermod")
    assert row["iteration_time_s"] == pytest.approx(2.0) and row["avg_cct_EP_s"] == 0.1
    assert row["speedup_iteration"] == pytest.approx(1.25)
    assert data["rows"][0]["speedup_iteration"] == pytest.approx(1.0)
    header = (out / "sweep.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["fabric.host_bw_mbps", "levels", "policy", "seed"]


def test_rerun_skips_complete_runs_and_gives_the_same_table(tiny_sweep, tmp_path):
    out = tmp_path / "out"
    spec = load_sweep(tiny_sweep)
    first = FakeRun(partial={"host_bw_mbps-80_levels-4_hermod_s1"})
    assert run_sweep(spec, out, backends.serial, first).partial
    second = FakeRun()
    outcome = run_sweep(spec, out, backends.serial, second)
    assert second.calls == ["host_bw_mbps-80_levels-4_hermod_s1"]  # only the partial one
    assert (outcome.skipped, outcome.ran, outcome.partial) == (7, 1, False)
    table = (out / "sweep.csv").read_text()
    third = FakeRun()
    assert run_sweep(spec, out, backends.serial, third).skipped == 8 and third.calls == []
    assert (out / "sweep.csv").read_text() == table


def test_changed_scenario_reruns_instead_of_reusing(tiny_sweep, tmp_path):
    out = tmp_path / "out"
    run_sweep(load_sweep(tiny_sweep), out, backends.serial, FakeRun())
    changed = write(tmp_path, TINY.replace("spines: 2", "spines: 1"), "changed.yaml")
    fake = FakeRun()
    run_sweep(load_sweep(changed), out, backends.serial, fake)
    assert len(fake.calls) == 8


def test_ctrl_c_keeps_finished_runs_and_marks_the_table_partial(tiny_sweep, tmp_path):
    out = tmp_path / "out"
    outcome = run_sweep(load_sweep(tiny_sweep), out, backends.serial, FakeRun(stop_at=3))
    assert outcome.interrupted and outcome.partial and len(outcome.rows) == 2
    data = json.loads((out / "sweep.json").read_text())
    assert data["partial"] is True and len(data["rows"]) == 2
    rest = FakeRun()
    assert run_sweep(load_sweep(tiny_sweep), out, backends.serial, rest).skipped == 2
    assert len(rest.calls) == 6


def test_bad_grid_key_is_rejected_before_anything_runs(tmp_path):
    path = write(tmp_path, TINY.replace("  levels: [2, 4]", "  fabric.colour: [red]"))
    fake = FakeRun()
    with pytest.raises(UserError) as err:
        run_sweep(load_sweep(path), tmp_path / "out", backends.serial, fake)
    assert str(path) in str(err.value) and "fabric.colour" in str(err.value)
    assert "unknown key" in str(err.value) and "\n" not in str(err.value)
    assert fake.calls == [] and not (tmp_path / "out").exists()


def test_a_grid_point_that_breaks_the_job_is_rejected_up_front(tmp_path):
    path = write(tmp_path, TINY.replace("  levels: [2, 4]", "  fabric.hosts_per_leaf: [4, 2]"))
    fake = FakeRun()
    with pytest.raises(UserError, match=r"hosts_per_leaf-2_fair_s1\).*needs 8 hosts"):
        run_sweep(load_sweep(path), tmp_path / "out", backends.serial, fake)
    assert fake.calls == []


def test_a_failing_run_is_recorded_and_the_sweep_is_partial(tiny_sweep, tmp_path):
    def boom(spec: RunSpec) -> SweepResult:
        raise RuntimeError("simulator broke")

    outcome = run_sweep(load_sweep(tiny_sweep), tmp_path / "out", backends.serial, boom)
    assert outcome.partial and all(
        r["error"] == "RuntimeError: simulator broke" for r in outcome.rows
    )


def test_the_named_plot_is_drawn_and_plot_redraws_it(tiny_sweep, tmp_path, capsys):
    from coflowbed.cli.main import main

    path = write(tmp_path, TINY + "plot: {x: fabric.host_bw_mbps, panels: levels}\n")
    out = tmp_path / "out"
    run_sweep(load_sweep(path), out, backends.serial, FakeRun())
    png = out / "sweep.png"
    assert png.stat().st_size > 1000
    png.unlink()
    assert main(["plot", str(out)]) == 0 and png.is_file()
    assert str(png) in capsys.readouterr().out
