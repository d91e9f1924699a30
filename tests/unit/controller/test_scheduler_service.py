"""The controller's coflow scheduler (controller.scheduler_service) over a fake switch
driver: answers, write order and coalescing, errors, plugins; and, on event logs
recorded by emulated runs of the shipped scenarios, the same changes for the same
events as the orchestrator's in-process scheduler made before it moved here."""

from __future__ import annotations

import gzip
import json
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from controller.coflow_table import FlowRate, TagEntry
from controller.messages import (
    POLL_COUNTERS,
    HostLevel,
    HostMark,
    HostUpdates,
    OpenJob,
    PolicySpec,
    Progress,
    Register,
    Registered,
    Unregister,
)
from controller.scheduler import Changes
from controller.scheduler_service import (
    SchedulerService,
    _Job,
    merge_changes,
    replay,
    split_own,
)
from tests.fakes import PLAN, hold_lane, ready_plane
from topo.plan import FabricPlan
from workload.dag import Coflow, Flow
from workload.marking import level_dscp, tag_dscp

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings" / "scheduler"
A = Coflow("a", (Flow("a.0", "h11", "h21", 5000),))
B = Coflow("b", (Flow("b.0", "h12", "h22", 100),))


def call(plane, op, msg=None):
    """One request through its JSON form; the decoded reply."""
    request = {"op": op, **({} if msg is None else msg.to_wire())}
    return json.loads(json.dumps(plane.handle(json.loads(json.dumps(request)))))


def writes(drv):
    """The switch writes that changed something (installs apply empty diffs)."""
    return [a for a in drv.applied if a]


def test_merge_keeps_clears_first_and_the_last_value_per_key():
    m = merge_changes(
        [
            Changes([TagEntry(1, 0), TagEntry(2, 3)], [], [HostLevel("h1", 2, 3)]),
            Changes([TagEntry(2, 5)], [7], [HostLevel("h1", 2, 5)]),
        ]
    )
    assert m.clear_tags == [7]
    assert [(e.tag, e.level) for e in m.entries] == [(1, 0), (2, 5)]
    assert m.host_levels == [HostLevel("h1", 2, 5)]


def test_a_new_coflow_needs_only_its_own_entry_and_the_clears_before_it():
    own, rest = split_own(Changes([TagEntry(1, 0), TagEntry(2, 1)], [9], [HostLevel("h", 1, 0)]), 2)
    assert [e.tag for e in own.entries] == [2] and own.clear_tags == [9] and not own.host_levels
    assert [e.tag for e in rest.entries] == [1] and rest.host_levels == [HostLevel("h", 1, 0)]


def registered(reply: dict) -> Registered:
    """A ``register`` reply decoded (it must have succeeded)."""
    assert reply.pop("ok"), reply
    return Registered.from_wire(reply)


def drain(plane) -> None:
    """Until the job's switch writes queued so far are done."""
    plane.scheduler.job.lane.put(Changes()).result(5)


def test_register_on_an_idle_lane_answers_after_its_entry_is_written():
    plane, drv = ready_plane(PLAN, levels=4)
    assert call(plane, "open_job", OpenJob(PolicySpec("fifo"), False, (A, B)))["ok"]
    got = registered(call(plane, "register", Register(B, 0.0)))
    assert got.written and got.assignment.dscps == () and len(writes(drv)) == 1


def test_register_answers_before_an_entry_with_pair_meters_is_written():
    """SEBF meters each pair (MADD) but not the coflow: the answer comes while the
    coflow's own write is still queued (behind a blocked one here), marking its packets
    with its level's code and pacing its pair at the meter's rate; once the write is
    done, the next answer moves its sender to the tag's DSCP and lifts the pacing."""
    plane, drv = ready_plane(PLAN, levels=4)
    assert call(plane, "open_job", OpenJob(PolicySpec("sebf"), False, (A, B)))["ok"]
    hold_lane(plane, drv)
    first = registered(call(plane, "register", Register(B, 0.0)))
    tag = first.assignment.tag
    assert writes(drv) == []  # the write ahead is blocked in the switch, B's behind it
    assert not first.written and first.assignment.level == 0
    assert first.assignment.dscps == (("h12", level_dscp(0)),)
    assert [(r.src, r.dst) for r in first.pair_rates] == [("h12", "h22")]
    assert first.pair_rates[0].rate_mbps > 0
    drv.gate.set()
    drain(plane)
    second = registered(call(plane, "register", Register(A, 0.1)))  # bigger: below B
    assert HostMark("h12", tag, tag_dscp(tag), unpace=True) in second.hosts.marks
    assert second.assignment.level > first.assignment.level
    report = call(plane, "close_job")
    assert report["levels"] == {"a": second.assignment.level, "b": 0}
    assert report["static"] is False and len(report["write_s"]) == len(writes(drv)) == 3


@pytest.mark.parametrize(
    "spec",
    [
        PolicySpec("static", static_levels={"a": 1}, static_rates_mbps={"a": 40.0}),
        PolicySpec("fifo"),
    ],
    ids=["coflow-meter", "no-meter"],
)
def test_an_entry_without_pair_meters_only_is_written_before_the_answer(spec):
    """A coflow-wide meter (its senders could not keep it) or rules alone: the answer
    waits for the write, also behind a blocked one."""
    plane, drv = ready_plane(PLAN, levels=4)
    assert call(plane, "open_job", OpenJob(spec, False, (A,)))["ok"]
    hold_lane(plane, drv)
    answer: list[dict] = []
    asking = threading.Thread(
        target=lambda: answer.append(call(plane, "register", Register(A, 0.0)))
    )
    asking.start()
    asking.join(0.3)
    assert asking.is_alive() and answer == []  # waits behind the blocked write
    drv.gate.set()
    asking.join(5)
    got = registered(answer[0])
    assert got.written and got.assignment.dscps == () and len(writes(drv)) == 2


def test_a_coflow_re_ranked_before_its_entry_is_written_gets_its_new_levels_code():
    """c0 (big, h11) is pending when c1 (small, h11) arrives: SEBF moves c0 down, and
    with its entry not yet written its sender re-marks with the new level's code."""
    plane, drv = ready_plane(PLAN, levels=4)
    c0 = Coflow("c0", (Flow("c0.0", "h11", "h21", 4000),))
    c1 = Coflow("c1", (Flow("c1.0", "h11", "h22", 1000),))
    call(plane, "open_job", OpenJob(PolicySpec("sebf"), False, (c0, c1)))
    hold_lane(plane, drv)
    first = registered(call(plane, "register", Register(c0, 0.0)))
    second = registered(call(plane, "register", Register(c1, 0.1)))
    moved = [u for u in second.hosts.levels if u.tag == first.assignment.tag]
    assert moved and moved[0].level > first.assignment.level
    assert HostMark("h11", first.assignment.tag, level_dscp(moved[0].level)) in second.hosts.marks
    drv.gate.set()
    drain(plane)
    call(plane, "close_job")


def test_a_written_entry_moves_each_sender_to_its_own_dscp_unpaced():
    """Once tag 56's entry is written, h11 (remapped to DSCP 31: ``controller.tags``)
    and h12 (the tag's own, 1) get their DSCPs, unpaced (its pair meters took over); a
    re-rank of a tag still on its way gets the new level's code instead."""
    flow_rates = (FlowRate("h11", "h22", 10.0), FlowRate("h12", "h22", 10.0))
    entry = TagEntry(56, 2, flow_rates=flow_rates, dscps=(("h11", 31),))
    job = _Job(None, None, None)  # type: ignore[arg-type]  # only its marks are used
    job.pending = {56: (entry, ("h11", "h12")), 7: (TagEntry(7, 1), ("h13",))}
    job.landed = [entry]
    got = SchedulerService._hosts(job, Changes(host_levels=[HostLevel("h13", 7, 3)]))
    assert set(got.marks) == {
        HostMark("h13", 7, level_dscp(3)),
        HostMark("h11", 56, 31, unpace=True),
        HostMark("h12", 56, 1, unpace=True),
    }
    assert set(job.pending) == {7} and job.landed == []


def test_a_coflow_done_before_its_entry_is_written_is_not_marked_after():
    plane, drv = ready_plane(PLAN, levels=4)
    call(plane, "open_job", OpenJob(PolicySpec("sebf"), False, (A, B)))
    hold_lane(plane, drv)
    tag = registered(call(plane, "register", Register(A, 0.0))).assignment.tag
    call(plane, "unregister", Unregister("a", 0.5))
    drv.gate.set()
    drain(plane)
    later = registered(call(plane, "register", Register(B, 1.0)))
    assert [m for m in later.hosts.marks if m.host == "h11"] == [], tag
    call(plane, "close_job")


def test_writes_queued_behind_a_slow_one_are_merged_and_the_last_decision_wins():
    plane, drv = ready_plane(PLAN, levels=4)
    sizes = [4000, 3000, 2000, 1000]  # each new coflow is smaller: SEBF re-ranks the others
    coflows = [Coflow(f"c{i}", (Flow(f"c{i}.0", "h11", "h21", n),)) for i, n in enumerate(sizes)]
    call(plane, "open_job", OpenJob(PolicySpec("sebf"), False, tuple(coflows)))
    for i, c in enumerate(coflows):
        call(plane, "register", Register(c, 0.1 * i))
    plane.scheduler.job.lane.put(Changes()).result(5)  # the re-rank writes are done
    before = len(writes(drv))
    drv.gate, drv.entered = threading.Event(), threading.Event()
    call(plane, "unregister", Unregister("c3", 1.0))  # its re-rank write blocks in the fake
    assert drv.entered.wait(5)
    call(plane, "unregister", Unregister("c2", 1.1))  # these two queue up behind it
    call(plane, "unregister", Unregister("c1", 1.2))
    drv.gate.set()
    report = call(plane, "close_job")
    assert len(writes(drv)) == before + 2  # the blocked write, then the two queued as one
    # c0 moved up once, when c3 left with the lowest level in use (keep_levels), and
    # only the last decision (c0 alone) gives it a rate: the whole link, metered
    assert report["levels"]["c0"] == 2
    c0_rules = [r for r in plane.tables["l1"].rules.values() if r.tag == 1]  # c0 took tag 1
    assert c0_rules and {r.level for r in c0_rules} == {2}  # what the switch holds
    meters = plane.tables["l1"].meters
    assert [m.rate_kbps for k, m in meters.items() if k[1] == 1] == [100_000]


def test_a_failed_write_fails_its_metered_register_and_every_later_request():
    plane, drv = ready_plane(PLAN, levels=4)
    spec = PolicySpec("static", static_levels={"a": 1}, static_rates_mbps={"a": 40.0})
    call(plane, "open_job", OpenJob(spec, False, (A, B)))
    drv.fail, plane.spawn = "switch gone", (lambda fn, *a: None)
    assert call(plane, "register", Register(A, 0.0)) == {"ok": False, "error": "switch gone"}
    later = call(plane, "unregister", Unregister("a", 1.0))
    assert not later["ok"] and "earlier scheduled switch write failed" in later["error"]


def test_a_failed_write_not_waited_for_fails_every_request_after_it():
    plane, drv = ready_plane(PLAN, levels=4)
    call(plane, "open_job", OpenJob(PolicySpec("sebf"), False, (A, B)))
    hold_lane(plane, drv)
    assert not registered(call(plane, "register", Register(A, 0.0))).written
    drv.fail, plane.spawn = "switch gone", (lambda fn, *a: None)
    drv.gate.set()
    drain(plane)  # the failed writes are behind us
    later = call(plane, "unregister", Unregister("a", 1.0))
    assert not later["ok"] and "earlier scheduled switch write failed" in later["error"]


def test_job_state_errors_and_bad_policies_are_refused_in_one_line():
    plane, _ = ready_plane(PLAN, levels=4)
    assert call(plane, "register", Register(A, 0.0))["error"].startswith("no job is open")
    bad = call(plane, "open_job", OpenJob(PolicySpec("nope"), False, (A,)))
    assert not bad["ok"] and "unknown name 'nope'" in bad["error"]
    assert call(plane, "open_job", OpenJob(PolicySpec("fifo"), False, (A,)))["ok"]
    assert (
        "already open" in call(plane, "open_job", OpenJob(PolicySpec("fifo"), False, (A,)))["error"]
    )


def test_a_plugin_policy_runs_in_the_controller(tmp_path):
    plugin = tmp_path / "lifo_plugin.py"
    plugin.write_text(
        "from controller.policies import register\n"
        "from controller.policies.base import Decision, Policy\n"
        "@register\n"
        "class Lifo(Policy):\n"
        "    name = 'test-lifo-plugin'\n"
        "    def decide(self, states, fabric, now):\n"
        "        return {s.coflow_id: Decision((-s.arrival_seq,)) for s in states}\n"
    )
    from controller import policies

    plane, _ = ready_plane(PLAN, levels=4)
    try:
        spec = PolicySpec("test-lifo-plugin", plugins=(str(plugin),))
        assert call(plane, "open_job", OpenJob(spec, False, (A, B)))["ok"]
        call(plane, "register", Register(A, 0.0))
        newer = call(plane, "register", Register(B, 0.1))
        assert newer["level"] == 0 and newer["hosts"]["levels"] == [["h11", 1, 1]]  # A moved down
    finally:
        policies.unregister("test-lifo-plugin")


def recordings() -> list[Path]:
    return sorted(RECORDINGS.glob("*.jsonl.gz"))


@pytest.mark.parametrize("path", recordings(), ids=lambda p: p.name.split(".")[0])
def test_recorded_runs_replay_to_the_same_changes(path):
    """Logs of emulated runs of the shipped scenarios (each event checked, when it was
    recorded, against the in-process scheduler the orchestrator ran before: see
    tests/recordings/README.md): the controller's scheduler makes the same changes."""
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    header, events = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    compared: list[str] = []

    def check(recorded: dict, replayed: dict) -> None:
        where = f"event {len(compared)} ({recorded['op']})"
        assert replayed["changes"] == recorded["changes"], where
        assert replayed.get("fixed") == recorded.get("fixed"), where  # levels for the DAG
        compared.append(recorded["op"])

    replay(FabricPlan.from_dict(header["fabric"]), header["levels"], events, check)
    assert len(compared) == len(events) and compared[0] == "open_job"


def test_there_are_recordings_of_dynamic_and_static_policies():
    names = {p.name.split(".")[0] for p in recordings()}
    assert {"fb-slice-sebf", "small-moe-dclas", "default-static"} <= names


def test_a_policy_that_raises_is_answered_as_a_policy_error(tmp_path):
    plugin = tmp_path / "boom_plugin.py"
    plugin.write_text(
        "from controller.policies import register\n"
        "from controller.policies.base import Policy\n"
        "@register\n"
        "class Boom(Policy):\n"
        "    name = 'test-boom-plugin'\n"
        "    def decide(self, states, fabric, now):\n"
        "        raise ArithmeticError('exploded on purpose')\n"
    )
    from controller import policies

    plane, _ = ready_plane(PLAN, levels=4)
    try:
        spec = PolicySpec("test-boom-plugin", plugins=(str(plugin),))
        assert call(plane, "open_job", OpenJob(spec, False, (A,)))["ok"]
        reply = call(plane, "register", Register(A, 0.0))
        assert not reply["ok"] and reply["error"].startswith("PolicyError: policy")
        assert "ArithmeticError: exploded on purpose" in reply["error"]
    finally:
        policies.unregister("test-boom-plugin")


def test_the_controller_applies_the_inter_job_rule_of_the_policy_spec():
    """Hermod inside two jobs under strict priority (b first), K = 4: blocks 0..1 for b,
    2..3 for a, so the ranks are (0,) for b's coflow and (2,) for a's; the whole-DAG
    compression (static mode) keeps their order on levels 0 and 1: b before a."""
    from controller.policies.interjob import InterJobSpec, JobClass
    from workload.dag import CoflowIdentity, CoflowType

    ja = Coflow("a/x", A.flows, CoflowIdentity(CoflowType.EP, "a"))
    jb = Coflow("b/x", B.flows, CoflowIdentity(CoflowType.EP, "b"))
    spec = InterJobSpec("priority", (JobClass("a", 1), JobClass("b", 0)))
    plane, _ = ready_plane(PLAN, levels=4)
    opened = call(plane, "open_job", OpenJob(PolicySpec("hermod", inter_job=spec), False, (ja, jb)))
    assert opened["ok"] and {c: lv for c, (_, lv) in opened["fixed"].items()} == {
        "b/x": 0,
        "a/x": 1,
    }


class CountingWriter:
    """A switch writer that writes nothing and counts its tag counter reads."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.reads = 0

    def clear_tags(self, tags) -> int:
        return 0

    def set_entries(self, entries) -> int:
        return 0

    def tag_bytes(self) -> dict[int, int]:
        self.reads += 1
        return dict(self.counts)


EXAMPLE_PLUGIN = Path(__file__).resolve().parents[3] / "examples" / "my_policy.py"
C = Coflow("c", (Flow("c.0", "h11", "h22", 300),))


@pytest.fixture
def least_sent():
    """The examples' ``pp-then-least-sent`` (declares ``reads_bytes_sent``), and the same
    policy registered without the flag as ``test-least-sent-unflagged``; both forgotten
    after the test."""
    from controller import policies
    from controller.policies.plugins import import_plugin, module_name

    import_plugin(EXAMPLE_PLUGIN)
    flagged = policies.policy_class("pp-then-least-sent")
    unflagged = type(
        "Unflagged", (flagged,), {"name": "test-least-sent-unflagged", "reads_bytes_sent": False}
    )
    policies.register(unflagged)
    yield PolicySpec("pp-then-least-sent", plugins=(str(EXAMPLE_PLUGIN),))
    policies.unregister("test-least-sent-unflagged")
    policies.unregister("pp-then-least-sent")
    sys.modules.pop(module_name(EXAMPLE_PLUGIN), None)


def test_a_policy_reading_bytes_sent_gets_the_tag_counters_at_each_poll(least_sent):
    """Its polls read the counters into ``bytes_sent`` (no re-decision on a poll); the
    next release ranks by them: c (0 sent), b (100), a (4000), not in arrival order."""
    writer = CountingWriter()
    service = SchedulerService(PLAN, 4, writer)
    assert service.open_job(OpenJob(least_sent, False, (A, B, C))).poll == POLL_COUNTERS
    service.register(Register(A, 0.0))
    service.register(Register(B, 0.0))
    sched = service.job.scheduler
    writer.counts = {sched.tags["a"]: 4000, sched.tags["b"]: 100}
    assert service.progress(Progress(0.1)) == HostUpdates()
    assert writer.reads == 1
    assert (sched.states["a"].bytes_sent, sched.states["b"].bytes_sent) == (4000, 100)
    service.register(Register(C, 0.2))
    assert sched.last_rank == {"a": (1, 4000, 0), "b": (1, 100, 1), "c": (1, 0, 2)}
    assert sched.level_of("c") < sched.level_of("b") < sched.level_of("a")
    assert writer.reads == 1  # the release itself reads no counter


def test_a_policy_not_reading_bytes_sent_never_reads_the_counters(least_sent):
    writer = CountingWriter()
    service = SchedulerService(PLAN, 4, writer)
    spec = replace(least_sent, name="test-least-sent-unflagged")
    assert service.open_job(OpenJob(spec, False, (A, B))).poll is None
    service.register(Register(A, 0.0))
    writer.counts = {service.job.scheduler.tags["a"]: 4000}
    service.progress(Progress(0.1))
    service.register(Register(B, 0.2))
    assert writer.reads == 0 and service.job.scheduler.states["a"].bytes_sent == 0
