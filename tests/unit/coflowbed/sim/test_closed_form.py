"""Closed-form cases of the fluid simulator: every expected time is computed by hand in
the comments and asserted to float tolerance."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from coflowbed.sim import BigSwitch, LeafSpine, StaticPolicy, simulate
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from workload.dag import Coflow, CoflowIdentity, CoflowType, Compute, Dag, Flow

approx = lambda x: pytest.approx(x, rel=1e-9, abs=1e-12)  # noqa: E731


class RankByMap(Policy):
    """Test policy: a fixed rank per coflow id (strict priority)."""

    name = "rank-by-map"

    def __init__(self, ranks: dict[str, int]) -> None:
        super().__init__()
        self.ranks = ranks

    def decide(self, states: Sequence[CoflowState], fabric: FabricView, now: float):
        """Rank from the map."""
        return {s.coflow_id: Decision(rank=(self.ranks[s.coflow_id],)) for s in states}


class OneLevel(Policy):
    """Test policy: every coflow on one level (per-flow max-min fair)."""

    name = "one-level"

    def decide(self, states, fabric, now):
        """Same rank for all."""
        return {s.coflow_id: Decision(rank=(0,)) for s in states}


class Proportional(Policy):
    """Test policy (MADD-style proportional sharing of one link of ``bps``): each coflow
    gets a share of the link proportional to its remaining bytes, split over its flows
    in proportion to their remaining bytes, so all active coflows would end together."""

    name = "proportional"
    clairvoyant = True

    def __init__(self, bps: float) -> None:
        super().__init__()
        self.bps = bps

    def decide(self, states, fabric, now):
        """Rates proportional to remaining bytes, everyone on one level."""
        left = {
            f.flow_id: s.remaining.get(f.flow_id, f.bytes) for s in states for f in s.coflow.flows
        }
        total = sum(left.values())
        return {
            s.coflow_id: Decision(
                rank=(0,),
                flow_rates_bps={
                    f.flow_id: self.bps * left[f.flow_id] / total for f in s.coflow.flows
                },
            )
            for s in states
        }


def cf(
    cid: str,
    flows: list[tuple[str, str, int]],
    release: float = 0.0,
    deps=(),
    ctype: CoflowType = CoflowType.OTHER,
    iteration: int = 0,
) -> Coflow:
    """A coflow from (src, dst, bytes) triples."""
    return Coflow(
        cid,
        tuple(Flow(f"{cid}.{i}", s, d, b) for i, (s, d, b) in enumerate(flows)),
        CoflowIdentity(ctype=ctype, iteration=iteration),
        tuple(deps),
        release,
    )


def finish(result) -> dict[str, float]:
    """Finish time per coflow id."""
    return {r.coflow_id: r.finish_s for r in result.coflow_records()}


HOSTS = ("h1", "h2", "h3", "h4")


def test_one_flow_takes_bytes_over_rate():
    # B = 3e6 bytes at R = 8e6 bit/s (1e6 B/s) -> 3 s.
    dag = Dag([cf("a", [("h1", "h2", 3_000_000)])])
    res = simulate(dag, BigSwitch(HOSTS, 8e6), OneLevel())
    assert finish(res)["a"] == approx(3.0)
    assert res.flow_records()[0].bytes_received == 3_000_000


def test_n_equal_flows_sharing_a_link_finish_together():
    # 3 flows of B = 1e6 bytes out of h1 (R = 8e6 bit/s = 1e6 B/s): each gets R/3 and all
    # finish at n*B/R = 3 s.
    dag = Dag([cf("a", [("h1", d, 1_000_000) for d in ("h2", "h3", "h4")])])
    res = simulate(dag, BigSwitch(HOSTS, 8e6), OneLevel())
    assert [f.finish_s for f in res.flow_records()] == [approx(3.0)] * 3


def test_strict_priority_serves_the_high_coflow_first():
    # Both coflows on h1's uplink, 1e6 B/s.  High (2e6 B) alone: done at 2 s; low
    # (1e6 B) waits, then finishes at (2e6 + 1e6)/1e6 = 3 s.  Reversed ranks: low-first.
    dag = Dag([cf("hi", [("h1", "h2", 2_000_000)]), cf("lo", [("h1", "h3", 1_000_000)])])
    res = simulate(dag, BigSwitch(HOSTS, 8e6), RankByMap({"hi": 0, "lo": 1}))
    assert finish(res) == {"hi": approx(2.0), "lo": approx(3.0)}
    res = simulate(dag, BigSwitch(HOSTS, 8e6), RankByMap({"hi": 1, "lo": 0}), levels=2)
    assert finish(res) == {"hi": approx(3.0), "lo": approx(1.0)}


# The three-coflow pattern of the Hermod worked example (SCHEDULING.md, thesis Fig. 5.6).
# One shared link: h1's uplink at R = 24e6 bit/s = 3e6 B/s.
#   EP (most urgent): two flows h1->h2, h1->h3 of 1.5e6 B each (3e6 B), released at 0.
#   DP (least urgent): one flow h1->h2 of 7e6 B, released at 0.
#   PP (middle): one flow h1->h4 of 3e6 B, released at t = 2.
# Total work 13e6 B / 3e6 B/s = 13/3 s.
FIG56 = Dag(
    [
        cf("EP", [("h1", "h2", 1_500_000), ("h1", "h3", 1_500_000)], ctype=CoflowType.EP),
        cf("DP", [("h1", "h2", 7_000_000)], ctype=CoflowType.DP),
        cf("PP", [("h1", "h4", 3_000_000)], release=2.0, ctype=CoflowType.PP),
    ]
)
R56 = 24e6


def test_fig56_strict_priority_line_rate():
    # EP alone at line rate on [0,1] (its flows R/2 each) -> EP done at 1.
    # DP on [1,2] sends 3e6 B, 4e6 B left.  PP preempts at 2, alone at R -> done at 3
    # (CCT 1: not delayed).  DP resumes: 4e6/3e6 = 4/3 s -> 13/3.
    res = simulate(FIG56, BigSwitch(HOSTS, R56), RankByMap({"EP": 0, "PP": 1, "DP": 2}))
    assert finish(res) == {"EP": approx(1.0), "PP": approx(3.0), "DP": approx(13 / 3)}
    ccts = {r.coflow_id: r.cct_s for r in res.coflow_records()}
    assert ccts["PP"] == approx(1.0)


def test_fig56_proportional_sharing_delays_pp_same_makespan():
    # [0,2]: EP gets 3/10 of R (0.9e6 B/s), DP 7/10 (2.1e6 B/s): EP left 3e6-1.8e6 = 1.2e6,
    # DP left 7e6-4.2e6 = 2.8e6.  At 2 PP (3e6) arrives: total left 7e6, shared in
    # proportion, so all three finish together at 2 + 7e6/3e6 = 13/3.  PP's CCT is
    # 13/3 - 2 = 7/3 (delayed vs 1 under strict priority); all work done at 13/3 both ways.
    res = simulate(FIG56, BigSwitch(HOSTS, R56), Proportional(R56))
    assert finish(res) == {"EP": approx(13 / 3), "PP": approx(13 / 3), "DP": approx(13 / 3)}
    ccts = {r.coflow_id: r.cct_s for r in res.coflow_records()}
    assert ccts["PP"] == approx(7 / 3)


def test_k_levels_vs_exact_order():
    # Three coflows of 1e6 B on one 1e6 B/s link, ranks 0,1,2.  Exact order: 1, 2, 3 s.
    # One level (K=1): fair sharing, all finish at 3 s.  Compression costs avg CCT 2 -> 3.
    dag = Dag([cf(c, [("h1", "h2", 1_000_000)]) for c in ("a", "b", "c")])
    pol = RankByMap({"a": 0, "b": 1, "c": 2})
    assert finish(simulate(dag, BigSwitch(HOSTS, 8e6), pol)) == {
        "a": approx(1.0),
        "b": approx(2.0),
        "c": approx(3.0),
    }
    one = simulate(dag, BigSwitch(HOSTS, 8e6), pol, levels=1)
    assert finish(one) == {"a": approx(3.0), "b": approx(3.0), "c": approx(3.0)}
    assert one.summary().avg_cct_s == approx(3.0)


def test_dependencies_and_compute_delays_give_iteration_time():
    # a: 1e6 B at 1e6 B/s -> done at 1.  compute on h2 (0.5 s) after a -> 1.5.
    # b (1e6 B) after the compute but released no earlier than 2.0 -> 2.0..3.0.
    # Iteration 0: first start 0, last end 3 -> 3 s.
    dag = Dag(
        [
            cf("a", [("h1", "h2", 1_000_000)]),
            cf("b", [("h2", "h3", 1_000_000)], release=2.0, deps=("c1",)),
        ],
        [Compute("c1", "h2", 0.5, deps=("a",))],
    )
    res = simulate(dag, BigSwitch(HOSTS, 8e6), OneLevel())
    recs = {r.coflow_id: r for r in res.coflow_records()}
    assert (recs["b"].arrival_s, recs["b"].finish_s) == (approx(2.0), approx(3.0))
    assert res.summary().iteration_time_s == approx(3.0)


def test_compute_ending_before_release_waits_for_release():
    # Same as above with release 1.2 < compute end 1.5: b starts at 1.5, ends at 2.5.
    dag = Dag(
        [
            cf("a", [("h1", "h2", 1_000_000)]),
            cf("b", [("h2", "h3", 1_000_000)], release=1.2, deps=("c1",)),
        ],
        [Compute("c1", "h2", 0.5, deps=("a",))],
    )
    recs = {
        r.coflow_id: r for r in simulate(dag, BigSwitch(HOSTS, 8e6), OneLevel()).coflow_records()
    }
    assert (recs["b"].arrival_s, recs["b"].finish_s) == (approx(1.5), approx(2.5))


def test_leaf_spine_core_bottleneck_and_local_flows():
    # Hosts 100 Mbit/s, core 10 Mbit/s.  Cross-leaf flow of 1.25e6 B: 1e7 bit / 1e7 = 1 s.
    # Same-leaf flow of 1.25e6 B stays on host links: 1e7 / 1e8 = 0.1 s.
    fab = LeafSpine(
        ("a1", "a2", "b1", "b2"), hosts_per_leaf=2, spines=2, host_bps=100e6, fabric_bps=10e6
    )
    dag = Dag([cf("x", [("a1", "b1", 1_250_000)]), cf("y", [("a2", "a1", 1_250_000)])])
    assert finish(simulate(dag, fab, OneLevel())) == {"x": approx(1.0), "y": approx(0.1)}


def test_static_policy_meter_is_a_hard_limit():
    # Level given; coflow metered at 2e6 bit/s per sender on a 8e6 bit/s link: 1e6 B
    # takes 8e6 / 2e6 = 4 s (no work-conserving top-up beyond a meter).
    dag = Dag([cf("m", [("h1", "h2", 1_000_000)])])
    pol = StaticPolicy({"m": 0}, default_level=7, rates_bps={"m": 2e6})
    res = simulate(dag, BigSwitch(HOSTS, 8e6), pol, levels=8)
    assert finish(res)["m"] == approx(4.0)
    assert res.coflow_records()[0].level == 0
