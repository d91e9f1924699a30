"""Control plane logic against a fake switch driver (unit test: no switches)."""

from __future__ import annotations

import re
import threading
import time
from types import SimpleNamespace

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp, ofproto_v1_3_parser as parser

from controller.coflow_table import cookie_tag, rule_cookie
from controller.control_plane import ControlConfig, ControlPlane
from controller.southbound import of_messages as ofm
from tests.fakes import PLAN, FakeDriver, ready_plane
from workload.marking import TAG_ID_MAX, TAG_MAX

OF_DP = SimpleNamespace(ofproto=ofp, ofproto_parser=parser, id=0x1001)


def _ready_plane():
    return ready_plane(PLAN)


def test_ready_only_after_every_switch_is_installed():
    drv = FakeDriver()
    plane = ControlPlane(PLAN, drv, ControlConfig(), spawn=lambda fn, *a: fn(*a))
    plane.switch_connected("l1")
    assert plane.handle({"op": "status"})["ready"] is False
    refused = plane.handle({"op": "set", "entries": [{"tag": 1, "level": 0}]})
    assert refused == {"ok": False, "error": "l2: not connected/installed yet"}
    for name in ("l2", "s1"):
        plane.switch_connected(name)
    assert plane.handle({"op": "status"})["ready"] is True
    plane.switch_disconnected("s1")
    assert plane.handle({"op": "status"})["ready"] is False


def test_set_writes_only_changes_and_reports_applied_time():
    plane, drv = _ready_plane()
    received = time.monotonic() - 0.25  # the request waited 0.25 s before it was handled
    r1 = plane.handle({"op": "set", "entries": [{"tag": 3, "level": 1, "rate_mbps": 5}]}, received)
    assert r1["ok"] and r1["written"] == 8  # 2 leaves x (2 meters + 2 rules)
    assert 0.25 <= r1["applied_s"] < 5.25  # from receipt to applied, not from handling
    r2 = plane.handle({"op": "set", "entries": [{"tag": 3, "level": 2, "rate_mbps": 5}]})
    assert r2["written"] == 4  # only the rules' level changed
    assert all(len(d.rules_mod) == 2 and not d.meters_mod for d in drv.applied[-1].values())
    r3 = plane.handle({"op": "set", "entries": [{"tag": 3, "level": 2, "rate_mbps": 5}]})
    assert r3["written"] == 0
    r4 = plane.handle({"op": "clear", "tags": [3]})
    assert r4["written"] == 8 and plane.tables["l1"].rules == {}


def test_reconnected_leaf_gets_base_pipeline_and_current_tags_again():
    plane, drv = _ready_plane()
    plane.handle({"op": "set", "entries": [{"tag": 3, "level": 1}]})
    drv.base.clear()
    plane.switch_connected("l2")
    assert drv.base == ["l2"]
    assert len(drv.applied[-1]["l2"].rules_add) == 2 and "l1" not in drv.applied[-1]


def test_failed_write_keeps_the_old_state_reports_the_error_and_resyncs():
    plane, drv = _ready_plane()
    spawned = []
    plane.spawn = lambda fn, *a: spawned.append(a)  # run nothing while the lock is held
    drv.fail = "l1: 1 write(s) refused: error type=12 code=1"
    reply = plane.handle({"op": "set", "entries": [{"tag": 3, "level": 1}]})
    assert reply == {"ok": False, "error": drv.fail}
    assert plane.entries == {} and plane.tables["l1"].rules == {}
    assert spawned == [("l1",), ("l2",)] and not plane.all_ready()


def test_tag_stats_count_live_and_removed_rules_of_the_current_incarnation():
    plane, drv = _ready_plane()
    plane.handle({"op": "set", "entries": [{"tag": 3, "level": 1}]})
    cookie = rule_cookie(3, plane.epochs[3])
    drv.counters = {"l1": {cookie: (1000, 10)}, "l2": {cookie: (500, 5)}}
    plane.on_removed("l1", cookie, 300, 3)  # e.g. a pair rule that was replaced
    plane.on_removed("l1", rule_cookie(3, 99), 7777, 7)  # an older incarnation: ignored
    assert plane.handle({"op": "tag_stats"})["tags"] == {"3": {"bytes": 1800, "packets": 18}}
    plane.handle({"op": "clear", "tags": [3]})
    plane.handle({"op": "set", "entries": [{"tag": 3, "level": 1}]})
    drv.counters = {}
    assert plane.handle({"op": "tag_stats"})["tags"] == {"3": {"bytes": 0, "packets": 0}}


def test_meter_stats_are_labelled_with_tag_and_host():
    plane, _drv = _ready_plane()
    plane.handle({"op": "set", "entries": [{"tag": 3, "level": 1, "rate_mbps": 1}]})
    meters = plane.handle({"op": "meter_stats"})["meters"]
    assert {(m["switch"], m["tag"], m["src"], m["drop_packets"]) for m in meters} == {
        ("l1", 3, "h11", 2),
        ("l2", 3, "h21", 2),
    }


def test_cleared_meters_keep_their_last_counters():
    plane, _drv = _ready_plane()
    plane.handle(
        {"op": "set", "entries": [{"tag": 3, "level": 1, "rate_mbps": 1}, {"tag": 4, "level": 1}]}
    )
    plane.handle({"op": "clear", "tags": [3]})
    meters = plane.handle({"op": "meter_stats"})["meters"]
    assert {(m["switch"], m["tag"], m["drop_packets"], m.get("retired")) for m in meters} == {
        ("l1", 3, 2, True),
        ("l2", 3, 2, True),
    }


@pytest.mark.parametrize(
    "req,msg",
    [
        ({"op": "nope"}, "op: must be one of"),
        ({"op": "status", "x": 1}, "x: unknown key for op 'status'"),
        (
            {"op": "set", "entries": [{"tag": 3, "level": 4}]},
            r"entries\[0\]: level must be an int in 0..3",
        ),
        ({"op": "wait_ready", "timeout_s": -1}, "timeout_s: must be a number"),
        ([1, 2], "op: must be one of"),
    ],
)
def test_bad_requests_get_errors(req, msg):
    plane, _drv = _ready_plane()
    reply = plane.handle(req)
    assert reply["ok"] is False
    assert re.search(msg, reply["error"])


def test_wait_ready_is_woken_by_the_last_install():
    drv = FakeDriver()
    plane = ControlPlane(PLAN, drv, ControlConfig(), spawn=lambda fn, *a: fn(*a))
    result = {}
    t = threading.Thread(
        target=lambda: result.update(plane.handle({"op": "wait_ready", "timeout_s": 10}))
    )
    t.start()
    for sw in PLAN.switches:
        plane.switch_connected(sw.name)
    t.join(10)
    assert not t.is_alive() and result["ready"] is True
    assert plane.handle({"op": "wait_ready", "timeout_s": 0})["ready"] is True


def test_tags_sharing_a_dscp_on_different_senders_get_one_openflow_match_each():
    """Tags 3 and 58 (= 55 + 3) both go out as DSCP 3: h11 (l1 port 1) sends 3, h12
    (l1 port 2) sends 58, so l1 gets (port 1, DSCP 3) and (port 2, DSCP 3), told apart
    by their cookies; l2 gets nothing."""
    plane, drv = _ready_plane()
    entries = [
        {"tag": 3, "level": 1, "senders": ["h11"]},
        {"tag": 58, "level": 2, "senders": ["h12"]},
    ]
    assert plane.handle({"op": "set", "entries": entries})["written"] == 2
    diffs = drv.applied[-1]
    msgs = ofm.diff_msgs(OF_DP, diffs["l1"])
    got = {(dict(m.match.items())["in_port"], dict(m.match.items())["ip_dscp"]) for m in msgs}
    assert got == {(1, 3), (2, 3)} and set(diffs) == {"l1"}
    assert sorted(cookie_tag(m.cookie) for m in msgs) == [3, 58]
    assert sorted(ofm.parse_tag_rule(OF_DP, m)[0] for m in msgs) == [3, 58]


@pytest.mark.parametrize(
    "first, then",
    [
        ([], [{"tag": 3, "level": 1}, {"tag": 58, "level": 1, "senders": ["h11"]}]),
        ([{"tag": 3, "level": 1}], [{"tag": 58, "level": 1, "senders": ["h11"]}]),
    ],
)
def test_tags_sharing_a_dscp_on_one_sender_are_refused_before_any_write(first, then):
    """Tag 3 without senders has rules on every host port, h11's too: tag 58 from h11
    would be the same match."""
    plane, drv = _ready_plane()
    if first:
        plane.handle({"op": "set", "entries": first})
    before = (dict(plane.entries), len(drv.applied))
    reply = plane.handle({"op": "set", "entries": then})
    assert reply == {"ok": False, "error": "entries: tags 3 and 58 share DSCP 3 on host h11"}
    assert (dict(plane.entries), len(drv.applied)) == before


def test_a_dscp_only_driver_keeps_tags_1_to_55_and_its_scheduler_too():
    """BMv2's pipeline counts per DSCP: its driver says max_tag 55; the plane refuses
    tag 56 and hands the limit to its scheduler's tag pool."""
    drv = FakeDriver(PLAN, max_tag=TAG_MAX)
    plane = ControlPlane(PLAN, drv, ControlConfig(), spawn=lambda fn, *a: fn(*a))
    for sw in PLAN.switches:
        plane.switch_connected(sw.name)
    reply = plane.handle({"op": "set", "entries": [{"tag": 56, "level": 0}]})
    own = "(one DSCP per coflow, the tag's own)"
    assert reply == {"ok": False, "error": f"entries: tag 56: FakeDriver takes tags 1..55 {own}"}
    remapped = {"tag": 5, "level": 0, "dscps": {"h11": 9}}
    reply = plane.handle({"op": "set", "entries": [remapped]})
    assert reply == {"ok": False, "error": f"entries: tag 5: FakeDriver takes tags 1..55 {own}"}
    assert plane.scheduler.tag_max == TAG_MAX
    assert ready_plane(PLAN)[0].scheduler.tag_max == TAG_ID_MAX


def test_a_remapped_sender_gets_a_rule_on_the_dscp_it_was_given():
    """Tag 58 (own DSCP 3) with h11 remapped to DSCP 31: h11's port matches 31, h12's
    3; a tag 31 on h11 would then clash, on h12 it does not."""
    plane, drv = _ready_plane()
    entry = {"tag": 58, "level": 1, "senders": ["h11", "h12"], "dscps": {"h11": 31}}
    assert plane.handle({"op": "set", "entries": [entry]})["written"] == 2
    msgs = ofm.diff_msgs(OF_DP, drv.applied[-1]["l1"])
    got = {(dict(m.match.items())["in_port"], dict(m.match.items())["ip_dscp"]) for m in msgs}
    assert got == {(1, 31), (2, 3)}
    clash = plane.handle({"op": "set", "entries": [{"tag": 31, "level": 0, "senders": ["h11"]}]})
    assert clash == {"ok": False, "error": "entries: tags 31 and 58 share DSCP 31 on host h11"}
    ok = plane.handle({"op": "set", "entries": [{"tag": 31, "level": 0, "senders": ["h12"]}]})
    assert ok["ok"]


@pytest.mark.parametrize(
    "dscps", [{"h11": 0}, {"h11": 56}, {"h99": 3}, {"h11": True}, ["h11", 3]], ids=str
)
def test_bad_dscps_are_refused_with_the_key(dscps):
    """DSCP 0 and 56+ (level codes), unknown hosts, bools, a list: one line each."""
    plane, _drv = _ready_plane()
    reply = plane.handle({"op": "set", "entries": [{"tag": 58, "level": 1, "dscps": dscps}]})
    assert reply == {
        "ok": False,
        "error": "entries[0].dscps: must map host names of the fabric to DSCPs 1..55",
    }


def test_port_status_op_reroutes_like_an_openflow_port_status():
    """BMv2's port watcher: l1 port 3 (hosts_per_leaf=2, so its uplink to s1) down at
    t=50 s.  PLAN has one spine, so l1's group to l2 and l2's group to l1 are left with
    no spine: both leaves rewritten, recorded as detected at 50 s."""
    from controller.routing import FabricEvents

    plane, drv = _ready_plane()
    reply = plane.handle(
        {"op": "port_status", "switch": "l1", "port": 3, "down": True, "t_s": 50.0}
    )
    assert reply == {"ok": True}
    assert drv.groups_set == [{"l1": {2: ()}, "l2": {1: ()}}]
    (ev,) = FabricEvents.from_wire(plane.handle({"op": "fabric_events"})).links
    assert (ev.link, ev.down, ev.detected_s, ev.reported_by) == ("l1-s1", True, 50.0, "l1 port 3")


@pytest.mark.parametrize(
    "req,msg",
    [
        ({"switch": "x9", "port": 3, "down": True, "t_s": 1.0}, "switch: unknown switch 'x9'"),
        ({"switch": "l1", "port": 0, "down": True, "t_s": 1.0}, "port: must be a port number"),
        ({"switch": "l1", "port": True, "down": True, "t_s": 1.0}, "port: must be a port number"),
        ({"switch": "l1", "port": 3, "down": "yes", "t_s": 1.0}, "down: must be true or false"),
        ({"switch": "l1", "port": 3, "down": True, "t_s": None}, "t_s: must be a monotonic"),
        ({"switch": "l1", "port": 3, "down": True, "t_s": 1.0, "x": 1}, "x: unknown key"),
    ],
)
def test_bad_port_status_requests_change_nothing(req, msg):
    plane, drv = _ready_plane()
    reply = plane.handle({"op": "port_status", **req})
    assert reply["ok"] is False and re.search(msg, reply["error"]), reply
    assert drv.groups_set == [] and plane.down_links == set()
