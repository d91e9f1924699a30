"""The emulation backend: scheduling requests in order through the controller's
scheduler (a real ControlPlane over a fake switch driver, reached through the JSON wire
form), host updates on their own lane, errors reported (unit test; the real fabric is
in tests/integration)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from coflowbed.emulation import backend as emulation
from coflowbed.emulation.backend import HostWriter, ReleaseTimes, merge_host_updates
from coflowbed.results.records import FlowRecord
from controller.messages import HostLevel, HostMark, HostRate, HostUpdates, OpenJob, PolicySpec
from controller.scheduler import Changes
from tests.fakes import PLAN, LoopbackClient, hold_lane, ready_plane
from workload.dag import Coflow, Flow
from workload.marking import level_dscp, tag_dscp

X = Coflow("x", (Flow("x.0", "h11", "h21", 1_000_000), Flow("x.1", "h12", "h21", 1_000_000)))
Y = Coflow("y", (Flow("y.0", "h11", "h22", 1000),))


class FakeAgents:
    def __init__(self, gate: threading.Event | None = None):
        self.levels, self.rates, self.orders, self.asked = [], [], [], []
        self.marks: list[tuple] = []
        self.gate = gate
        self.waiting = threading.Event()  # set once a set_level waits at the gate

    def set_level(self, host, tag, level):
        if self.gate is not None:
            self.waiting.set()
            self.gate.wait(5)
        self.levels.append((host, tag, level))

    def set_rate(self, host, tag, dst_ip, rate):
        self.rates.append((host, tag, dst_ip, rate))

    def set_dscp(self, host, tag, dscp, unpace):
        self.marks.append((host, tag, dscp, unpace))

    def send_many(self, orders):
        self.orders.extend(orders)

    def stats(self, host):
        self.asked.append(host)
        return SimpleNamespace(sent={"x.0": 600_000} if host == "h11" else {})

    def events(self, timeout):
        return []


def writes(drv):
    """The switch writes that changed something (installs apply empty diffs)."""
    return [a for a in drv.applied if a]


def backend_for(policy: str, coflows, pacing=False, agents=None, levels=8):
    plane, drv = ready_plane(PLAN, levels=levels)
    client = LoopbackClient(plane)
    job = OpenJob(PolicySpec(policy), pacing, tuple(coflows))
    be = emulation.EmulationBackend(job, client, agents or FakeAgents(), PLAN, 5001, client)
    return be, plane, drv, client


def test_merge_keeps_the_last_host_priority_and_paced_rate_per_key():
    m = merge_host_updates(
        [
            HostUpdates((HostLevel("h1", 2, 3),), (HostRate("h1", 3, "h2", 40.0),)),
            HostUpdates(
                (HostLevel("h1", 2, 5), HostLevel("h2", 2, 1)),
                (HostRate("h1", 3, "h2", 20.0), HostRate("h1", 4, "h2", None)),
            ),
        ]
    )
    assert m.levels == (HostLevel("h1", 2, 5), HostLevel("h2", 2, 1))
    assert m.rates == (HostRate("h1", 3, "h2", 20.0), HostRate("h1", 4, "h2", None))


def test_host_updates_queued_behind_a_slow_one_are_coalesced():
    gate = threading.Event()
    agents = FakeAgents(gate)
    w = HostWriter(agents, {"h2": "10.0.2.1"})
    w.put(HostUpdates((HostLevel("h1", 2, 1),)))  # stuck in the fake until the gate opens
    assert agents.waiting.wait(5)  # the first is being applied: the rest queue behind it
    for level in (2, 3, 4):
        w.put(HostUpdates((HostLevel("h1", 3, level),)))
    gate.set()
    w.lane.close()
    assert agents.levels == [("h1", 2, 1), ("h1", 3, 4)]  # the three behind became one


def drain(plane) -> None:
    """Until the controller's switch writes queued so far are done."""
    plane.scheduler.job.lane.put(Changes()).result(5)


def test_a_dynamic_release_registers_and_starts_its_flows_at_the_answered_level():
    """SEBF meters X's pairs: X's flows start before its entry is written (behind a
    blocked write here), marked with level 0's code and paced at the meters' rates, and
    once it is written the next answer moves both senders to the tag's DSCP, unpaced."""
    be, plane, drv, client = backend_for("sebf", [X, Y])
    be.preinstall()
    assert be.fixed is None and writes(drv) == []  # nothing written before a release
    hold_lane(plane, drv)
    be.release(X, 0.0)
    assert client.ops == ["open_job", "register"]
    got = {(o.flow_id, o.tag, o.level, o.dscp) for o in be.agents.orders}
    assert got == {("x.0", 1, 0, level_dscp(0)), ("x.1", 1, 0, level_dscp(0))}
    assert all(o.rate_mbps for o in be.agents.orders)  # the pair meters' rates
    drv.gate.set()
    drain(plane)
    assert len(writes(drv)) == 2
    be.release(Y, 0.5)  # its answer carries X's marks
    be.finished(X, 1.0)
    be.close()
    assert client.ops[-2:] == ["unregister", "close_job"]
    own = tag_dscp(1)
    assert {("h11", 1, own, True), ("h12", 1, own, True)} <= set(be.agents.marks)
    assert set(be.report.levels) == {"x", "y"} and be.report.static is False
    summary = be.times.summary()
    assert summary["level_marked"] == 2 and summary["writes_waited"] == 0


class SeenGate(emulation.OrderGate):
    """An order gate that says when someone waits at it."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()

    def wait(self, tag, timeout=5.0):
        self.entered.set()
        super().wait(tag, timeout)


def test_a_mark_waits_until_its_tags_send_orders_are_out():
    """The agent re-marks only flows it has: a mark for a tag whose orders are still on
    their way (its answer arrived, the release has not sent them) waits for them."""
    agents, gate = FakeAgents(), SeenGate()
    w = HostWriter(agents, {}, gate)
    gate.begin(7)
    w.put(HostUpdates(marks=(HostMark("h11", 7, 7),)))
    assert gate.entered.wait(5) and agents.marks == []  # held at the gate
    gate.end(7)
    w.lane.close()
    assert agents.marks == [("h11", 7, 7, False)]


def test_a_gate_that_never_opens_is_an_error_not_a_hang():
    gate = emulation.OrderGate()
    gate.begin(3)
    with pytest.raises(RuntimeError, match="tag 3: its send orders were not sent"):
        gate.wait(3, timeout=0.01)
    gate.wait(4, timeout=0.01)  # another tag passes


def test_a_release_does_not_wait_behind_host_updates():
    gate = threading.Event()
    agents = FakeAgents(gate)
    be, plane, drv, client = backend_for("fifo", [X, Y], agents=agents)
    be.preinstall()
    be.link.hosts.put(HostUpdates((HostLevel("h11", 9, 1),)))  # stuck until the gate opens
    be.release(Y, 0.0)  # returns although the host update is stuck
    assert agents.levels == [] and len(agents.orders) == 1
    gate.set()
    be.close()
    assert agents.levels == [("h11", 9, 1)]


def test_a_failed_request_is_reported_to_the_executor_and_later_releases():
    """X's entry fails to write after X was answered (SEBF's pair meters: not waited
    for): the next request fails, the executor hears of it, and later releases are
    refused."""
    be, plane, drv, client = backend_for("sebf", [X, Y])
    be.preinstall()
    hold_lane(plane, drv)
    be.release(X, 0.0)
    drv.fail = "switch gone"
    plane.spawn = lambda fn, *a: None  # the re-install after a failed write: not run here
    drv.gate.set()
    drain(plane)
    with pytest.raises(Exception, match="switch gone"):
        be.release(Y, 0.1)
    failed = be.wait_events(0)
    assert len(failed) == 1 and "switch gone" in failed[0].reason
    with pytest.raises(RuntimeError, match="controller request failed"):
        be.release(Y, 0.2)
    be.close()


def test_tick_feeds_agent_progress_to_a_clairvoyant_policy():
    """Under SEBF the backend polls the active senders' agents every PROGRESS_POLL_S and
    the controller re-rates from what is really left; identity-ranked runs poll nothing."""
    agents = FakeAgents()
    be, plane, drv, client = backend_for("sebf", [X], pacing=True, agents=agents)
    be.preinstall()
    be.release(X, 0.0)
    assert be.tick(1.0) == pytest.approx(1.0 + emulation.PROGRESS_POLL_S)
    be.close()
    assert sorted(agents.asked) == ["h11", "h12"]
    assert {r[0] for r in agents.rates} == {"h11", "h12"}  # both pairs re-rated
    assert client.ops.count("progress") == 1
    static, *_ = backend_for("fair", [X], agents=agents)
    static.preinstall()
    assert static.tick(1.0) is None
    static.close()


def test_a_static_release_makes_no_controller_round_trip_after_open():
    be, plane, drv, client = backend_for("fair", [X])
    be.preinstall()
    assert be.fixed is not None and len(writes(drv)) == 1  # the level's entry, before
    be.release(X, 0.0)
    be.finished(X, 1.0)
    be.close()
    assert client.ops == ["open_job", "close_job"] and len(be.agents.orders) == 2
    assert be.times.summary()["writes_waited"] == 0 and be.report.static is True


def test_release_times_measure_start_and_first_byte_from_the_release():
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


def test_name_losses_names_each_lost_host_and_its_flows():
    from coflowbed.emulation.backend import name_losses

    class Agents:
        def __init__(self, lost):
            self.lost, self.waited = lost, None

        def wait_lost(self, timeout_s):
            self.waited = timeout_s
            return dict(self.lost)

    class Executor:
        def unfinished_flows(self, hosts):
            assert hosts == {"h21"}
            return ["long.f0"], ["later.f0"]

    agents = Agents({"h21": "control connection closed"})
    line, block = name_losses(agents, Executor(), "RunFailed: flow long.f0 failed", wait=True)
    assert agents.waited > 0
    assert line.startswith("agent lost: h21 (control connection closed); flows lost: long.f0;")
    assert "1 flows of coflows not released yet" in line and line.endswith("long.f0 failed")
    assert block == {
        "hosts": {"h21": "control connection closed"},
        "flows": ["long.f0"],
        "not_released": ["later.f0"],
    }
    calm = Agents({})
    assert name_losses(calm, Executor(), "Interrupted: SIGTERM", wait=False) == (
        "Interrupted: SIGTERM",
        None,
    )
    assert calm.waited == 0.0


class LateSenders(FakeAgents):
    """Agents whose ``flow_sent`` events come after the run: one per call, then none."""

    def __init__(self, sent):
        super().__init__()
        self.queue = [
            SimpleNamespace(host="h11", get={"event": "flow_sent", "flow_id": f, **v}.get)
            for f, v in sent.items()
        ]

    def events(self, timeout):
        return [self.queue.pop(0)] if self.queue else []


def test_collect_sent_takes_the_late_acknowledgements_and_their_retransmissions():
    """x.0 resent 3000 bytes, x.1 none, y.0's kernel did not say (null): all three are
    confirmed, and only the two measured ones carry a count."""
    agents = LateSenders(
        {
            "x.0": {"retrans_bytes": 3000},
            "x.1": {"retrans_bytes": 0},
            "y.0": {"retrans_bytes": None},
        }
    )
    be, *_ = backend_for("fair", [X, Y], agents=agents)
    be.collect_sent(["x.0", "x.1", "y.0"], timeout_s=5.0)
    assert be.sent == {"x.0", "x.1", "y.0"} and be.retrans == {"x.0": 3000, "x.1": 0}


def test_collect_sent_gives_up_after_its_timeout():
    """No sender answers: it returns after the timeout with nothing recorded."""
    be, *_ = backend_for("fair", [X], agents=FakeAgents())
    be.collect_sent(["x.0"], timeout_s=0.05)
    assert be.sent == set() and be.retrans == {}


def test_retransmitted_sums_the_measured_flows_only():
    """Measured: 1 MB with 30 kB again and 1 kB with none -> 30000 bytes, a share of
    30000 / 1001000; the unmeasured flow (None) counts nowhere; nothing measured: None."""
    recs = [
        FlowRecord("a", "c", "h1", "h2", 1_000_000, retrans_bytes=30_000),
        FlowRecord("b", "c", "h1", "h2", 1000, retrans_bytes=0),
        FlowRecord("s", "c", "h1", "h2", 5000),
    ]
    out = emulation.retransmitted(recs)
    assert out == {
        "bytes": 30_000,
        "share": round(30_000 / 1_001_000, 6),
        "flows": 1,
        "flows_measured": 2,
    }
    assert emulation.retransmitted(recs[2:]) is None
