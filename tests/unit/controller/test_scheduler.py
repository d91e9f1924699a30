"""LiveScheduler: tags, levels from policy ranks, minimal diffs, threshold re-decisions,
and policy errors reported as PolicyError."""

from __future__ import annotations

import pytest

from controller import policies
from controller.coflow_table import wire_clash
from controller.messages import HostLevel, HostRate
from controller.policies.base import Decision, FabricView, Policy
from controller.policies.static import StaticPolicy
from controller.scheduler import LiveScheduler, PolicyError
from topo.plan import FabricPlan
from workload.dag import Coflow, CoflowIdentity, Flow

VIEW = FabricView.uniform(["a", "b", "c"], 1e8)


def cf(cid, nbytes=1000, src="a", dst="b"):
    return Coflow(cid, (Flow(f"{cid}.0", src, dst, nbytes),), CoflowIdentity())


class BySize(Policy):
    """Smaller coflow first (rank = total bytes)."""

    name = "by-size"

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision((s.coflow.bytes,)) for s in states}


class ByBytesSent(Policy):
    """Queue 0 until 100 bytes sent, then queue 1 (a two-queue D-CLAS)."""

    name = "two-queue"
    byte_thresholds = (100,)

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision((int(s.bytes_sent >= 100), s.arrival_seq)) for s in states}


def test_scheduler_with_200_active_coflows_installs_no_wire_clash():
    """200 coflows of one flow each, sender i % 20 of a 4 x 5 fabric: every entry
    names its sender and no two share a DSCP on one (``wire_clash`` is None)."""
    plan = FabricPlan(spines=1, leaves=4, hosts_per_leaf=5, host_bw_mbps=100, fabric_bw_mbps=100)
    hosts = plan.host_names()
    s = LiveScheduler(BySize(), FabricView.uniform(hosts, 1e8), levels=8)
    entries = {}
    for i in range(200):
        src, dst = hosts[i % 20], hosts[(i + 1) % 20]
        for e in s.arrive(cf(f"c{i}", 1000 + i, src, dst), 0.0).entries:
            entries[e.tag] = e
    assert sorted(entries) == list(range(1, 201))
    assert entries[56].senders == frozenset({hosts[55 % 20]})
    assert wire_clash(entries.values(), plan) is None
    s.finish("c0", 1.0)
    ch = s.arrive(cf("again", 5, hosts[0], hosts[1]), 1.0)
    assert ch.clear_tags == [1] and s.tags["again"] == 1


def test_full_pool_clears_dirty_tags_before_the_new_entry():
    s = LiveScheduler(BySize(), VIEW, levels=8)
    for i in range(55):
        s.arrive(cf(f"c{i}"), 0.0)
    s.finish("c0", 1.0)
    ch = s.arrive(cf("new"), 1.0)
    assert ch.clear_tags == [1] and s.tags["new"] == 1
    assert any(e.tag == 1 for e in ch.entries)


def test_arrival_installs_levels_in_policy_order_and_only_changes_are_written():
    s = LiveScheduler(BySize(), VIEW, levels=8)
    ch1 = s.arrive(cf("big", 5000), 0.0)
    assert [e.level for e in ch1.entries] == [0]
    ch2 = s.arrive(cf("small", 100), 0.1)
    # small is more urgent: it takes level 0 and big is pushed to level 1
    assert s.level_of("small") < s.level_of("big")
    assert {e.tag for e in ch2.entries} == {s.tags["small"], s.tags["big"]}
    assert ch2.host_levels == [HostLevel("a", s.tags["big"], s.level_of("big"))]
    ch3 = s.finish("small", 0.2)
    assert ch3.clear_tags == []  # cleared lazily, when the tag is needed again
    # big keeps level 1: moved up mid-flow, its new packets would overtake its queued
    # ones (compress.keep_levels); alone, it has the fabric either way
    assert s.level_of("big") == 1 and not ch3
    assert (s.moved_up, s.moved_down) == (0, 1)


def test_fifo_moves_nobody_up_while_a_level_is_free_below():
    """FIFO on K = 4: the head's completion leaves the others where they are (no
    write) while the lowest level is free; once it is used, a completion moves everyone
    up as far as they go, so the next arrival's release writes its own entry only."""
    s = LiveScheduler(policies.get("fifo"), VIEW, levels=4)
    for i, name in enumerate("abc"):
        s.arrive(cf(name), 0.1 * i)
    assert [s.level_of(c) for c in "abc"] == [0, 1, 2]
    assert not s.finish("a", 1.0)  # b, c keep 1, 2
    assert len(s.arrive(cf("d"), 1.1).entries) == 1 and s.level_of("d") == 3
    ch = s.finish("b", 1.2)  # level 3 in use: c, d move up to 0, 1 now
    assert [s.level_of(c) for c in "cd"] == [0, 1] and len(ch.entries) == 2
    assert len(s.arrive(cf("e"), 1.3).entries) == 1 and s.level_of("e") == 2
    assert (s.moved_up, s.moved_down) == (2, 0)  # c and d, once each


def test_finish_writes_nothing_when_nothing_else_changes():
    s = LiveScheduler(BySize(), VIEW, levels=8)
    s.arrive(cf("x"), 0.0)
    ch = s.finish("x", 1.0)
    assert not ch
    assert s.last_level["x"] == 0


def test_static_levels_and_rates_pass_through():
    s = LiveScheduler(StaticPolicy({"x": 5}, 7, {"x": 20e6}), VIEW, levels=8)
    ch = s.arrive(cf("x"), 0.0)
    assert [e.to_wire() for e in ch.entries] == [
        {"tag": s.tags["x"], "level": 5, "rate_mbps": 20.0, "flow_rates": None, "senders": ["a"]}
    ]  # rules on the sender's port only


def test_threshold_crossing_triggers_a_new_decision():
    s = LiveScheduler(ByBytesSent(), VIEW, levels=8)
    s.arrive(cf("x"), 0.0)
    s.arrive(cf("y"), 0.0)
    tag_x = s.tags["x"]
    assert not s.bytes_sent({tag_x: 50}, 0.1)  # below the threshold: nothing to write
    ch = s.bytes_sent({tag_x: 150}, 0.2)
    assert ch and s.level_of("x") > s.level_of("y")


class Raising(Policy):
    name = "raising"

    def decide(self, states, fabric, now):
        raise ZeroDivisionError("boom")


class Incomplete(Policy):
    name = "incomplete"

    def decide(self, states, fabric, now):
        return {}


def test_policy_errors_become_policy_error():
    with pytest.raises(PolicyError, match="raising.*ZeroDivisionError"):
        LiveScheduler(Raising(), VIEW, 8).arrive(cf("x"), 0.0)
    with pytest.raises(PolicyError, match="no decision"):
        LiveScheduler(Incomplete(), VIEW, 8).arrive(cf("x"), 0.0)


def test_flow_rates_are_summed_per_host_pair_in_mbps():
    class Madd(Policy):
        name = "madd"

        def decide(self, states, fabric, now):
            return {
                s.coflow_id: Decision((0,), {f.flow_id: 2e7 for f in s.coflow.flows})
                for s in states
            }

    c = Coflow("m", (Flow("m.0", "a", "b", 10), Flow("m.1", "a", "c", 10)), CoflowIdentity())
    ch = LiveScheduler(Madd(), VIEW, 8).arrive(c, 0.0)
    assert ch.entries[0].to_wire()["flow_rates"] == [
        {"src": "a", "dst": "b", "rate_mbps": 20.0},
        {"src": "a", "dst": "c", "rate_mbps": 20.0},
    ]


class ByType(Policy):
    """A static policy: DP below everything else."""

    name = "by-type"
    ranks_by_identity = True
    compression = "lexicographic"

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision((int(s.coflow.ctype.value == "DP"),)) for s in states}


def typed(cid, ctype):
    from workload.dag import CoflowType

    return Coflow(cid, (Flow(f"{cid}.0", "a", "b", 10),), CoflowIdentity(ctype=CoflowType(ctype)))


def test_static_policy_levels_are_fixed_for_the_dag_and_written_once_per_level():
    dag = [typed("ep1", "EP"), typed("dp1", "DP"), typed("ep2", "EP")]
    s = LiveScheduler(ByType(), VIEW, levels=8, all_coflows=dag)
    assert s.is_static and s.fixed == {"ep1": 0, "dp1": 1, "ep2": 0}
    first = s.arrive(dag[0], 0.0)
    assert [e.to_wire() for e in first.entries] == [
        {"tag": 1, "level": 0, "rate_mbps": None, "flow_rates": None, "senders": None}
    ]  # a shared tag: every host port
    assert s.arrive(dag[1], 0.1).entries[0].tag == 2
    assert not s.arrive(dag[2], 0.2)  # level 0's tag is already installed: no write
    assert s.tags["ep2"] == s.tags["ep1"] == 1
    assert not s.finish(dag[0].coflow_id, 0.3)  # tags are shared: nothing to clear
    assert s.last_level == {"ep1": 0, "dp1": 1, "ep2": 0}


def test_static_levels_are_written_before_the_iteration_and_releases_write_nothing():
    dag = [typed("ep1", "EP"), typed("dp1", "DP"), typed("ep2", "EP")]
    s = LiveScheduler(ByType(), VIEW, levels=8, all_coflows=dag)
    pre = s.preinstall()
    assert [(e.tag, e.level) for e in pre.entries] == [(1, 0), (2, 1)]
    assert not any(s.arrive(c, 0.1 * i) for i, c in enumerate(dag))  # no release writes
    assert not s.preinstall()  # already written
    assert not LiveScheduler(BySize(), VIEW, 8, all_coflows=dag).preinstall()  # dynamic: nothing


def test_dynamic_policy_is_not_static():
    assert not LiveScheduler(BySize(), VIEW, 8, all_coflows=[cf("x")]).is_static


class ReadsSent(BySize):
    reads_bytes_sent = True


class ReadsSentByIdentity(ReadsSent):
    ranks_by_identity = True


def test_counters_are_wanted_by_live_policies_that_read_bytes_sent():
    """Declared (``reads_bytes_sent``) or implied (``byte_thresholds``); not for a
    policy whose levels are fixed for the DAG, nor for one that reads neither."""
    assert LiveScheduler(ReadsSent(), VIEW, 8).wants_counters()
    assert LiveScheduler(ByBytesSent(), VIEW, 8).wants_counters()
    assert not LiveScheduler(BySize(), VIEW, 8).wants_counters()
    assert not LiveScheduler(ReadsSentByIdentity(), VIEW, 8, [cf("x")]).wants_counters()


def test_zero_rate_means_uncapped_and_negative_rate_is_an_error():
    class Waits(Policy):
        name = "waits"
        rate = 0.0

        def decide(self, states, fabric, now):
            return {
                s.coflow_id: Decision((0,), {f.flow_id: self.rate for f in s.coflow.flows})
                for s in states
            }

    assert (
        LiveScheduler(Waits(), VIEW, 8).arrive(cf("w"), 0.0).entries[0].to_wire()["flow_rates"]
        is None
    )
    neg = Waits()
    neg.rate = -1.0
    with pytest.raises(PolicyError, match="rate must be >= 0"):
        LiveScheduler(neg, VIEW, 8).arrive(cf("n"), 0.0)


class Halving(Policy):
    """Rates 40 Mbit/s per flow for one active coflow, 20 when two are active."""

    name = "halving"

    def decide(self, states, fabric, now):
        bps = 40e6 / len(states)
        return {
            s.coflow_id: Decision((s.arrival_seq,), {f.flow_id: bps for f in s.coflow.flows})
            for s in states
        }


def test_pacing_mode_moves_policy_rates_to_the_senders():
    s = LiveScheduler(Halving(), VIEW, 8, pacing=True)
    first = s.arrive(cf("x"), 0.0)
    assert first.entries[0].to_wire()["flow_rates"] is None and not first.host_rates
    assert s.pair_rate("x", "a", "b") == 40.0  # the new flow starts paced at this rate
    second = s.arrive(cf("y", src="c"), 0.1)
    assert HostRate("a", s.tags["x"], "b", 20.0) in second.host_rates
    assert all(e.to_wire()["flow_rates"] is None for e in second.entries)
    assert s.pair_rate("y", "c", "b") == 20.0


def test_meter_mode_keeps_rates_in_the_switch_entries():
    s = LiveScheduler(Halving(), VIEW, 8)
    ch = s.arrive(cf("x"), 0.0)
    assert ch.entries[0].to_wire()["flow_rates"] == [{"src": "a", "dst": "b", "rate_mbps": 40.0}]
    assert s.pair_rate("x", "a", "b") is None


def test_sebf_installs_madd_meters_and_sebf_levels_only_its_order():
    """The same two coflows under ``sebf`` (MADD rates become per-pair meters) and
    ``sebf-levels`` (SEBF's order, nothing capped): the smaller bottleneck goes first in
    both, and only ``sebf`` writes rates."""
    from controller import policies

    small, big = cf("small", 1_000, "a", "b"), cf("big", 50_000, "c", "b")
    for name, metered in (("sebf", True), ("sebf-levels", False)):
        s = LiveScheduler(policies.get(name), VIEW, 8)
        s.arrive(big, 0.0)
        ch = s.arrive(small, 0.1)
        assert s.level_of("small") < s.level_of("big"), name
        rates = [e.to_wire()["flow_rates"] for e in ch.entries]
        assert any(rates) is metered and s.pair_rate("small", "a", "b") is None, (name, rates)


def test_progress_refreshes_bytes_left_and_re_rates_only_past_the_margin():
    """Agent progress updates what SEBF sees as left; MADD is recomputed, and a pair's
    paced rate is rewritten only when it moves by more than RATE_MARGIN."""
    from controller import policies, scheduler as scheduling

    two = Coflow(
        "x", (Flow("x.0", "a", "b", 1_000_000), Flow("x.1", "c", "b", 1_000_000)), CoflowIdentity()
    )
    s = LiveScheduler(policies.get("sebf"), VIEW, 8, pacing=True)
    s.arrive(two, 0.0)
    before = {(a, d): r for a, d, r in s.installed["x"].flow_rates}
    assert before[("a", "b")] == pytest.approx(before[("c", "b")])  # equal halves of b
    ch = s.progress({"x.0": 20_000}, 0.5)  # 2 % less left on a->b: within the margin
    assert s.states["x"].remaining["x.0"] == 980_000 and not ch.host_rates
    ch = s.progress({"x.0": 600_000}, 1.0)  # a->b has 40 % left of c->b: MADD shifts b
    changed = {(u.src, u.dst): u.rate_mbps for u in ch.host_rates}
    assert changed[("a", "b")] < before[("a", "b")] < changed[("c", "b")]
    assert scheduling.RATE_MARGIN == 0.1


def test_progress_does_not_re_decide_rank_only_policies():
    from controller import policies

    s = LiveScheduler(policies.get("sebf-levels"), VIEW, 8)
    s.arrive(cf("x", 5_000), 0.0)
    s.arrive(cf("y", 1_000, "c", "b"), 0.0)
    assert s.progress({"x.0": 4_900}, 0.5).entries == []  # stays behind y until an event
    assert s.states["x"].remaining["x.0"] == 100
    assert s.wants_progress() and s.active_senders() == ["a", "c"]


def test_a_rate_that_rounds_to_zero_waits_instead_of_writing_zero():
    """Rates are written in Mbit/s to 3 decimals; a MADD rate under 0.5 kbit/s must not be
    written as 0.0 (agents and meters reject it): the pair waits behind its level."""

    class Tiny(Policy):
        name = "tiny"
        clairvoyant = True

        def decide(self, states, fabric, now):
            return {
                s.coflow_id: Decision((0,), {f.flow_id: 100.0 for f in s.coflow.flows})
                for s in states
            }

    s = LiveScheduler(Tiny(), VIEW, 8, pacing=True)
    s.arrive(cf("x"), 0.0)
    assert s.installed["x"].flow_rates == () and s.pair_rate("x", "a", "b") is None


def test_a_static_coflow_without_a_level_gets_the_default_and_no_meter():
    s = LiveScheduler(StaticPolicy({"x": 5}, 7), VIEW, levels=8)
    ch = s.arrive(cf("y"), 0.0)
    assert (ch.entries[0].level, ch.entries[0].rate_mbps) == (7, None)
    assert not s.is_static  # each coflow has a tag of its own: its meter is its own


def test_a_coflow_past_55_gets_the_remapped_dscps_in_its_entry():
    """a holds tags 1..30 (DSCPs 1..30), b tags 31..55; a coflow from a and b gets tag
    56, whose own DSCP 1 a holds: its entry marks a's rule (and a's agent) with 31."""
    s = LiveScheduler(BySize(), VIEW, levels=8)
    for i in range(55):
        s.arrive(cf(f"n{i}", 1000 + i, "a" if i < 30 else "b", "c"), 0.0)
    wide = Coflow("w", (Flow("w.0", "a", "c", 10), Flow("w.1", "b", "c", 10)), CoflowIdentity())
    ch = s.arrive(wide, 0.0)
    (own,) = [e for e in ch.entries if e.tag == 56]
    assert own.dscps == (("a", 31),) and s.dscps_of("w") == (("a", 31),)
    assert own.dscp_of("b") == 1 and s.dscps_of("n0") == ()
