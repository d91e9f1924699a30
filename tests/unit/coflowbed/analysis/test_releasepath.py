"""The release path of a run (``coflowbed.analysis.releasepath``): each coflow's measured delay
from release to its first flow's start put into the model, on the real simulator, with
the expected times worked out by hand.

Fabric: 2 leaves x 2 hosts at 80 Mbit/s = 1e7 B/s, so a flow of 1e7 B alone on its
links takes 1 s in the model."""

from __future__ import annotations

import pytest

from coflowbed.analysis import releasepath
from coflowbed.cli.main import main
from coflowbed.experiment.folders import write_inputs
from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.files import write_results
from coflowbed.results.records import CoflowRecord, IterationRecord
from coflowbed.sim import BigSwitch, simulate
from controller import policies
from tests.data import HI_LO_SCENARIO
from workload import dagindex
from workload.dag import Coflow, Compute, Dag, Flow

MB10 = 10_000_000

# hi (level 0) and lo (level 3) from h11 at t=0: hi alone 0-1 s, lo behind it 1-2 s.
STATIC = HI_LO_SCENARIO


def chain() -> Dag:
    """a (h11 -> h21, 1e7 B, released at 0.5 s), then b (same pair) after compute c,
    which waits for a and lasts 0.1 s."""
    a = Coflow("a", (Flow("a:0", "h11", "h21", MB10),), release_s=0.5)
    c = Compute("c", "h11", 0.1, ("a",))
    b = Coflow("b", (Flow("b:0", "h11", "h21", MB10),), deps=("c",))
    return Dag([a, b], [c])


def test_a_delay_shifts_the_release_and_sits_between_a_coflow_and_its_dependencies():
    got = releasepath.delayed(chain(), {"a": 0.25, "b": 0.5})
    a, b = got.coflows
    node = got.computes[-1]
    assert a.release_s == 0.75 and a.deps == ()  # no dependency: only its release moves
    assert b.deps == (node.node_id,) and node.deps == ("c",) and node.duration_s == 0.5
    assert node.node_id == releasepath.NODE_PREFIX + "b" and node.host == "h11"
    dagindex.validate(got)


def test_coflows_without_a_delay_are_left_alone():
    dag = chain()
    got = releasepath.delayed(dag, {"b": 0.0})
    assert got.coflows == dag.coflows and got.computes == dag.computes


def test_the_model_with_delays_by_hand():
    """a: released 0.5 + 0.25, ends 1.75; c 1.75-1.85; b's delay 1.85-2.35; b ends
    3.35.  Without delays: a 0.5-1.5, c to 1.6, b 1.6-2.6."""
    fabric, fair = BigSwitch(("h11", "h21"), 80e6), policies.get("fair")
    plain = simulate(chain(), fabric, fair, 4)
    late = simulate(releasepath.delayed(chain(), {"a": 0.25, "b": 0.5}), fabric, fair, 4)
    ends = {r.coflow_id: r.finish_s for r in late.coflow_records()}
    assert ends == pytest.approx({"a": 1.75, "b": 3.35})
    [p], [q] = plain.iteration_records(), late.iteration_records()
    assert (p.start_s, p.finish_s) == pytest.approx((0.5, 2.6))
    # Timed from the model's start without delays (0.5 s, a's release), as the emulator
    # times an iteration from its first coflow's release.
    emulated = {(p.job, p.iteration): 2.85}
    assert releasepath._ratio(emulated, [q], [p]) == pytest.approx(1.0)
    assert releasepath._ratio(emulated, [p]) == pytest.approx(2.85 / 2.1)


def write_run(run, tmp_path, starts: dict[str, float], ends: dict[str, float], it_s: float):
    """A run folder of ``STATIC`` whose coflows, released at 0, started and ended so."""
    src = tmp_path / "s.yaml"
    src.write_text(STATIC)
    scen = load_scenario(src)
    write_inputs(scen, run)
    recs = []
    for cf in scen.dag.coflows:
        r = CoflowRecord.of(cf)
        r.arrival_s, r.start_s, r.finish_s = 0.0, starts[cf.coflow_id], ends[cf.coflow_id]
        r.level = {"hi": 0, "lo": 3}[cf.coflow_id]
        recs.append(r)
    write_results(run, [], recs, [IterationRecord(0, 0.0, it_s)], False, {"policy": "static"})


def test_a_run_folder_by_hand(tmp_path, capsys):
    """Measured: hi started 0.2 s after release, lo 0.1 s; the iteration took 2.2 s
    (the model: 2.0 s).  With the delays, lo runs alone 0.1-0.2 s (1e6 B), hi 0.2-1.2 s,
    lo's last 9e6 B 1.2-2.1 s: 2.1 s."""
    run = tmp_path / "run"
    write_run(run, tmp_path, {"hi": 0.2, "lo": 0.1}, {"hi": 1.2, "lo": 2.2}, 2.2)
    got = releasepath.measure(run)
    assert got.coflows == 2 and got.median_ms == pytest.approx(100.0)  # nearest rank
    assert got.iteration_ratio == pytest.approx(1.1)
    assert got.iteration_ratio_delayed == pytest.approx(2.2 / 2.1)
    assert main(["check", str(run)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line == (
        "release path (release -> first flow start): median 100.00 ms over 2 coflows; "
        "iteration emulated/simulated x1.100, x1.048 with each coflow's own delay in the "
        "model (what is left is the data path)"
    )


def test_coflows_that_never_started_have_no_delay():
    rows = {"a": {"arrival_s": 1.0, "start_s": 1.5}, "b": {"arrival_s": 2.0, "start_s": None}}
    assert releasepath.delays(rows) == {"a": 0.5}
    assert releasepath.delays({"c": {"arrival_s": 3.0, "start_s": 2.9}}) == {"c": 0.0}
