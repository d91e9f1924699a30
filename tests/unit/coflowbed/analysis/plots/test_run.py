"""Plots from a run folder, and the policy comparison table, on results written by
``write_results`` (no fabric needed)."""

from __future__ import annotations

import json

from coflowbed.analysis.plots import run as run_plots
from coflowbed.analysis.plots.run import plot_run
from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.files import read_csv_rows, write_results
from coflowbed.results.records import CoflowRecord, FlowRecord, IterationRecord
from coflowbed.studies.compare import compare
from tests.data import MECHANISM_SCENARIO as MECHANISM, SCENARIOS


def _write_run(out, ccts: dict[str, float | None]) -> dict:
    recs = []
    for i, (cid, cct) in enumerate(ccts.items()):
        r = CoflowRecord(
            cid,
            "PP" if i % 2 else "DP",
            "j",
            0,
            i,
            0,
            "",
            0,
            1,
            1000,
            arrival_s=float(i),
            level=i % 8,
        )
        r.start_s = float(i)
        r.finish_s = None if cct is None else i + cct
        recs.append(r)
    flows = [FlowRecord(f"{c.coflow_id}.0", c.coflow_id, "h11", "h21", 1000) for c in recs]
    return write_results(
        out,
        flows,
        recs,
        [IterationRecord(0, 0.0, 5.0)],
        partial=any(c is None for c in ccts.values()),
    )


def test_plots_are_written_as_png(tmp_path):
    _write_run(tmp_path, {"a": 1.0, "b": 2.0, "c": None})
    paths = plot_run(tmp_path)
    assert [p.name for p in paths] == ["timeline.png", "cct_cdf.png", "gantt.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 1000


def test_compare_tabulates_every_policy_with_speedups_against_fair(tmp_path):
    scen = load_scenario(MECHANISM)
    ccts = {"fair": 2.0, "fifo": 4.0, "sebf": 1.0}
    seen = []

    def run_one(s, out):
        seen.append(s.policy)
        return _write_run(out, {"x": ccts[s.policy], "y": ccts[s.policy]})

    compare(scen, ["fair", "fifo", "sebf"], tmp_path, run_one)
    assert seen == ["fair", "fifo", "sebf"]
    by = {r["policy"]: r for r in read_csv_rows(tmp_path / "compare.csv")}
    assert by["sebf"]["speedup_avg_cct"] == 2.0 and by["fifo"]["speedup_avg_cct"] == 0.5
    assert by["fair"]["avg_cct_DP_s"] == 2.0 and by["fifo"]["n"] == 1
    stats = json.loads((tmp_path / "compare.json").read_text())["stats"]
    assert [s["speedups"]["speedup_avg_cct"]["value"] for s in stats] == [1.0, 0.5, 2.0]
    table = [ln for ln in (tmp_path / "compare.md").read_text().splitlines() if ln[:1] == "|"]
    assert len(table) == 5 and table[4].startswith("| sebf | 1 | False |")
    assert (tmp_path / "compare.png").is_file()


def test_compare_in_the_simulator_from_the_cli(tmp_path, capsys):
    from coflowbed.cli.main import main

    scen = SCENARIOS / "tiny-moe.yaml"
    assert (
        main(["compare", str(scen), "--policies", "fair,dp-first", "--sim", "--out", str(tmp_path)])
        == 0
    )
    rows = {r["policy"]: r for r in read_csv_rows(tmp_path / "compare.csv")}
    assert rows["fair"]["speedup_iteration_time"] == 1.0
    assert rows["dp-first"]["iteration_time_s"] > 0 and "\ndp-first " in capsys.readouterr().out
    assert (
        json.loads((tmp_path / "fair" / "r1" / "summary.json").read_text())["mode"] == "simulated"
    )


def test_timeline_marks_the_runs_faults(tmp_path, monkeypatch):
    from coflowbed.analysis.plots import run as plots
    from coflowbed.experiment import faults

    _write_run(tmp_path, {"a": 1.0, "b": 2.0})
    rec = faults.FaultRecord.of(faults.Fault(0, "link", "l1-s1", 0.5, None, 1.0))
    rec.injected_s, rec.rerouted_s, rec.reroute_ms, rec.up_s = 0.5, 0.51, 10.0, 1.5
    late = faults.FaultRecord.of(faults.Fault(1, "link", "l2-s1", 9.0))  # never injected
    faults.write_csv(tmp_path, [rec, late])
    marked: list[str] = []
    real = plots.mark_fault
    monkeypatch.setattr(
        plots, "mark_fault", lambda ax, f, end: (marked.append(f["target"]), real(ax, f, end))
    )
    plots.plot_run(tmp_path)
    assert marked == ["l1-s1", "l2-s1"]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    real(ax, faults.summary_block([rec])[0], 3.0)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["l1-s1 down, rerouted in 10 ms"] and len(ax.patches) == 1
    plt.close(fig)


def test_the_cct_cdf_has_a_line_per_job_and_type_when_there_are_several_jobs():
    from coflowbed.analysis.plots.run import cct_groups

    rows = [
        {"job": "a", "ctype": "EP", "cct_s": 0.3},
        {"job": "a", "ctype": "EP", "cct_s": 0.1},
        {"job": "b", "ctype": "EP", "cct_s": 0.2},
        {"job": "b", "ctype": "DP", "cct_s": None},
    ]
    assert cct_groups(rows) == {"a EP": [0.1, 0.3], "b EP": [0.2]}
    one = [dict(r, job="job0") for r in rows]
    assert cct_groups(one) == {"EP": [0.1, 0.2, 0.3]}


def _png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[16:24]
    return int.from_bytes(head[:4], "big"), int.from_bytes(head[4:], "big")


def test_a_large_timeline_packs_coflows_into_lanes_and_fits_a_screen(tmp_path):
    """600 coflows (one row each would be 17,000 px high): at most 8 in x 110 dpi."""
    ccts = {f"c{i}": 30.0 for i in range(600)}  # each overlaps the next 29: 30 lanes per type
    _write_run(tmp_path, ccts)
    plot_run(tmp_path)
    width, height = _png_size(tmp_path / "timeline.png")
    assert width == 990 and height <= run_plots.MAX_TIMELINE_IN * 110


def test_lanes_hold_coflows_that_do_not_overlap_and_group_them_by_type():
    rows = [
        {"ctype": "EP", "arrival_s": 0.0, "finish_s": 2.0},
        {"ctype": "DP", "arrival_s": 0.5, "finish_s": 1.0},
        {"ctype": "EP", "arrival_s": 1.0, "finish_s": 3.0},  # overlaps the first EP
        {"ctype": "EP", "arrival_s": 2.0, "finish_s": None},  # the first EP lane is free
    ]
    placed, ticks = run_plots.lanes(rows)
    assert [lane for lane, _ in placed] == [0, 1, 2, 1]  # DP lane 0, EP lanes 1-2
    assert ticks == {0.0: "DP (1 coflows, 1 lanes)", 1.5: "EP (3 coflows, 2 lanes)"}
