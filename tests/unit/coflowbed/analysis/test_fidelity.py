"""The fidelity figure of a run (``coflowbed.analysis.fidelity``) on run folders written as a real
run writes them (``write_inputs`` + ``write_results``), with measured CCTs chosen so that
the measured / simulated ratios can be worked out by hand.

Fabric of every scenario here: 2 leaves x 2 hosts at 80 Mbit/s = 1e7 B/s, so one flow of
1e7 B alone on its links takes 1 s in the model."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

from coflowbed.analysis import fidelity
from coflowbed.cli.commands import run as run_command
from coflowbed.cli.main import main
from coflowbed.emulation import runner
from coflowbed.emulation.runner import RunOutcome
from coflowbed.experiment.folders import write_inputs
from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.files import read_csv_rows, write_results
from coflowbed.results.records import CoflowRecord, IterationRecord
from coflowbed.studies import compare as compare_study, single
from controller import policies
from controller.policies.base import Decision, TableDecision

FABRIC = "fabric: {spines: 2, leaves: 2, hosts_per_leaf: 2, host_bw_mbps: 80}\nlevels: 4\n"

# Static levels: hi (level 0) alone 1 s; lo (level 3) waits behind it on h11's uplink, 2 s.
STATIC = (
    FABRIC
    + """\
policy: static
workload:
  coflows:
    - {id: hi, level: 0, flows: [{src: h11, dst: h21, bytes: 10000000}]}
    - {id: lo, level: 3, flows: [{src: h11, dst: h22, bytes: 10000000}]}
"""
)

# a (t=0) and b (t=0.5) share h11's uplink.  FIFO: a alone to 1.0 s (CCT 1.0), then b to
# 2.0 s (CCT 1.5); b's *last* level is 0 (alone at the end), so replaying the last levels
# (both 0, fair from 0.5 s) would give a 1.5 s and b 1.5 s instead.  Fair: 1.5 s and 1.5 s.
TWO = (
    FABRIC
    + """\
policy: fifo
workload:
  coflows:
    - {id: a, flows: [{src: h11, dst: h21, bytes: 10000000}]}
    - {id: b, arrival_s: 0.5, flows: [{src: h11, dst: h22, bytes: 10000000}]}
"""
)

# SEBF with MADD rates: x has 1e7 B h11->h21 and 5e6 B h12->h22, so MADD gives its second
# flow half of h12's rate (both end at 1 s).  w (3e6 B h12->h22) arrives at 0.6 s with the
# smaller bottleneck: it takes h12/h22 and x waits (rate 0: no cap, its level keeps it
# behind; its first flow goes on alone at full rate).  w ends at 0.9 s (CCT 0.3); x then
# has 1e6 B and 2e6 B left, MADD 0.2 s: x ends at 1.1 s.  With the rates as soft caps
# (``coflowbed simulate``) x's second flow would have used h12's spare half and ended at
# 0.5 s, x at 1.0 s.
MADD = (
    FABRIC
    + """\
policy: sebf
policy_rates: pacing
workload:
  coflows:
    - id: x
      flows: [{src: h11, dst: h21, bytes: 10000000}, {src: h12, dst: h22, bytes: 5000000}]
    - {id: w, arrival_s: 0.6, flows: [{src: h12, dst: h22, bytes: 3000000}]}
"""
)

# A 40 Mbit/s meter on a 1e7 B flow: 2 s under 'static'; other policies install no meter.
METERED = (
    FABRIC
    + """\
policy: static
workload:
  coflows:
    - {id: m, level: 0, rate_mbps: 40, flows: [{src: h11, dst: h21, bytes: 10000000}]}
"""
)


def write_run(
    run: Path,
    text: str,
    ccts: dict[str, float | None],
    levels: dict[str, int],
    iteration_s: float | None,
    policy: str | None = None,
) -> dict:
    """A run folder of scenario ``text`` whose coflows measured ``ccts`` (None: unfinished)."""
    src = run.parent / f"{run.name}.yaml"
    src.write_text(text)
    scen = load_scenario(src, {"policy": policy} if policy else None)
    write_inputs(scen, run)
    return write_records(run, scen, ccts, levels, iteration_s)


def write_records(
    run: Path,
    scen,
    ccts: dict[str, float | None],
    levels: dict[str, int],
    iteration_s: float | None,
) -> dict:
    """coflows.csv, iterations.csv, summary.json as the runner writes them."""
    recs = []
    for cf in scen.dag.coflows:
        r = CoflowRecord.of(cf)
        r.arrival_s, r.level = cf.release_s, levels.get(cf.coflow_id)
        cct = ccts.get(cf.coflow_id)
        r.finish_s = None if cct is None else cf.release_s + cct
        recs.append(r)
    its = [IterationRecord(0, 0.0, None if iteration_s is None else iteration_s)]
    partial = any(c is None for c in ccts.values())
    return write_results(run, [], recs, its, partial, {"policy": scen.policy})


def figure_of(
    run: Path,
    text: str,
    ccts: dict[str, float | None],
    levels: dict[str, int],
    iteration_s: float | None,
    policy: str | None = None,
) -> dict:
    """The fidelity block ``attach`` writes for a run folder made by ``write_run``."""
    return fidelity.attach(run, write_run(run, text, ccts, levels, iteration_s, policy)).fidelity


def ratios(out: dict) -> tuple:
    """(iteration ratio, CCT ratio p50, p90) of a block, for one approx comparison."""
    return out["iteration_ratio"], out["cct_ratio_p50"], out["cct_ratio_p90"]


def test_static_levels_ratios_by_hand(tmp_path):
    run = tmp_path / "run"
    out = figure_of(run, STATIC, {"hi": 1.2, "lo": 3.0}, {"hi": 0, "lo": 3}, 3.3)
    # ratios 1.2 and 1.5; nearest-rank median 1.2, p90 1.5; iteration 3.3 / 2.0
    assert out["reference"] == "levels" and out["sim_policy"] == "static"
    assert ratios(out) == pytest.approx((1.65, 1.2, 1.5))
    assert (out["sim_iteration_time_s"], out["sim_avg_cct_s"]) == pytest.approx((2.0, 1.5))
    assert (out["coflows_compared"], out["coflows_total"], out["partial"]) == (2, 2, False)
    assert out["levels"] == 4 and out["rate_caps"] == "none" and "leafspine" in out["model"]
    assert out["sim_wall_s"] >= 0
    assert json.loads((run / "summary.json").read_text())["fidelity"] == out
    table = {r["coflow_id"]: r for r in read_csv_rows(run / "fidelity.csv")}
    assert table["lo"]["simulated_cct_s"] == pytest.approx(2.0) and table["lo"]["level"] == 3


def test_static_policy_uses_its_recorded_levels_not_its_ranks(tmp_path):
    # fair on TWO, both recorded at level 0: the model shares h11 -> 1.5 s each.
    run = tmp_path / "run"
    out = figure_of(run, TWO, {"a": 1.5, "b": 3.0}, {"a": 0, "b": 0}, 4.0, policy="fair")
    assert (out["reference"], out["sim_policy"]) == ("levels", "static")
    assert ratios(out) == pytest.approx((2.0, 1.0, 2.0))


def test_dynamic_policy_is_simulated_with_the_policy_not_its_last_levels(tmp_path):
    run = tmp_path / "run"
    # measured exactly as FIFO would: a 1.0 s, b 1.5 s; b's last level 0 (alone at the end)
    out = figure_of(run, TWO, {"a": 1.0, "b": 1.5}, {"a": 0, "b": 0}, 2.0)
    assert (out["reference"], out["sim_policy"], out["rate_caps"]) == ("policy", "fifo", "none")
    # the last levels would have given a 1.5 s in the model: a ratio of 0.667
    assert ratios(out) == pytest.approx((1.0, 1.0, 1.0))


def test_policy_rates_are_hard_caps_and_zero_rates_no_cap(tmp_path):
    run = tmp_path / "run"
    out = figure_of(run, MADD, {"x": 1.1, "w": 0.3}, {"x": 0, "w": 0}, 1.1)
    assert (out["reference"], out["sim_policy"], out["rate_caps"]) == ("policy", "sebf", "pacing")
    assert ratios(out) == pytest.approx((1.0, 1.0, 1.0)) and out["sim_avg_cct_s"] == pytest.approx(
        0.7
    )


def test_emulated_rates_wrapper_keeps_ranks_and_drops_uninstalled_rates():
    class Fixed:
        name, clairvoyant, hold_rates, byte_thresholds, compression = (
            "p",
            True,
            True,
            (5,),
            "quantile",
        )

        def decide(self, states, fabric, now):
            return {"c": Decision((2,), {"f0": 1e6, "f1": 0.0, "f2": 100.0})}

        def decide_table(self, table, ids, seq, now):
            return TableDecision([(2,)], np.array([1e6, 0.0, 100.0]))

    w = fidelity.EmulatedRates(Fixed())
    assert w.rates_are_limits and (w.name, w.hold_rates, w.byte_thresholds, w.compression) == (
        "p",
        True,
        (5,),
        "quantile",
    )
    assert w.decide([], None, 0.0) == {"c": Decision((2,), {"f0": 1e6})}
    got = w.decide_table(None, ["c"], np.zeros(1), 0.0)
    assert got.ranks == [(2,)] and got.flow_rates_bps.tolist() == [1e6, np.inf, np.inf]
    assert w.saw_rates


# One EP and two PP coflows, each alone on host links of one leaf (no spine, so no ECMP
# choice): 1 s each in the model.
TYPED = (
    FABRIC
    + """\
policy: static
workload:
  coflows:
    - {id: e, type: EP, level: 0, flows: [{src: h11, dst: h12, bytes: 10000000}]}
    - {id: p, type: PP, level: 0, flows: [{src: h21, dst: h22, bytes: 10000000}]}
    - {id: q, type: PP, level: 0, flows: [{src: h22, dst: h21, bytes: 10000000}]}
"""
)


def test_summed_ratio_per_coflow_type_by_hand(tmp_path):
    """Measured e 0.9 s, p 1.5 s, q 2.5 s against 1 s each: EP 0.9 / 1 = 0.9, PP
    (1.5 + 2.5) / (1 + 1) = 2.0; the per-coflow median (1.5) hides that split.  It is
    in summary.json, in the one-line description and in fidelity.csv's ``ctype``."""
    run = tmp_path / "run"
    out = figure_of(run, TYPED, {"e": 0.9, "p": 1.5, "q": 2.5}, {"e": 0, "p": 0, "q": 0}, 2.5)
    by_type = out["cct_sum_ratio_by_type"]
    assert by_type.keys() == {"EP", "PP"}
    assert by_type["EP"] == pytest.approx(0.9) and by_type["PP"] == pytest.approx(2.0)
    assert out["cct_ratio_p50"] == pytest.approx(1.5)
    assert "summed CCT EP x0.900 / PP x2.000" in fidelity.describe(out)
    table = {r["coflow_id"]: r["ctype"] for r in read_csv_rows(run / "fidelity.csv")}
    assert table == {"e": "EP", "p": "PP", "q": "PP"}


def test_unfinished_coflows_stay_out_of_the_summed_ratios(tmp_path):
    """q never finished: PP is p alone (1.5 / 1); a run of one type is described without
    the split."""
    run = tmp_path / "run"
    out = figure_of(run, TYPED, {"e": 0.9, "p": 1.5, "q": None}, {"e": 0, "p": 0, "q": 0}, None)
    assert out["cct_sum_ratio_by_type"] == pytest.approx({"EP": 0.9, "PP": 1.5})
    one = figure_of(tmp_path / "one", STATIC, {"hi": 1.5, "lo": 2.0}, {"hi": 0, "lo": 3}, 2.0)
    assert one["cct_sum_ratio_by_type"] == pytest.approx({"OTHER": 3.5 / 3.0})
    assert "summed CCT" not in fidelity.describe(one)


def test_static_meters_are_modelled_only_under_static(tmp_path):
    out = figure_of(tmp_path / "run", METERED, {"m": 2.0}, {"m": 0}, 2.0)
    assert out["rate_caps"] == "meters" and out["sim_avg_cct_s"] == pytest.approx(2.0)
    out = figure_of(tmp_path / "fair", METERED, {"m": 2.0}, {"m": 0}, 2.0, policy="fair")
    assert out["rate_caps"] == "none" and out["sim_avg_cct_s"] == pytest.approx(1.0)


def test_partial_run_compares_the_finished_coflows_and_says_so(tmp_path):
    run = tmp_path / "run"
    out = figure_of(run, STATIC, {"hi": 1.5, "lo": None}, {"hi": 0, "lo": 3}, None)
    assert out["partial"] is True and (out["coflows_compared"], out["coflows_total"]) == (1, 2)
    assert out["cct_ratio_p50"] == pytest.approx(1.5) and out["sim_avg_cct_s"] == pytest.approx(1.0)
    assert out["iteration_ratio"] is None and out["sim_iteration_time_s"] is None
    assert "partial" in fidelity.describe(out)


def test_run_without_a_finished_coflow_gets_a_reason(tmp_path, monkeypatch):
    run = tmp_path / "run"
    summary = write_run(run, STATIC, {"hi": None, "lo": None}, {}, None)
    monkeypatch.setattr("coflowbed.experiment.simulate.simulate", _must_not_simulate)
    assert fidelity.attach(run, summary).fidelity == {"skipped": "no coflow finished"}


def _must_not_simulate(*args, **kwargs):
    raise AssertionError("the fidelity simulation ran")


def test_a_failing_simulation_is_recorded_and_the_results_stay(tmp_path, monkeypatch, caplog):
    run = tmp_path / "run"
    summary = write_run(run, STATIC, {"hi": 1.2, "lo": 3.0}, {"hi": 0, "lo": 3}, 3.3)
    coflows_csv = (run / "coflows.csv").read_text()

    def broken(*args, **kwargs):
        raise RuntimeError("simulation stalled at t=0.1s")

    monkeypatch.setattr("coflowbed.experiment.simulate.simulate", broken)
    with caplog.at_level(logging.INFO):
        got = emulate_with(monkeypatch, run, summary, True)
    assert got.fidelity == {"error": "RuntimeError: simulation stalled at t=0.1s"}
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["fidelity"] == got.fidelity and on_disk["avg_cct_s"] == pytest.approx(2.1)
    assert (run / "coflows.csv").read_text() == coflows_csv
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "simulation stalled" in errors[0].getMessage()
    assert "fidelity failed: RuntimeError" in caplog.text


def test_missing_run_inputs_are_an_error_block_too(tmp_path):
    run = tmp_path / "run"
    summary = write_run(run, STATIC, {"hi": 1.2, "lo": 3.0}, {"hi": 0, "lo": 3}, 3.3)
    (run / "dag.json").unlink()
    out = fidelity.attach(run, summary).fidelity
    assert "dag.json: missing" in out["error"]
    assert json.loads((run / "summary.json").read_text())["coflows"] == 2


def emulate_with(monkeypatch, run: Path, summary, check: bool):
    """``single.emulate`` of a run that wrote ``summary`` into ``run`` (no fabric): its
    summary as the caller gets it."""
    monkeypatch.setattr(single, "check_can_run", lambda scen: None)
    monkeypatch.setattr(single, "run_scenario", lambda scen, out: RunOutcome(out, summary))
    return single.emulate(load_scenario(run / "scenario.yaml"), run, check).summary


def test_emulate_with_check_logs_the_figure(tmp_path, monkeypatch, caplog):
    run = tmp_path / "run"
    summary = write_run(run, STATIC, {"hi": 1.2, "lo": 3.0}, {"hi": 0, "lo": 3}, 3.3)
    with caplog.at_level(logging.INFO, logger="runner"):
        got = emulate_with(monkeypatch, run, summary, True)
    assert got.fidelity["iteration_ratio"] == pytest.approx(1.65)
    assert "fidelity (levels): iteration x1.650, CCT x1.200 p50 / x1.500 p90 over 2" in caplog.text


class InstantBackend:
    """Stands in for the emulated fabric in ``runner._run``: every flow is reported done
    at once, stamped bytes / 80 Mbit/s after its release, each on its own (no sharing)."""

    def __init__(self, levels: dict[str, int]) -> None:
        from coflowbed.emulation.backend import ReleaseTimes
        from controller.messages import JobReport

        self.report = JobReport(False, levels, {})
        self.levels = levels
        self.events: list = []
        self.times = ReleaseTimes()
        self.retrans: dict[str, int] = {}  # no TCP here: nothing measured

    def release(self, coflow, now):
        from coflowbed.emulation.executor import FlowDone, FlowStarted

        for f in coflow.flows:
            self.events += [
                FlowStarted(f.flow_id, now),
                FlowDone(f.flow_id, now + f.bytes / 1e7, f.bytes),
            ]

    def wait_events(self, timeout):
        events, self.events = self.events, []
        return events

    def finished(self, coflow, now):
        """Nothing to undo."""

    def tick(self, now):
        return None

    def collect_sent(self, flow_ids):
        """Every sender confirmed at once."""

    def close(self):
        """Nothing to stop."""


@pytest.mark.parametrize("check", [True, False])
def test_every_run_gets_its_figure_unless_no_check(tmp_path, monkeypatch, check):
    # hi and lo each "measured" 1 s (the stand-in shares nothing); the model: 1 s and 2 s
    src = tmp_path / "s.yaml"
    src.write_text(STATIC)
    scen, out = load_scenario(src), tmp_path / "run"
    write_inputs(scen, out)
    monkeypatch.setattr(runner, "_start_all", lambda *a: (None, None, 0.0, None, None))
    monkeypatch.setattr(runner, "_backend", lambda *a: InstantBackend({"hi": 0, "lo": 3}))
    monkeypatch.setattr(runner, "_prepare_iteration", lambda *a: None)  # no agents here
    monkeypatch.setattr(runner, "_calibrate", lambda *a: None)
    monkeypatch.setattr(runner, "_ports_now", lambda *a: {})
    if not check:
        monkeypatch.setattr("coflowbed.experiment.simulate.simulate", _must_not_simulate)
    monkeypatch.setattr(single, "check_can_run", lambda scen: None)
    monkeypatch.setattr(single, "run_scenario", lambda s, o: runner._run(s, o, tmp_path / "rt"))
    got = single.emulate(scen, out, check).summary
    assert got.partial is False and got.coflows == 2
    on_disk = json.loads((out / "summary.json").read_text())["fidelity"]
    assert on_disk == got.fidelity
    if not check:
        assert on_disk == {"skipped": single.NOT_ASKED} and not (out / "fidelity.csv").exists()
        return
    assert on_disk["cct_ratio_p50"] == pytest.approx(0.5, abs=0.01)
    assert on_disk["cct_ratio_p90"] == pytest.approx(1.0, abs=0.01)
    assert on_disk["iteration_ratio"] == pytest.approx(0.5, abs=0.01)


# --- the commands ------------------------------------------------------------------------

FAKE_CCTS = {"fair": ({"a": 1.8, "b": 1.8}, 2.4), "fifo": ({"a": 1.1, "b": 1.65}, 2.2)}


@pytest.fixture
def fake_runs(monkeypatch):
    """run_scenario replaced by one writing a run folder with FAKE_CCTS (no fabric):
    fair's ratios are 1.2 (model 1.5 / 1.5 / 2.0 s), fifo's 1.1 (1.0 / 1.5 / 2.0 s)."""
    calls = []

    def fake(scen, out):
        calls.append(scen.policy)
        write_inputs(scen, out)
        ccts, it = FAKE_CCTS.get(scen.policy, ({"hi": 1.2, "lo": 3.0}, 3.3))
        return RunOutcome(out, write_records(out, scen, ccts, {}, it))

    monkeypatch.setattr(single, "run_scenario", fake)
    for module in (single, run_command, compare_study):  # each asks before its runs
        monkeypatch.setattr(module, "check_can_run", lambda scen: None)
    return calls


def test_run_prints_the_fidelity_figure_in_its_summary_line(tmp_path, fake_runs, capsys):
    (tmp_path / "s.yaml").write_text(STATIC)
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "r")]) == 0
    line = capsys.readouterr().out.strip()
    assert (
        line.startswith("complete: 2/2 coflows") and "fidelity (levels): iteration x1.650" in line
    )
    assert fake_runs == ["static"]


def test_run_no_check(tmp_path, fake_runs, capsys):
    (tmp_path / "s.yaml").write_text(STATIC)
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "r"), "--no-check"]) == 0
    assert f"fidelity skipped: {single.NOT_ASKED}" in capsys.readouterr().out
    assert fake_runs == ["static"]
    assert (
        "iteration_ratio"
        not in json.loads((tmp_path / "r" / "summary.json").read_text())["fidelity"]
    )


def test_compare_shows_fidelity_beside_the_speedups(tmp_path, fake_runs, capsys):
    (tmp_path / "s.yaml").write_text(TWO)
    out = tmp_path / "cmp"
    assert (
        main(["compare", str(tmp_path / "s.yaml"), "--policies", "fair,fifo", "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    rows = {r["policy"]: r for r in read_csv_rows(out / "compare.csv")}
    assert rows["fair"]["fidelity_iter"] == pytest.approx(1.2)
    assert rows["fair"]["fidelity_cct_p50"] == pytest.approx(1.2)
    assert rows["fifo"]["fidelity_iter"] == pytest.approx(1.1)
    assert rows["fifo"]["fidelity_cct_p50"] == pytest.approx(1.1)
    header = next(
        ln for ln in (out / "compare.md").read_text().splitlines() if ln[:8] == "| policy"
    )
    assert header.endswith(
        "| speedup_avg_cct | speedup_iteration_time | fidelity_iter | fidelity_cct_p50 |"
    )
    assert "| 1.200 | 1.200 |" in (out / "compare.md").read_text()
    fifo = next(ln for ln in printed.splitlines() if ln.startswith("fifo "))
    assert fifo.split()[-1] == "1.1"  # emulated / simulated in the short table
    stats = {s["policy"]: s for s in json.loads((out / "compare.json").read_text())["stats"]}
    assert stats["fifo"]["metrics"]["fidelity_iter"]["mean"] == pytest.approx(1.1)
    assert fake_runs == ["fair", "fifo"]


def test_compare_no_check_leaves_the_columns_empty(tmp_path, fake_runs):
    (tmp_path / "s.yaml").write_text(TWO)
    out = tmp_path / "cmp"
    assert (
        main(
            [
                "compare",
                str(tmp_path / "s.yaml"),
                "--policies",
                "fair,fifo",
                "--out",
                str(out),
                "--no-check",
            ]
        )
        == 0
    )
    rows = read_csv_rows(out / "compare.csv")
    assert [(r["fidelity_iter"], r["fidelity_cct_p50"]) for r in rows] == [(None, None)] * 2
    assert fake_runs == ["fair", "fifo"]


def test_check_keeps_its_table(tmp_path, capsys):
    run = tmp_path / "run"
    write_run(run, STATIC, {"hi": 1.2, "lo": 3.0}, {"hi": 0, "lo": 3}, 3.3)
    assert main(["check", str(run), "--out", str(tmp_path / "t.csv")]) == 0
    printed = capsys.readouterr().out
    assert "mean measured/simulated CCT ratio over 2 coflows: 1.350" in printed
    rows = {r["coflow_id"]: r for r in read_csv_rows(tmp_path / "t.csv")}
    assert rows["hi"]["ratio"] == pytest.approx(1.2) and rows["lo"]["level"] == 3


def test_check_replays_levels_even_for_dynamic_runs(tmp_path):

    run = tmp_path / "run"
    write_run(run, TWO, {"a": 1.0, "b": 1.5}, {"a": 0, "b": 0}, 2.0)
    rows = {r.coflow_id: asdict(r) for r in fidelity.check_run(run)}
    assert rows["a"]["simulated_cct_s"] == pytest.approx(1.5)  # both at level 0: fair
    assert policies.get("fifo").ranks_by_identity is False


def test_a_multi_job_run_is_replayed_with_its_inter_job_rule(tmp_path):
    """The run folder keeps the InterJobSpec (inter_job.json); the policy reference of a
    dynamic policy is rebuilt around it (sebf inside each job, strict job priority)."""
    from coflowbed.analysis.fidelity import read_inputs, run_policy
    from coflowbed.experiment.folders import write_inputs
    from coflowbed.experiment.scenario import load_scenario
    from coflowbed.studies.compare import with_policy
    from tests.data import SCENARIOS

    scen = with_policy(load_scenario(SCENARIOS / "two-moe-shared.yaml"), "sebf+priority")
    write_inputs(scen, tmp_path)
    inputs = read_inputs(tmp_path)
    assert inputs.inter_job == scen.inter_job
    policy = run_policy(inputs)
    assert policy is not None and policy.name == "sebf+priority"


def _counters(run: Path, sent: dict[str, int]) -> None:
    """counters.json whose leaf-spine ports sent ``sent`` (link -> bytes; others 5 KB)."""
    plan = fidelity.read_inputs(run).plan
    ports: dict[str, dict[str, dict[str, int]]] = {}
    for leaf in (1, 2):
        for s in (1, 2):
            up, down = f"l{leaf}-s{s}", f"s{s}-l{leaf}"
            ports.setdefault(f"l{leaf}", {})[str(plan.uplink_port(s))] = {
                "tx_bytes": sent.get(up, 5000)
            }
            ports.setdefault(f"s{s}", {})[str(leaf)] = {"tx_bytes": sent.get(down, 5000)}
    (run / "counters.json").write_text(json.dumps({"ports": ports}))


@pytest.mark.parametrize("where", ["model", "other"])
def test_spine_link_bytes_are_checked_against_the_models_placement(tmp_path, where, capsys):
    """hi (h11 -> h21) and lo (h11 -> h22), 1e7 B each, cross from l1 to l2, on s1 and
    s2 in the model (``ecmp_spine``).  Counters 1 % above the model on exactly those
    links give x1.010 on every link the model loads; both flows on s1 (as a hash may
    put them) leave s2's links next to nothing (5 KB of ACKs / 1e7 B)."""
    from coflowbed.sim.fabric import ecmp_spine

    run = tmp_path / "run"
    write_run(run, STATIC, {"hi": 1.0, "lo": 2.0}, {"hi": 0, "lo": 3}, 2.0)
    spines = [ecmp_spine("h11", "h21", "hi.f0", 2), ecmp_spine("h11", "h22", "lo.f0", 2)]
    assert spines == [0, 1]
    sent: dict[str, int] = {}
    for s in spines:
        s = s + 1 if where == "model" else 1
        for link in (f"l1-s{s}", f"s{s}-l2"):
            sent[link] = sent.get(link, 0) + 10_100_000
    _counters(run, sent)
    out = fidelity.attach(run, write_results_again(run)).fidelity
    low, high = out["spine_link_ratio"]
    if where == "model":
        assert low == pytest.approx(1.01) and high == pytest.approx(1.01)
        assert "spine-link bytes x1.010-1.010" in fidelity.describe(out)
    else:
        assert low == pytest.approx(5000 / 1e7, rel=1e-3) and high == pytest.approx(2.02)
    assert main(["check", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("spine-link bytes, switch counters / model placement: l1-s")


def test_spine_links_are_not_checked_without_counters(tmp_path):
    run = tmp_path / "run"
    out = figure_of(run, STATIC, {"hi": 1.0, "lo": 2.0}, {"hi": 0, "lo": 3}, 2.0)
    assert out["spine_link_ratio"] is None
    assert "spine-link" not in fidelity.describe(out)


def write_results_again(run: Path):
    """The summary ``write_run`` wrote, read back (to attach the figure once more)."""
    from coflowbed.results.records import RunSummary

    return RunSummary.read(run)


# --- the control delay the run measured (summary.json release / level_change_s) ---------


def with_writes(summary, write_ms: float | None, change_s: float | None):
    """``summary`` as a run whose releases waited ``write_ms`` (median) for their
    register round trip and whose switch writes took ``change_s`` (median)."""
    release = None if write_ms is None else {"releases": 2, "write_ms": {"median": write_ms}}
    changes = None if change_s is None else {"count": 3, "median": change_s}
    return replace(summary, release=release, level_change_s=changes)


def test_a_dynamic_run_is_compared_with_and_without_its_measured_delay(tmp_path):
    """TWO under FIFO, releases waiting 50 ms, writes of 20 ms: in the model with the
    delay a runs 0.05-1.05 s, b (released 0.5, installed 0.55) waits for it and runs
    1.05-2.05 s (its re-rank to level 0 comes when it is alone): iteration 2.05 s
    against 2.0 s without.  Measured 2.1 s: x1.05 and x2.1/2.05."""
    run = tmp_path / "run"
    summary = with_writes(write_run(run, TWO, {"a": 1.05, "b": 1.6}, {}, 2.1), 50.0, 0.02)
    out = fidelity.attach(run, summary).fidelity
    assert out["control_delay"] == {"release_s": 0.05, "rerank_s": 0.02}
    assert out["iteration_ratio"] == pytest.approx(1.05)
    assert out["sim_iteration_time_with_delay_s"] == pytest.approx(2.05)
    assert out["iteration_ratio_with_delay"] == pytest.approx(2.1 / 2.05)
    assert json.loads((run / "summary.json").read_text())["fidelity"] == out
    assert "x1.024 with the run's control delay (50.00 ms / 20.00 ms)" in fidelity.describe(out)


def test_levels_fixed_for_the_dag_measure_no_delay_and_get_one_figure(tmp_path):
    """fair on TWO (levels reference): its releases made no round trip (no
    ``write_ms``), so both figures are the one figure."""
    run = tmp_path / "run"
    summary = write_run(run, TWO, {"a": 1.5, "b": 3.0}, {"a": 0, "b": 0}, 4.0, policy="fair")
    out = fidelity.attach(run, with_writes(summary, None, None)).fidelity
    assert out["control_delay"] is None
    assert out["iteration_ratio_with_delay"] == out["iteration_ratio"] == pytest.approx(2.0)
    assert out["sim_iteration_time_with_delay_s"] == out["sim_iteration_time_s"]


def test_static_levels_pay_their_measured_release_round_trip(tmp_path):
    """STATIC registers each release in the emulator: with 50 ms hi runs 0.05-1.05 s and
    lo, below it on h11's uplink, 1.05-2.05 s: iteration 2.05 s in the model with the
    delay, 2.0 s without; measured 3.3 s."""
    run = tmp_path / "run"
    summary = write_run(run, STATIC, {"hi": 1.2, "lo": 3.0}, {"hi": 0, "lo": 3}, 3.3)
    out = fidelity.attach(run, with_writes(summary, 50.0, None)).fidelity
    assert out["control_delay"] == {"release_s": 0.05, "rerank_s": 0.05}
    assert out["iteration_ratio"] == pytest.approx(1.65)
    assert out["iteration_ratio_with_delay"] == pytest.approx(3.3 / 2.05)


@pytest.mark.parametrize(
    "write_ms,change_s,want",
    [(None, 0.02, None), (6.5, None, (0.0065, 0.0065)), (6.5, 0.003, (0.0065, 0.003))],
)
def test_the_measured_delay_is_the_median_round_trip_and_write(tmp_path, write_ms, change_s, want):
    summary = write_run(tmp_path / "run", TWO, {"a": 1.0, "b": 1.5}, {}, 2.0)
    got = fidelity.measured_delay(with_writes(summary, write_ms, change_s))
    assert (None if got is None else (got.release_s, got.rerank_s)) == want
