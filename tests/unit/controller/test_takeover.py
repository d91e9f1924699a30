"""A controller restarted mid-job (controller.takeover, ControlPlane with ``resume``):
the new control plane rebuilds its scheduler from the old one's event log, reads the
switches back and writes only what differs; the answers the old one decided are given
back.  Over a fake driver that keeps what it is written (a switch that outlives its
controller)."""

from __future__ import annotations

import json

from controller.coflow_table import LeafTable, TagRule, leaf_state, rule_cookie
from controller.control_plane import ControlConfig, ControlPlane
from controller.messages import OpenJob, PolicySpec, Progress, Register, Resume, Unregister
from controller.routing import leaf_groups
from controller.scheduler_service import read_events
from controller.southbound.base import InstalledMeter, InstalledRule, SwitchState
from controller.takeover import adopted_epochs, adopted_table
from tests.fakes import PLAN, FakeDriver
from workload.dag import Coflow, Flow

A = Coflow("a", (Flow("a.0", "h11", "h21", 5000), Flow("a.1", "h22", "h12", 300)))
B = Coflow("b", (Flow("b.0", "h12", "h22", 100),))
C = Coflow("c", (Flow("c.0", "h21", "h11", 900),))


class KeepingDriver(FakeDriver):
    """A FakeDriver whose leaves keep what they are written, and read it back."""

    def __init__(self, plan=PLAN):
        super().__init__(plan)
        self.held: dict[str, LeafTable] = {}

    def apply(self, diffs, timeout):
        n = super().apply(diffs, timeout)
        for name, d in diffs.items():
            t = self.held.setdefault(name, LeafTable())
            for mid, m in d.meters_add + d.meters_mod:
                t.meters[m.key], t.meter_ids[m.key] = m, mid
            for r in d.rules_add + d.rules_mod:
                t.rules[r.key] = r
            for r in d.rules_del:
                t.rules.pop(r.key)
            for _mid, m in d.meters_del:
                t.meters.pop(m.key), t.meter_ids.pop(m.key)
        return n

    def read_state(self, switch, timeout):
        sw = self.plan.switch(switch)
        if sw.role != "leaf":
            return SwitchState(True, "")
        t = self.held.get(switch, LeafTable())
        rules = tuple(
            InstalledRule(r.tag, r.in_port, r.dst_ip, r.level, t.meter_ids.get(r.meter), r.cookie)
            for r in t.rules.values()
        )
        meters = tuple(
            InstalledMeter(t.meter_ids[k], m.rate_kbps, m.burst_kbit) for k, m in t.meters.items()
        )
        return SwitchState(True, "", rules, meters, leaf_groups(self.plan, sw.index))


def plane(drv, tmp_path, resume=False):
    tmp_path.mkdir(exist_ok=True)
    cfg = ControlConfig(levels=4, events_path=tmp_path / "events.jsonl", resume=resume)
    p = ControlPlane(PLAN, drv, cfg, spawn=lambda fn, *a: fn(*a))
    for sw in PLAN.switches:
        p.switch_connected(sw.name)
    return p


def ask(p, op, msg=None):
    request = {"op": op, **({} if msg is None else msg.to_wire())}
    return json.loads(json.dumps(p.handle(json.loads(json.dumps(request)))))


def run_half_a_job(p):
    """open (SEBF), three releases, a completion, a progress poll: the replies in order."""
    replies = [ask(p, "open_job", OpenJob(PolicySpec("sebf"), False, (A, B, C)))]
    replies.append(ask(p, "register", Register(A, 0.0)))
    replies.append(ask(p, "register", Register(B, 0.1)))
    replies.append(ask(p, "unregister", Unregister("b", 0.2)))
    replies.append(ask(p, "register", Register(C, 0.3)))
    replies.append(ask(p, "progress", Progress(0.4, {"a.0": 4000}, ())))
    return replies


def decided(replies: list[dict]) -> list[dict]:
    """``replies`` without their host marks (which follow when switch writes ended)."""
    out = []
    for r in replies:
        hosts = r.get("hosts") if "hosts" in r else r if "marks" in r else None
        if hosts is None:
            out.append(r)
            continue
        stripped = {k: v for k, v in hosts.items() if k != "marks"}
        out.append({**r, "hosts": stripped} if "hosts" in r else stripped)
    return out


def settle(p):
    """Let the old plane's queued switch writes finish."""
    from controller.scheduler import Changes

    p.scheduler.job.lane.put(Changes()).result(5)


def test_a_restarted_controller_takes_over_without_writing_and_gives_the_answers_back(tmp_path):
    drv = KeepingDriver()
    old = plane(drv, tmp_path)
    replies = run_half_a_job(old)
    settle(old)
    held = {n: (dict(t.rules), dict(t.meters), dict(t.meter_ids)) for n, t in drv.held.items()}
    writes_before = len(drv.applied)

    new = plane(drv, tmp_path, resume=True)
    assert new.all_ready()
    assert all(not d for d in drv.applied[writes_before:])  # nothing written
    assert held == {n: (t.rules, t.meters, t.meter_ids) for n, t in drv.held.items()}
    assert new.entries == old.entries and new.epochs == old.epochs
    # every answer as the old one decided it (marks say when writes ended: not replayed)
    assert decided(new.scheduler.replayed) == decided(replies)
    assert decided(ask(new, "resume", Resume(4))["replies"]) == decided(replies[4:])
    assert ask(new, "resume", Resume(len(replies)))["replies"] == []
    # the job goes on as if nothing had happened: the same answer as without a restart
    ref_drv = KeepingDriver()
    ref = plane(ref_drv, tmp_path / "ref")
    run_half_a_job(ref)
    end = Unregister("a", 0.5)
    assert decided([ask(new, "unregister", end)]) == decided([ask(ref, "unregister", end)])
    settle(new)
    settle(ref)
    assert new.entries == ref.entries
    assert {n: t.rules for n, t in drv.held.items()} == {
        n: t.rules for n, t in ref_drv.held.items()
    }


def test_a_write_the_old_controller_did_not_finish_is_written_once(tmp_path):
    drv = KeepingDriver()
    old = plane(drv, tmp_path)
    run_half_a_job(old)
    settle(old)
    lost = next(iter(drv.held["l2"].rules))  # as if killed before this rule reached l2
    want = drv.held["l2"].rules.pop(lost)
    n = len(drv.applied)
    new = plane(drv, tmp_path, resume=True)
    written = [d for d in drv.applied[n:] if d]
    assert [list(w) for w in written] == [["l2"]]
    (diff,) = written[0].values()
    assert diff.rules_add == [want] and diff.count() == 1
    assert new.all_ready()


def test_a_rule_of_a_tag_nobody_wants_any_more_is_deleted_and_epochs_stay_unique(tmp_path):
    drv = KeepingDriver()
    old = plane(drv, tmp_path)
    run_half_a_job(old)
    settle(old)
    stray = TagRule(40, 1, None, 2, None, rule_cookie(40, 77))
    drv.held["l1"].rules[stray.key] = stray
    n = len(drv.applied)
    new = plane(drv, tmp_path, resume=True)
    (w,) = [d for d in drv.applied[n:] if d]
    assert w["l1"].rules_del == [stray]
    assert new._next_epoch > 77  # a later incarnation never reuses a cookie seen on a switch


def test_adopted_table_round_trips_what_leaf_state_makes():
    from controller.coflow_table import FlowRate, TagEntry

    entries = [
        TagEntry(3, 1, rate_mbps=20.0),
        TagEntry(4, 2, flow_rates=(FlowRate("h11", "h21", 5.0),)),
        TagEntry(5, 0, senders=frozenset({"h12"})),
    ]
    epochs = {3: 1, 4: 2, 5: 9}
    rules, meters = leaf_state(PLAN, 1, entries, epochs)
    table = LeafTable()
    diff, ids = table.diff(rules, meters)
    state = SwitchState(
        True,
        "",
        tuple(
            InstalledRule(r.tag, r.in_port, r.dst_ip, r.level, ids.get(r.meter), r.cookie)
            for r in rules.values()
        ),
        tuple(InstalledMeter(ids[k], m.rate_kbps, m.burst_kbit) for k, m in meters.items()),
    )
    back = adopted_table(PLAN, "l1", state)
    assert back.diff(rules, meters)[0].count() == 0
    assert back.meter_ids == ids
    assert adopted_epochs([back], [3, 4, 5, 6], 1) == ({3: 1, 4: 2, 5: 9, 6: 10}, 11)


def test_a_meter_missing_or_unused_is_repaired_by_the_diff():
    r = InstalledRule(3, 1, None, 1, 7, rule_cookie(3, 1))  # meter 7 is not there
    state = SwitchState(True, "", (r,), (InstalledMeter(9, 1000, 250),))  # 9: nobody's
    table = adopted_table(PLAN, "l1", state)
    from controller.coflow_table import TagEntry

    rules, meters = leaf_state(PLAN, 1, [TagEntry(3, 1, rate_mbps=20.0)], {3: 1})
    diff, _ids = table.diff(rules, meters)
    assert [m.key for _i, m in diff.meters_del] == [("orphan", 9)]
    assert [m.key for _i, m in diff.meters_add] == [("host", 3, "h11"), ("host", 3, "h12")]
    assert [x.in_port for x in diff.rules_mod] == [1] and [x.in_port for x in diff.rules_add] == [2]


def test_an_event_cut_short_by_a_crash_is_dropped_from_the_log(tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_text('{"op": "open_job"}\n{"op": "regis')
    assert read_events(log) == [{"op": "open_job"}]
    assert log.read_text() == '{"op": "open_job"}\n'
