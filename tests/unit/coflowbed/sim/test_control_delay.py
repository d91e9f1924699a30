"""The simulator's control delay (``ControlDelay``, ``simulate(control_delay=)``,
``simulate --control-delay``, the scenario's ``sim_control_delay_s``): a coflow of a
dynamic policy (or of the scenario's ``static``) starts exactly the delay after its
release and a re-ranked coflow keeps its old level for the delay, in the per-flow loop
and the compiled one alike; policies with levels fixed for the DAG run exactly as
without it."""

from __future__ import annotations

import json
import math

import pytest

from coflowbed.cli.main import main
from coflowbed.core.errors import UserError
from coflowbed.experiment.scenario import load_scenario
from coflowbed.sim import (
    BigSwitch,
    ControlDelay,
    Simulator,
    StaticPolicy,
    parse_fabric_spec,
    simulate,
)
from controller import policies
from tests.data import FB_TRACE
from workload import fbtrace, generate
from workload.dag import Coflow, Dag, Flow
from workload.placement import generic_hosts
from workload.presets import load_preset

MB = 1_000_000
GBPS = 1e9  # 125 MB/s: 125 MB take 1 s
FABRIC = BigSwitch(("p0", "p1", "p2"), GBPS)
LOOPS = pytest.mark.parametrize("fast", [False, True], ids=["per-flow", "compiled"])


def flow(fid: str, src: str, dst: str, mb: float) -> tuple[Flow, ...]:
    """One flow of ``mb`` MB."""
    return (Flow(fid, src, dst, int(mb * MB)),)


def sharing() -> Dag:
    """a (125 MB, p0 -> p1) at 0 s, b (62.5 MB, p2 -> p1) at 0.25 s: one downlink."""
    a = Coflow("a", flow("a.0", "p0", "p1", 125), release_s=0.0)
    b = Coflow("b", flow("b.0", "p2", "p1", 62.5), release_s=0.25)
    return Dag(coflows=[a, b])


def run(dag: Dag, policy: str, delay: ControlDelay, fast: bool) -> Simulator:
    """``dag`` on ``FABRIC`` under ``policy`` (exact levels), finished."""
    sim = Simulator(dag, FABRIC, policies.get(policy), None, fast=fast, control=delay).run()
    assert sim.stats.finished
    return sim


@LOOPS
@pytest.mark.parametrize("d", [0.0, 0.005, 0.02])
def test_a_release_delay_shifts_a_fifo_coflow_start_by_exactly_the_delay(fast, d):
    """FIFO: a alone from its install at d to 1 + d; b, released at 0.25 and installed
    at 0.25 + d, waits below a and runs its 0.5 s from a's end: 1 + d to 1.5 + d.
    Releases stay where they were; CCTs (from release) are 1 + d and 1.25 + d."""
    a, b = run(sharing(), "fifo", ControlDelay(d, d), fast).outcomes
    assert (a.release_s, b.release_s) == (0.0, 0.25)
    assert a.start_s == pytest.approx(d, abs=1e-12)
    assert b.start_s == pytest.approx(1.0 + d, abs=1e-12)
    assert a.finish_s - a.release_s == pytest.approx(1.0 + d, abs=1e-12)
    assert b.finish_s - b.release_s == pytest.approx(1.25 + d, abs=1e-12)


@LOOPS
def test_a_dependency_chain_pays_the_release_delay_once_per_coflow(fast):
    """b (62.5 MB) depends on a (125 MB): a runs d to 1 + d, b is released at 1 + d
    and runs 1 + 2d to 1.5 + 2d: the iteration takes 1.5 + 2d."""
    d = 0.01
    a = Coflow("a", flow("a.0", "p0", "p1", 125))
    b = Coflow("b", flow("b.0", "p1", "p2", 62.5), deps=("a",))
    sim = run(Dag(coflows=[a, b]), "fifo", ControlDelay(d, 0.0), fast)
    first, second = sim.outcomes
    assert second.release_s == pytest.approx(1.0 + d, abs=1e-12)
    assert second.start_s == pytest.approx(1.0 + 2 * d, abs=1e-12)
    assert second.finish_s == pytest.approx(1.5 + 2 * d, abs=1e-12)
    (span,) = sim.dagstate.iteration_spans().values()
    assert span == pytest.approx((0.0, 1.5 + 2 * d), abs=1e-12)


@LOOPS
@pytest.mark.parametrize("dk", [0.0, 0.1])
def test_a_rerank_delay_keeps_the_old_level_until_it_is_in_force(fast, dk):
    """SEBF's order (no rate caps): a (125 MB) alone at 0; b (25 MB, 0.2 s) at 0.5 goes
    first (a has 0.5 s left).  b is installed at once, a keeps its level for ``dk``:
    they share the downlink (62.5 MB/s each) until 0.5 + dk, then b has 25 MB - 62.5 dk
    MB left at full rate: b ends at 0.7 + dk / 2.  The link never idles: a ends at
    1.2 either way."""
    a = Coflow("a", flow("a.0", "p0", "p1", 125), release_s=0.0)
    b = Coflow("b", flow("b.0", "p2", "p1", 25), release_s=0.5)
    sim = run(Dag(coflows=[a, b]), "sebf-levels", ControlDelay(0.0, dk), fast)
    first, second = sim.outcomes
    assert second.start_s == 0.5  # no release delay
    assert second.finish_s == pytest.approx(0.7 + dk / 2, abs=1e-12)
    assert first.finish_s == pytest.approx(1.2, abs=1e-12)
    assert (sim.stats.relevels > 0) == (dk > 0)


def tiny_moe() -> tuple[Dag, BigSwitch]:
    """One iteration of the tiny MoE preset on a big switch of its hosts."""
    job = load_preset("tiny-moe", {"iterations": 1})
    hosts = generic_hosts(job.hosts_needed)
    return generate(job, hosts), BigSwitch(tuple(hosts), 100e9)


def timeline(sim: Simulator) -> list[tuple]:
    """Every coflow's release, start, finish and level, and the run's counters."""
    outs = [(o.release_s, o.start_s, o.finish_s, o.level) for o in sim.outcomes]
    return [*outs, (sim.stats.events, sim.stats.policy_calls)]


@LOOPS
@pytest.mark.parametrize("policy", ["fair", "hermod", "lina", "pp-first", "bytescheduler"])
def test_policies_with_levels_fixed_for_the_dag_run_exactly_as_without_it(fast, policy):
    """Their levels are installed before the run (the emulator writes none while it
    goes): a 20 ms delay changes no time, level or counter."""
    dag, fabric = tiny_moe()
    runs = [
        Simulator(dag, fabric, policies.get(policy), 8, fast=fast, control=ControlDelay(d, d))
        for d in (0.0, 0.02)
    ]
    assert not runs[1].delay
    assert timeline(runs[1].run()) == timeline(runs[0].run())


@LOOPS
def test_the_scenarios_static_levels_pay_on_release_only(fast):
    """The scenario's ``static`` registers every release in the emulator (its levels
    are not fixed for the DAG there), so it waits too: sharing() at levels a 1, b 0
    with 10 ms: a alone 0.01-0.26 s (31.25 MB), b (installed 0.26) takes the downlink
    and runs 0.26-0.76 s, a ends its 93.75 MB left at 1.51 s.  Its levels never move."""
    d = 0.01
    sim = Simulator(
        sharing(),
        FABRIC,
        StaticPolicy({"a": 1, "b": 0}, 7),
        8,
        fast=fast,
        control=ControlDelay(d, d),
    ).run()
    a, b = sim.outcomes
    assert (a.start_s, b.start_s) == pytest.approx((d, 0.25 + d), abs=1e-12)
    assert (b.finish_s, a.finish_s) == pytest.approx((0.75 + d, 1.5 + d), abs=1e-12)
    assert (a.level, b.level, sim.stats.relevels) == (1, 0, 0)


def fb_prefix() -> tuple[Dag, BigSwitch]:
    """The first 45 Facebook coflows on the trace's big switch (150 ports at 1 Gbit/s)."""
    trace = fbtrace.read_trace(FB_TRACE)
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    return fbtrace.to_dag(trace, None, limit=45), fabric


@pytest.mark.parametrize("workload,levels", [(tiny_moe, 8), (fb_prefix, None)])
@pytest.mark.parametrize("policy", ["fifo", "dclas", "sincronia", "sebf", "sebf-levels"])
def test_per_flow_and_compiled_loops_agree_with_a_delay(policy, workload, levels):
    """tiny-moe (8 levels) and 45 trace coflows (exact levels) under the dynamic
    policies with 2 ms to install a release and 5 ms a re-rank: the compiled loop gives
    the per-flow loop's events, decisions and times; and the delay moved something."""
    dag, fabric = workload()
    delay = ControlDelay(0.002, 0.005)
    ref, new, plain = (
        Simulator(dag, fabric, policies.get(policy), levels, fast=fast, control=c).run()
        for fast, c in ((False, delay), (True, delay), (True, ControlDelay()))
    )
    assert ref.stats.finished and new.stats.finished
    assert (new.stats.events, new.stats.policy_calls) == (ref.stats.events, ref.stats.policy_calls)
    assert new.stats.relevels == ref.stats.relevels
    for o_ref, o_new in zip(ref.outcomes, new.outcomes, strict=True):
        assert o_new.release_s == pytest.approx(o_ref.release_s, rel=1e-9, abs=1e-12)
        assert o_new.start_s == pytest.approx(o_ref.start_s, rel=1e-9, abs=1e-12)
        assert o_new.finish_s == pytest.approx(o_ref.finish_s, rel=1e-9, abs=1e-12)
    ends = [max(o.finish_s for o in s.outcomes) for s in (new, plain)]
    assert ends[0] > ends[1]


@pytest.mark.parametrize("value", [-0.001, 10.5, math.nan, math.inf, True, "5ms"])
def test_a_delay_out_of_range_is_refused(value):
    with pytest.raises(ValueError, match="control delay"):
        ControlDelay(0.0, value)  # type: ignore[arg-type]


def test_one_number_is_both_delays_and_simulate_takes_it():
    """``simulate(control_delay=0.01)``: FIFO's a starts 10 ms late."""
    assert ControlDelay.of(0.01) == ControlDelay(0.01, 0.01)
    res = simulate(sharing(), FABRIC, policies.get("fifo"), None, control_delay=0.01)
    assert res.sim.outcomes[0].start_s == pytest.approx(0.01, abs=1e-12)


SCENARIO = (
    "fabric: {spines: 1, leaves: 2, hosts_per_leaf: 1, host_bw_mbps: 100, fabric_bw_mbps: 100}\n"
    "policy: fifo\n"
    "workload: {coflows: [{id: a, flows: [{src: h11, dst: h21, bytes: 12500000}]}]}\n"
)


def scenario(tmp_path, extra: str = ""):
    """A one-coflow scenario (12.5 MB over 100 Mbit/s: 1 s) under FIFO."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + extra)
    return path


@pytest.mark.parametrize(
    "argv,key,delay",
    [([], None, 0.0), (["--control-delay", "0.05"], None, 0.05), ([], 0.02, 0.02)],
)
def test_the_delay_reaches_the_run_and_its_summary(tmp_path, argv, key, delay):
    """From the flag, else the scenario key: the coflow's flow starts ``delay`` after
    its release (the iteration takes 1 s + delay), and summary.json records the delay."""
    extra = "" if key is None else f"sim_control_delay_s: {key}\n"
    out = tmp_path / "out"
    assert main(["simulate", str(scenario(tmp_path, extra)), "--out", str(out), *argv]) == 0
    summary = json.loads((out / "summary.json").read_text())
    paid = delay > 0  # a delay given, under a policy without levels fixed for the DAG
    assert summary["sim_control_delay"] == {"release_s": delay, "rerank_s": delay, "paid": paid}
    assert summary["iteration_time_s"] == pytest.approx(1.0 + delay, rel=1e-6)


@pytest.mark.parametrize("value", ["-1", "11", "nan", "soon"])
def test_a_bad_flag_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, value):
    out = tmp_path / "out"
    argv = ["simulate", str(scenario(tmp_path)), "--out", str(out), f"--control-delay={value}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "--control-delay" in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize("value", ["-0.5", "10.01", ".nan", "fast", "true"])
def test_a_bad_scenario_key_is_one_line_naming_it(tmp_path, value):
    with pytest.raises(UserError, match="sim_control_delay_s") as got:
        load_scenario(scenario(tmp_path, f"sim_control_delay_s: {value}\n"))
    assert "\n" not in str(got.value)


def test_a_bad_scenario_key_exits_2_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "out"
    path = scenario(tmp_path, "sim_control_delay_s: 20\n")
    assert main(["simulate", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "sim_control_delay_s" in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "extra,msg",
    [
        (["--engine", "packet"], "the packet engine models no control delay"),
        (["--model", "coflowsim"], "--control-delay: not with --model coflowsim"),
    ],
)
def test_engines_without_a_delay_refuse_it_in_one_line(tmp_path, capsys, extra, msg):
    """The packet engine (refused before asking whether ns-3 is installed) and the
    CoflowSim model have no control delay to model."""
    out = tmp_path / "out"
    trace = tmp_path / "t.txt"
    trace.write_text("2 2\n1 0 1 0 1 1:1.0\n")
    source = ["--trace", str(trace)] if "coflowsim" in extra else [str(scenario(tmp_path))]
    argv = ["simulate", *source, "--control-delay", "0.01", "--out", str(out), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err
    assert not out.exists()
