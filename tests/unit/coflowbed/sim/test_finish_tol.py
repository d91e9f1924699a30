"""The finishing tolerance (``Simulator.finish_tol``, ``simulate --finish-tol``): a flow
within that fraction of its size of the end is done at the event that finds it there,
so completions closer than the tolerance become one event.  The expected times are
worked out in each test's docstring."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from coflowbed.cli.main import main
from coflowbed.results.files import read_coflows_csv
from coflowbed.sim import FINISH_TOL, BigSwitch, Simulator, parse_fabric_spec
from controller import policies
from tests.data import FB_TRACE
from workload import fbtrace
from workload.dag import Coflow, Dag, Flow

LINK_BPS = 8e6  # 1e6 B/s per host port
A_BYTES, B_BYTES = 1_000_000, 1_000_050  # b is EPS = 5e-5 larger than a
EPS = 5e-5


def two_coflows() -> Dag:
    """Coflows a (1e6 B) and b (1e6 + 50 B), one flow each, h0 -> h1, both at 0."""
    a = Coflow("a", [Flow("a.0", "h0", "h1", A_BYTES)])
    b = Coflow("b", [Flow("b.0", "h0", "h1", B_BYTES)])
    return Dag(coflows=[a, b])


def run(tol: float, fast: bool) -> Simulator:
    """The two coflows under fair sharing with finishing tolerance ``tol``."""
    fabric = BigSwitch(("h0", "h1"), LINK_BPS)
    sim = Simulator(two_coflows(), fabric, policies.get("fair"), None, fast=fast, finish_tol=tol)
    return sim.run()


def cct(sim: Simulator, i: int) -> float:
    """Coflow ``i``'s completion time."""
    return sim.outcomes[i].finish_s - sim.outcomes[i].release_s


@pytest.mark.parametrize("fast", [True, False])
def test_default_tolerance_keeps_completions_apart(fast):
    """Both flows share h0's port, 5e5 B/s each: a is done at 1e6 / 5e5 = 2 s, when b has
    50 B left, more than 1e-9 of its size; alone at 1e6 B/s it takes 50 / 1e6 s more: b
    at 2.00005 s, a second event."""
    sim = run(FINISH_TOL, fast)
    assert cct(sim, 0) == pytest.approx(2.0, rel=1e-12)
    assert cct(sim, 1) == pytest.approx(2.0 + 50 / 1e6, rel=1e-12)
    assert sim.stats.events == 2


@pytest.mark.parametrize("fast", [True, False])
def test_a_looser_tolerance_merges_them_into_one_event(fast):
    """With tolerance 1e-4, b's 50 B left at 2 s are within 1e-4 x 1000050 = 100 B of its
    end: b is done at 2 s too, in the same event; its CCT is 2.5e-5 relative (EPS / 2)
    short of the exact 2.00005 s, within the tolerance."""
    sim = run(1e-4, fast)
    assert cct(sim, 0) == pytest.approx(2.0, rel=1e-12)
    assert cct(sim, 1) == pytest.approx(2.0, rel=1e-12)
    assert sim.stats.events == 1


@pytest.mark.parametrize("fast", [True, False])
def test_a_tolerance_below_the_gap_keeps_them_apart(fast):
    """With 1e-5, b's tolerance is 10 B, below its 50 B left at 2 s: two events, as with
    the default."""
    sim = run(1e-5, fast)
    assert cct(sim, 1) == pytest.approx(2.00005, rel=1e-12)
    assert sim.stats.events == 2


@pytest.mark.parametrize("policy", ["dclas", "sincronia"])
def test_on_a_trace_prefix_fewer_events_and_ccts_within_the_tolerance(policy):
    """The first 120 coflows of the Facebook trace at 1e-4 against the default: D-CLAS
    and Sincronia put small coflows first, so no coflow waits behind a long one that ends
    early, and each CCT stays within 1e-4 of the default's
    (docs/measurements/simulator-speed.md, "A finishing tolerance": 1.3e-5 and 1.6e-5 here,
    6.5e-5 and 4.9e-5 on the whole trace); about 40 % of the events merge (1,456 to 859 and
    1,337 to 741)."""
    trace = fbtrace.read_trace(FB_TRACE)
    dag = fbtrace.to_dag(trace, None, limit=120)
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    runs = [
        Simulator(dag, fabric, policies.get(policy), None, finish_tol=tol).run()
        for tol in (FINISH_TOL, 1e-4)
    ]
    exact, loose = ([cct(sim, i) for i in range(len(dag.coflows))] for sim in runs)
    assert max(abs(b / a - 1.0) for a, b in zip(exact, loose)) <= 1e-4
    assert runs[1].stats.events <= 0.7 * runs[0].stats.events


@pytest.mark.parametrize("tol", [0.0, -1e-6, 0.02, math.nan])
def test_a_tolerance_out_of_range_is_refused(tol):
    with pytest.raises(ValueError, match="finish tolerance must be > 0 and <= 0.01"):
        run(tol, True)


def trace_file(tmp_path: Path) -> Path:
    """Two coflows as a coflow-benchmark trace: 1 MB (2^20 B) and 1 MB + 64 B from port
    0 to port 1, both at 0."""
    p = tmp_path / "t.txt"
    p.write_text(f"2 2\n1 0 1 0 1 1:1.0\n2 0 1 0 1 1:{1 + 64 / 2**20!r}\n")
    return p


@pytest.mark.parametrize(
    "flag,ratio,tol",
    [([], 1 + 32 / 2**20, FINISH_TOL), (["--finish-tol", "1e-4"], 1.0, 1e-4)],
)
def test_simulate_finish_tol_reaches_the_run(tmp_path, flag, ratio, tol):
    """Through the CLI: sharing the port, the first is done after 2 x 2^20 B of the
    port's time, the second 64 B later: CCTs in the ratio 1 + 64 / 2^21.  With
    --finish-tol 1e-4 the second's 64 B left are within its 105 B: ratio 1.
    summary.json records the tolerance the run took."""
    out = tmp_path / "out"
    argv = ["simulate", "--trace", str(trace_file(tmp_path)), "--out", str(out), *flag]
    assert main(argv) == 0
    a, b = read_coflows_csv(out / "coflows.csv")
    assert b["cct_s"] / a["cct_s"] == pytest.approx(ratio, rel=1e-9)
    assert json.loads((out / "summary.json").read_text())["sim_finish_tol"] == tol


@pytest.mark.parametrize(
    "extra,msg",
    [
        (["--finish-tol", "0.5"], "--finish-tol: finish tolerance must be > 0 and <= 0.01"),
        (["--model", "coflowsim", "--finish-tol", "1e-4"], "--finish-tol: not with --model"),
    ],
)
def test_simulate_bad_finish_tol_is_one_line(tmp_path, capsys, extra, msg):
    out = tmp_path / "out"
    argv = ["simulate", "--trace", str(trace_file(tmp_path)), "--out", str(out), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err
    assert not out.exists()
