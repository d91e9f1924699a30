"""The emulation backend's change writer: order, coalescing and error reporting, against
fake controller and agents (unit test; the real ones are in tests/integration)."""
from __future__ import annotations

import threading

import pytest

from coflowbed.emulation import ChangeWriter, merge_changes
from coflowbed.scheduling import Changes
from controller.coflow_table import TagEntry


class FakeController:
    def __init__(self, gate: threading.Event | None = None, fail: bool = False):
        self.calls, self.gate, self.fail = [], gate, fail
        self.entered = threading.Event()

    def set(self, entries):
        self.entered.set()
        if self.gate:
            self.gate.wait(5)
        if self.fail:
            raise OSError("controller gone")
        self.calls.append(("set", [e.tag for e in entries]))
        return {"written": len(entries), "applied_s": 0.001}

    def clear(self, tags):
        self.calls.append(("clear", list(tags)))


class FakeAgents:
    def __init__(self):
        self.levels = []

    def set_level(self, host, tag, level):
        self.levels.append((host, tag, level))


def entry(tag, level):
    return TagEntry(tag, level)


def test_merge_keeps_clears_first_and_the_last_value_per_key():
    m = merge_changes([Changes([entry(1, 0), entry(2, 3)], [], [("h1", 2, 3)]),
                       Changes([entry(2, 5)], [7], [("h1", 2, 5)])])
    assert m.clear_tags == [7]
    assert [(e.tag, e.level) for e in m.entries] == [(1, 0), (2, 5)]
    assert m.host_levels == [("h1", 2, 5)]


def test_writes_queued_behind_a_slow_one_are_coalesced_into_one():
    gate = threading.Event()
    ctl, agents = FakeController(gate), FakeAgents()
    w = ChangeWriter(ctl, agents)
    w.submit(Changes([entry(1, 0)]), wait=False)  # blocks in the fake until the gate opens
    assert ctl.entered.wait(5)
    for tag in (2, 3, 4):
        w.submit(Changes([entry(tag, 1)], host_levels=[("h1", tag, 1)]), wait=False)
    gate.set()
    w.submit(Changes([entry(5, 0)]), wait=True)
    w.close()
    assert ctl.calls[0] == ("set", [1])
    assert sorted(t for _, tags in ctl.calls[1:] for t in tags) == [2, 3, 4, 5]
    assert len(ctl.calls) <= 3 and agents.levels == [("h1", 2, 1), ("h1", 3, 1), ("h1", 4, 1)]


def test_a_failed_write_is_reported_to_waiters_and_later_submitters():
    w = ChangeWriter(FakeController(fail=True), FakeAgents())
    with pytest.raises(OSError, match="controller gone"):
        w.submit(Changes([entry(1, 0)]), wait=True)
    with pytest.raises(RuntimeError, match="controller write failed"):
        w.submit(Changes([entry(2, 0)]), wait=False)
    w.close()


def test_merge_keeps_the_last_paced_rate_per_pair():
    m = merge_changes([Changes(host_rates=[("h1", 3, "h2", 40.0)]),
                       Changes(host_rates=[("h1", 3, "h2", 20.0), ("h1", 4, "h2", None)])])
    assert m.host_rates == [("h1", 3, "h2", 20.0), ("h1", 4, "h2", None)]


def test_a_release_does_not_wait_behind_host_updates():
    gate = threading.Event()

    class SlowAgents(FakeAgents):
        def set_level(self, host, tag, level):
            gate.wait(5)
            super().set_level(host, tag, level)

    ctl, agents = FakeController(), SlowAgents()
    w = ChangeWriter(ctl, agents)
    w.submit(Changes(host_levels=[("h1", 2, 4)]), wait=False)  # stuck until the gate opens
    w.submit(Changes([entry(3, 0)]), wait=True)  # returns although the host update is stuck
    assert ctl.calls == [("set", [3])] and agents.levels == []
    gate.set()
    w.close()
    assert agents.levels == [("h1", 2, 4)]


def test_tick_feeds_agent_progress_to_a_clairvoyant_policy():
    """Under SEBF the backend polls the active senders' agents every PROGRESS_POLL_S and
    re-rates from what is really left; rank-free static runs poll nothing."""
    from types import SimpleNamespace

    from controller import policies
    from controller.policies.base import FabricView
    from coflowbed import emulation
    from coflowbed.scheduling import LiveScheduler
    from topo.plan import FabricPlan
    from workload.dag import Coflow, Flow

    class StatsAgents(FakeAgents):
        def __init__(self):
            super().__init__()
            self.asked, self.rates = [], []

        def stats(self, host):
            self.asked.append(host)
            return SimpleNamespace(sent={"x.0": 600_000} if host == "h11" else {})

        def set_rate(self, host, tag, dst_ip, rate):
            self.rates.append((host, tag, dst_ip, rate))

    plan = FabricPlan(spines=1, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)
    hosts = [h.name for h in plan.hosts]
    x = Coflow("x", (Flow("x.0", "h11", "h21", 1_000_000), Flow("x.1", "h12", "h21", 1_000_000)))
    sched = LiveScheduler(policies.get("sebf"), FabricView.uniform(hosts, 1e8), 8, pacing=True)
    sched.arrive(x, 0.0)
    agents = StatsAgents()
    backend = emulation.EmulationBackend(sched, FakeController(), agents, plan, 5001)
    assert backend.tick(1.0) == pytest.approx(1.0 + emulation.PROGRESS_POLL_S)
    backend.close()
    assert sorted(agents.asked) == ["h11", "h12"]
    assert sched.states["x"].remaining["x.0"] == 400_000
    assert {r[0] for r in agents.rates} == {"h11", "h12"}  # both pairs re-rated
    static = LiveScheduler(policies.get("fair"), FabricView.uniform(hosts, 1e8), 8, all_coflows=[x])
    assert emulation.EmulationBackend(static, FakeController(), agents, plan, 5001).tick(1.0) is None


def test_release_times_measure_start_and_first_byte_from_the_release():
    from coflowbed.emulation import ReleaseTimes

    t = ReleaseTimes()
    t.released.update({"f1": 10.0, "f2": 10.0, "f3": 12.0})
    t.started("f1", int(10.0005e9))
    t.first_byte("f1", int(10.002e9))
    t.first_byte("f2", int(10.004e9))
    t.first_byte("f3", int(12.001e9))
    t.first_byte("unknown", int(13e9))  # not released by this backend: ignored
    out = t.summary()
    assert out["start_ms"] == {"count": 1, "median": 0.5, "p95": 0.5, "max": 0.5}
    assert out["first_byte_ms"]["count"] == 3
    assert out["first_byte_ms"]["median"] == pytest.approx(2.0, abs=1e-3)
    assert out["first_byte_ms"]["max"] == pytest.approx(4.0, abs=1e-3)
    assert out["write_ms"] is None and out["writes_waited"] == 0


def test_a_static_release_makes_no_controller_write_after_preinstall():
    from controller import policies
    from controller.policies.base import FabricView
    from coflowbed import emulation
    from coflowbed.scheduling import LiveScheduler
    from topo.plan import FabricPlan
    from workload.dag import Coflow, Flow

    class SendAgents(FakeAgents):
        def __init__(self):
            super().__init__()
            self.orders = []

        def send_many(self, orders):
            self.orders.extend(orders)

    plan = FabricPlan(spines=1, leaves=2, hosts_per_leaf=1, host_bw_mbps=100, fabric_bw_mbps=100)
    x = Coflow("x", (Flow("x.0", "h11", "h21", 1000),))
    sched = LiveScheduler(policies.get("fair"), FabricView.uniform(["h11", "h21"], 1e8), 8,
                          all_coflows=[x])
    ctl, agents = FakeController(), SendAgents()
    backend = emulation.EmulationBackend(sched, ctl, agents, plan, 5001)
    backend.preinstall()
    assert ctl.calls == [("set", [1])]
    backend.release(x, 0.0)
    backend.close()
    assert ctl.calls == [("set", [1])] and len(agents.orders) == 1  # the release wrote nothing
    assert backend.times.summary()["writes_waited"] == 0
