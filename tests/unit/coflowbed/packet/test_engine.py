"""The packet engine without ns-3: settings, the level -> DSCP -> band mapping, the DAG
walk and the decisions on a fake packet bed, the result's parity with the fluid one,
and the one-line error when the ns3 extra is missing."""

from __future__ import annotations

import inspect
import math

import pytest

from coflowbed.core.errors import UserError
from coflowbed.packet import ns3bed
from coflowbed.packet.config import (
    PacketConfig,
    band_of_dscp,
    band_of_level,
    hashed_spine,
    scaled_bytes,
)
from coflowbed.packet.engine import BANDS_LOW, PacketEngine, check_inputs, coflow_levels
from coflowbed.packet.result import PacketResult
from coflowbed.sim import BigSwitch, LeafSpine, LinkFault, Rail, SimResult
from coflowbed.sim.fabric import ecmp_spine
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.static import StaticPolicy
from workload.dag import Coflow, CoflowIdentity, Compute, Dag, Flow
from workload.marking import level_dscp, tag_dscp

RATE = 8e6  # the fake bed's rate per flow: 1 MB/s


class FakeBed:
    """Every flow alone at ``RATE`` from its start (no sharing): enough to check what the
    engine does around the fabric (releases, completions, marks, paces)."""

    def __init__(self) -> None:
        self.t = 0.0
        self.flows: list[dict] = []
        self.done: list[int] = []
        self.calls: list[tuple] = []

    def add_flow(self, src: int, dst: int, plane: int, nbytes: int, band: int) -> int:
        self.flows.append({"src": src, "dst": dst, "plane": plane, "bytes": nbytes, "band": band})
        return len(self.flows) - 1

    def start_flow(self, i: int) -> None:
        self.flows[i]["start"] = self.t

    def set_band(self, i: int, band: int) -> None:
        self.flows[i]["band"] = band
        self.calls.append(("band", i, band, self.t))

    def set_rate(self, i: int, bps: float) -> None:
        self.calls.append(("rate", i, bps, self.t))

    def _end(self, f: dict) -> float:
        return f["start"] + f["bytes"] * 8 / RATE

    def run_until(self, t: float) -> None:
        live = [f for f in self.flows if "start" in f and "finish" not in f]
        first = min((self._end(f) for f in live), default=math.inf)
        self.t = min(t, first)
        for i, f in enumerate(self.flows):
            if f in live and self._end(f) <= self.t:
                f["finish"] = self.t
                self.done.append(i)

    def take_done(self) -> list[int]:
        out, self.done = self.done, []
        return out

    def now(self) -> float:
        return self.t

    def received(self, i: int) -> int:
        f = self.flows[i]
        if "start" not in f:
            return 0
        return min(f["bytes"], int((self.t - f["start"]) * RATE / 8))

    def first_byte(self, i: int) -> float:
        return self.flows[i].get("start", math.nan)

    def finish(self, i: int) -> float:
        return self.flows[i].get("finish", math.nan)

    def retransmitted(self, i: int) -> int:
        return 100 * i


class ArrivalOrder(Policy):
    """Test policy: the newest coflow first (so every arrival re-marks the others)."""

    name = "newest-first"

    def decide(self, states, fabric: FabricView, now: float) -> dict[str, Decision]:
        return {s.coflow_id: Decision((-s.arrival_seq,)) for s in states}


HOSTS = ("h1_1", "h1_2", "h2_1", "h2_2")


def fabric() -> LeafSpine:
    return LeafSpine(HOSTS, 2, 2, 1e9, 1e9)


def chain_dag() -> Dag:
    """a (1 MB) -> compute 0.5 s on h2_1 -> b (2 MB, not before 2 s); c (1 MB) alone."""
    return Dag(
        coflows=[
            Coflow("a", (Flow("a0", "h1_1", "h2_1", 1_000_000),)),
            Coflow("b", (Flow("b0", "h2_1", "h1_2", 2_000_000),), deps=("x",), release_s=2.0),
            Coflow("c", (Flow("c0", "h1_2", "h2_2", 1_000_000),), CoflowIdentity(iteration=1)),
        ],
        computes=[Compute("x", "h2_1", 0.5, deps=("a",))],
    )


def run(dag: Dag, policy: Policy, levels: int | None = 8, **cfg) -> PacketEngine:
    return PacketEngine(dag, fabric(), policy, levels, PacketConfig(**cfg), FakeBed()).run()


def test_defaults_pass_their_own_check():
    assert PacketConfig().check() == PacketConfig()


@pytest.mark.parametrize(
    "key,value",
    [
        ("transport", "quic"),
        ("ecmp", "random"),
        ("scale", 0.0),
        ("queue_packets", 1),
        ("host_queue_packets", 0),
        ("fair_queue_buckets", -1),
        ("fair_queue_buckets", 2000),
        ("stall_s", 0.5),
        ("ecn_packets", 100),
        ("mtu", 100),
        ("min_rto_s", 0.0),
        ("rto_max_s", 0.1),
        ("delack_s", 0.0),
        ("decide_every_s", 0.0),
        ("link_delay_s", -1.0),
    ],
)
def test_a_setting_out_of_range_is_named(key, value):
    with pytest.raises(ValueError, match=f"^{key}: "):
        PacketConfig(**{key: value}).check()


@pytest.mark.parametrize("level", range(8))
def test_a_level_is_its_own_band_through_its_dscp_code(level):
    assert band_of_level(level) == level
    assert band_of_dscp(level_dscp(level)) == level


def test_untagged_and_tag_codes_go_to_band_zero():
    assert band_of_dscp(0) == 0
    assert band_of_dscp(tag_dscp(17)) == 0


def test_out_of_range_levels_and_codes_are_refused():
    with pytest.raises(ValueError):
        band_of_level(8)
    with pytest.raises(ValueError):
        band_of_dscp(64)


def test_scaled_bytes_keep_at_least_one():
    assert scaled_bytes(1000, 0.1) == 100
    assert scaled_bytes(3, 0.01) == 1


def test_static_ranks_are_levels_and_other_ranks_compress():
    static = StaticPolicy({"a": 3}, 7)
    assert coflow_levels(static, {"a": Decision((3,)), "b": Decision((7,))}, 4) == {
        "a": 3,
        "b": 7,
    }
    ranks = {f"c{i}": Decision((i,)) for i in range(12)}
    got = coflow_levels(ArrivalOrder(), ranks, None)
    assert set(got.values()) == set(range(8))  # exact order squeezed onto the 8 bands
    assert got["c0"] == 0 and got["c11"] == 7


def test_dag_walk_releases_after_dependencies_compute_and_release_time():
    e = run(chain_dag(), StaticPolicy({}, 0))
    a, b, c = e.outcomes
    assert e.stats.finished
    assert a.release_s == 0 and a.finish_s == pytest.approx(1.0)
    # b waits for a (1 s) + compute x (0.5 s) and its release time 2 s
    assert b.release_s == pytest.approx(2.0)
    assert b.finish_s == pytest.approx(4.0)
    assert c.finish_s == pytest.approx(1.0)
    assert e.dagstate.compute_start["x"] == pytest.approx(1.0)
    assert e.dagstate.compute_end["x"] == pytest.approx(1.5)


def test_result_records_and_files_have_the_fluid_engine_columns(tmp_path):
    e = run(chain_dag(), StaticPolicy({}, 0))
    res = PacketResult(e, {"transport": "tcp"})
    flows = {r.flow_id: r for r in res.flow_records()}
    assert flows["b0"].start_s == pytest.approx(2.0) and flows["b0"].finish_s == pytest.approx(4.0)
    assert flows["b0"].bytes_received == 2_000_000
    assert flows["b0"].retrans_bytes == 200  # the bed's third flow (a and c start at 0)
    its = res.iteration_records()
    assert sorted((it.iteration, it.time_s) for it in its) == [(0, pytest.approx(4.0)), (1, 1.0)]
    summary = res.write(tmp_path)
    assert summary.mode == "packet" and summary.packet == {"transport": "tcp"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "coflows.csv",
        "compute.csv",
        "flows.csv",
        "iterations.csv",
        "summary.json",
        "trace.json",
    ]


def test_packet_result_offers_the_fluid_result_methods():
    def api(cls):
        return {
            n: inspect.signature(getattr(cls, n)).parameters.keys()
            for n in dir(cls)
            if not n.startswith("_") and callable(getattr(cls, n))
        }

    assert api(PacketResult) == api(SimResult)
    assert isinstance(inspect.getattr_static(PacketResult, "partial"), property)


def test_scale_shrinks_the_wire_bytes_not_the_recorded_ones():
    e = run(chain_dag(), StaticPolicy({}, 0), scale=0.1)
    assert [f["bytes"] for f in e.bed.flows] == [100_000, 100_000, 200_000]
    assert e.outcomes[0].finish_s == pytest.approx(0.1)
    assert e.arrays.received.tolist() == [1_000_000, 2_000_000, 1_000_000]


def test_flows_start_low_and_are_marked_at_the_first_decision():
    e = run(chain_dag(), StaticPolicy({"a": 2}, 5))
    first = {i: band for kind, i, band, t in e.bed.calls if kind == "band" and t == 0}
    assert e.bed.flows[0]["band"] == 2 and first[0] == 2
    assert BANDS_LOW == 7 and e.outcomes[0].level == 2


def test_a_new_arrival_remarks_the_flows_already_running():
    dag = Dag(
        coflows=[
            Coflow("old", (Flow("o0", "h1_1", "h2_1", 4_000_000),)),
            Coflow("new", (Flow("n0", "h1_2", "h2_2", 1_000_000),), release_s=1.0),
        ]
    )
    e = run(dag, ArrivalOrder(), levels=2)
    moves = [(i, band, t) for kind, i, band, t in e.bed.calls if kind == "band"]
    # "old" alone is level 0; when "new" arrives at 1 s it ranks first and "old" drops to 1
    assert (0, 0, 0.0) in moves
    assert (0, 1, 1.0) in moves and (1, 0, 1.0) in moves
    assert (0, 0, 2.0) in moves  # and back up when "new" ends
    assert e.stats.remarks == 2  # first marks are not re-marks


def test_metered_rates_are_paced_at_the_scaled_rate():
    dag = Dag(coflows=[Coflow("m", (Flow("m0", "h1_1", "h2_1", 1_000_000),))])
    e = run(dag, StaticPolicy({"m": 1}, 7, {"m": 20e6}), scale=0.5)
    assert ("rate", 0, 10e6, 0.0) in e.bed.calls


def test_work_conserving_rates_are_not_paced():
    class Rated(ArrivalOrder):
        def decide(self, states, fabric, now):
            return {s.coflow_id: Decision((0,), {"m0": 1e6}) for s in states}

    dag = Dag(coflows=[Coflow("m", (Flow("m0", "h1_1", "h2_1", 1_000_000),))])
    assert not [c for c in run(dag, Rated()).bed.calls if c[0] == "rate"]


class Thresholds(ArrivalOrder):
    """Test policy: level = how many 500 kB thresholds the coflow has passed."""

    byte_thresholds = (500_000,)
    levels_given = True

    def decide(self, states: list[CoflowState], fabric, now):
        return {s.coflow_id: Decision((int(s.bytes_sent >= 500_000),)) for s in states}


def test_a_byte_threshold_crossing_is_decided_within_the_check_interval():
    dag = Dag(coflows=[Coflow("t", (Flow("t0", "h1_1", "h2_1", 1_000_000),))])
    e = run(dag, Thresholds(), levels=2, decide_every_s=0.01)
    moved = [t for kind, i, band, t in e.bed.calls if kind == "band" and band == 1]
    assert moved and 0.5 <= moved[0] <= 0.51


def test_ecmp_follows_the_fluid_spine_or_hashes_on_its_own():
    dag = Dag(coflows=[Coflow("e", [Flow(f"f{i}", "h1_1", "h2_1", 1000) for i in range(16)])])
    fab = fabric()
    fluid = [ecmp_spine("h1_1", "h2_1", f"f{i}", 2) for i in range(16)]
    own = PacketEngine(dag, fab, ArrivalOrder(), 8, PacketConfig(), FakeBed()).planes
    hashed = PacketEngine(dag, fab, ArrivalOrder(), 8, PacketConfig(ecmp="hash"), FakeBed())
    assert own == fluid
    assert hashed.planes == [hashed_spine("h1_1", "h2_1", f"f{i}", 2, 1) for i in range(16)]
    assert set(hashed.planes) == {0, 1}


def test_link_faults_and_oversized_fabrics_are_refused():
    with pytest.raises(ValueError, match="^faults: "):
        check_inputs(fabric(), [LinkFault(((0, 0),), 1.0)])
    check_inputs(BigSwitch(HOSTS, 1e9), [])
    check_inputs(Rail.of(("s1", "s2"), 2, 2, 1e9, 1e9), [])
    big = LeafSpine(tuple(f"h{i}" for i in range(300)), 300, 1, 1e9, 1e9)
    with pytest.raises(ValueError, match="^fabric: too large"):
        check_inputs(big, [])


def test_without_the_extra_the_error_is_one_line_naming_it(monkeypatch):
    monkeypatch.setattr(ns3bed, "ns3_available", lambda: False)
    monkeypatch.setattr(ns3bed, "_loaded", {})
    with pytest.raises(UserError) as exc:
        ns3bed.load()
    text = str(exc.value)
    assert "\n" not in text and "coflowbed[packet]" in text and "ns3==3.44.post0" in text


class DeadBed(FakeBed):
    """A bed whose flows never end (a connection TCP gave up on)."""

    def run_until(self, t: float) -> None:
        self.t = t


def test_a_run_whose_flows_never_end_stops_as_stalled_at_stall_s():
    dag = Dag(coflows=[Coflow("a", (Flow("a0", "h1_1", "h2_1", 1_000_000),))])
    with pytest.raises(RuntimeError, match=r"stalled at t=30\.000s: .* none ended in 30 s"):
        cfg = PacketConfig(stall_s=30.0)
        PacketEngine(dag, fabric(), ArrivalOrder(), 8, cfg, DeadBed()).run()
