"""AgentSet with real agent processes on loopback (no root, no Mininet): the hosts are
stand-ins whose ``popen`` is ``subprocess.Popen`` in the root namespace."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from coflowbed.emulation.agents.client import AgentError, AgentEvent, AgentSet, SendOrder
from tests.data import REPO
from tests.hosts import LocalHost
from workload import marking
from workload.agent.proto import can_set_priority

TIMEOUT = 15.0
ORCHESTRATOR = """
import subprocess, sys
from pathlib import Path
from coflowbed.emulation.agents.client import AgentSet

class Host:
    def __init__(self, name): self.name = name
    def IP(self): return "127.0.0.1"
    def popen(self, args, **kw): return subprocess.Popen(args, **kw)

agents = AgentSet([Host("o1"), Host("o2")], Path(sys.argv[1]), 0)
agents.start()
print(" ".join(str(agents.pid(h)) for h in agents.hosts), flush=True)
sys.stdin.read()  # until killed
"""


def gone(pid: int) -> bool:
    """Whether no process has ``pid`` (AgentSet reaps its children)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[AgentSet]:
    hosts = [LocalHost("h11"), LocalHost("h12"), LocalHost("h21")]
    with AgentSet(
        hosts, tmp_path / "run", 0, log_dir=tmp_path / "out" / "agents", request_timeout_s=TIMEOUT
    ) as ags:
        ags.start()
        yield ags


def collect(ags: AgentSet, flows: set[str]) -> dict[str, dict[str, AgentEvent]]:
    """Events by flow and kind until every flow in ``flows`` was received or failed."""
    seen: dict[str, dict[str, AgentEvent]] = defaultdict(dict)
    open_flows = set(flows)
    while open_flows:
        ev = ags.next_event(TIMEOUT)
        assert ev.kind != "agent_lost", ev
        seen[ev.flow_id][ev.kind] = ev
        if ev.kind in ("flow_received", "flow_failed") and ev.flow_id in open_flows:
            if ev.kind == "flow_failed" or "flow_sent" in seen[ev.flow_id]:
                open_flows.discard(ev.flow_id)
        if ev.kind == "flow_sent" and "flow_received" in seen[ev.flow_id]:
            open_flows.discard(ev.flow_id)
    return seen


@pytest.mark.processes
@pytest.mark.sockets
def test_flows_of_various_sizes_are_timed_and_counted(agents):
    flows = {
        "f-1B": ("h11", "h12", 1),
        "f-100k": ("h21", "h12", 100_000),
        "f-5M": ("h11", "h21", 5_000_000),
        "f-3M": ("h12", "h11", 3_000_000),
    }
    for i, (fid, (src, dst, n)) in enumerate(flows.items()):
        agents.send_to(src, dst, fid, n, tag=i + 1, level=i)
    seen = collect(agents, set(flows))
    for i, (fid, (src, dst, n)) in enumerate(flows.items()):
        started, sent, rcvd = (seen[fid][k] for k in ("flow_started", "flow_sent", "flow_received"))
        assert started.host == sent.host == src and rcvd.host == dst
        assert rcvd.fields["bytes"] == n and rcvd.fields["src"] == "127.0.0.1"
        assert started.fields["t_ns"] <= rcvd.fields["first_ns"] <= rcvd.fields["last_ns"]
        assert started.fields["t_ns"] <= sent.fields["t_ns"]
        assert started.fields["tos"] == marking.tos_byte(i + 1)
        if can_set_priority():
            assert started.fields["priority"] == marking.skb_priority(i)
    assert agents.stats("h11").sent == {"f-1B": 1, "f-5M": 5_000_000}
    assert agents.stats("h11").sent_by_tag == {1: 1, 3: 5_000_000}
    assert agents.stats("h12").received == {"f-1B": 1, "f-100k": 100_000}


@pytest.mark.processes
@pytest.mark.sockets
def test_incast_of_many_concurrent_flows(agents):
    flows = {f"in{i}": ("h11" if i % 2 else "h21", 400_000 + i) for i in range(24)}
    for fid, (src, n) in flows.items():
        agents.send_to(src, "h12", fid, n, tag=7, level=3)
    seen = collect(agents, set(flows))
    assert {fid: seen[fid]["flow_received"].fields["bytes"] for fid in flows} == {
        fid: n for fid, (_, n) in flows.items()
    }
    assert sum(agents.stats("h12").received.values()) == sum(n for _, n in flows.values())


@pytest.mark.skipif(not can_set_priority(), reason="SO_PRIORITY > 6 needs CAP_NET_ADMIN")
@pytest.mark.processes
@pytest.mark.sockets
def test_set_level_moves_live_sockets_of_the_tag_only(agents):
    with socket.socket() as sink:  # accepts, reads nothing until told: flows stay live
        sink.bind(("127.0.0.1", 0))
        sink.listen()
        port = sink.getsockname()[1]
        agents.send("h11", "slow-a", "127.0.0.1", port, 50_000_000, tag=4, level=5)
        agents.send("h11", "slow-b", "127.0.0.1", port, 50_000_000, tag=9, level=5)
        conns = [sink.accept()[0] for _ in range(2)]
        assert agents.set_level("h11", tag=4, level=0) == 1
        stats = agents.stats("h11")
        assert stats.priority == {
            "slow-a": marking.skb_priority(0),
            "slow-b": marking.skb_priority(5),
        }
        assert 0 < stats.sent["slow-a"] < 50_000_000  # acknowledged so far, not handed over
        assert agents.set_level("h12", tag=4, level=0) == 0
        for c in conns:
            c.close()


@pytest.mark.processes
@pytest.mark.sockets
def test_set_dscp_re_marks_live_sockets_of_the_tag_keeping_their_priority(agents):
    """Tag 4 starts marked with level 2's code (its entry not yet in the switches) and
    paced; set_dscp moves it to its own DSCP (4) and lifts the pacing, tag 9 stays."""
    code = marking.level_dscp(2)
    with socket.socket() as sink:  # accepts, reads nothing until told: flows stay live
        sink.bind(("127.0.0.1", 0))
        sink.listen()
        port = sink.getsockname()[1]
        agents.send_many(
            [
                SendOrder("h11", "marked", "127.0.0.1", port, 50_000_000, 4, 2, 8.0, code),
                SendOrder("h11", "other", "127.0.0.1", port, 50_000_000, 9, 2, None, code),
            ]
        )
        conns = [sink.accept()[0] for _ in range(2)]
        collect_started(agents, {"marked", "other"})
        assert agents.stats("h11").tos == {"marked": code << 2, "other": code << 2}
        assert agents.set_dscp("h11", 4, marking.tag_dscp(4), unpace=True) == 1
        stats = agents.stats("h11")
        assert stats.tos == {"marked": 4 << 2, "other": code << 2}
        assert stats.pacing["marked"] is None  # ~0UL, the kernel default
        if can_set_priority():  # IP_TOS resets SO_PRIORITY: set again after it
            assert stats.priority["marked"] == marking.skb_priority(2)
        assert agents.set_dscp("h12", 4, 4) == 0
        for c in conns:
            c.close()


@pytest.mark.processes
@pytest.mark.sockets
def test_a_remapped_sender_marks_the_dscp_it_was_given(agents):
    """Tag 58 with dscp 31 (the controller remapped h11) goes out as DSCP 31; tag 60
    without one as its own DSCP, 60 - 55 = 5 (the agent reports the socket's TOS)."""
    ip, port = agents.address("h12")
    agents.send_many(
        [
            SendOrder("h11", "remapped", ip, port, 1000, 58, 1, None, 31),
            SendOrder("h11", "own", ip, port, 1000, 60, 1),
        ]
    )
    seen = collect(agents, {"remapped", "own"})
    assert seen["remapped"]["flow_started"].fields["tos"] == 31 << 2
    assert seen["own"]["flow_started"].fields["tos"] == 5 << 2


@pytest.mark.processes
@pytest.mark.sockets
def test_bad_arguments_raise_before_anything_is_sent(agents):
    with pytest.raises(ValueError, match="tag"):
        agents.send("h11", "f", "127.0.0.1", 5001, 10, tag=marking.TAG_ID_MAX + 1, level=0)
    with pytest.raises(ValueError, match="dst_ip"):
        agents.send("h11", "f", "h12", 5001, 10, tag=1, level=0)
    with pytest.raises(AgentError, match="no agent"):
        agents.stats("h99")
    agents.send_to("h11", "h12", "dup", 10, tag=1, level=0)
    with pytest.raises(AgentError, match="already sent"):
        agents.send_to("h11", "h12", "dup", 10, tag=1, level=0)


@pytest.mark.processes
@pytest.mark.sockets
def test_flow_to_closed_port_is_reported_as_failed(agents):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agents.send("h21", "nowhere", "127.0.0.1", port, 1000, tag=2, level=1)
    seen = collect(agents, {"nowhere"})
    failed = seen["nowhere"]["flow_failed"]
    assert failed.host == "h21" and failed.fields["side"] == "sender"
    assert "Connection refused" in failed.fields["error"]


@pytest.mark.processes
@pytest.mark.sockets
def test_stop_ends_every_agent_and_removes_sockets(tmp_path):
    hosts = [LocalHost("ha"), LocalHost("hb")]
    ags = AgentSet(hosts, tmp_path, 0)
    ags.start()
    pids = [ags.pid(h) for h in ags.hosts]
    ags.stop()
    assert all(gone(p) for p in pids)
    assert [p.returncode for h in hosts for p in h.started] == [0, 0]
    assert list((tmp_path / "agents").glob("*.sock")) == []
    ags.stop()  # idempotent


@pytest.mark.processes
@pytest.mark.sockets
def test_killed_agent_is_reported_and_stop_still_works(agents):
    assert agents.wait_lost(0.0) == {}
    pid = agents.pid("h21")
    os.kill(pid, 9)
    assert list(agents.wait_lost(TIMEOUT)) == ["h21"]  # host -> why
    ev = agents.next_event(TIMEOUT)
    assert (ev.host, ev.kind) == ("h21", "agent_lost")
    with pytest.raises(AgentError, match="not connected"):
        agents.stats("h21")
    agents.stop()
    assert gone(pid)


@pytest.mark.processes
@pytest.mark.sockets
def test_agent_that_dies_before_ready_fails_start_with_its_log(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    ok = LocalHost("ok")
    with busy, pytest.raises(AgentError, match=r"hz exited \(code 1\) before READY.*--data-port"):
        AgentSet(
            [ok, LocalHost("hz")], tmp_path, 0, data_ports={"hz": busy.getsockname()[1]}
        ).start()
    assert all(p.poll() is not None for p in ok.started)


@pytest.mark.processes
@pytest.mark.sockets
def test_silent_agent_times_out_and_is_terminated(tmp_path):
    mute = LocalHost("mute", [sys.executable, "-c", "import time; time.sleep(60)"])
    ags = AgentSet([mute], tmp_path, stop_timeout_s=2.0)
    with pytest.raises(AgentError, match="mute: not READY within 0.5 s"):
        ags.start(0.5)
    assert mute.started[0].returncode == -15  # SIGTERM by PID


@pytest.mark.processes
@pytest.mark.sockets
def test_wrong_ready_line_fails_start(tmp_path):
    liar = LocalHost("h1", [sys.executable, "-c", "print('READY h2', flush=True)"])
    with pytest.raises(AgentError, match="expected 'READY h1'"):
        AgentSet([liar], tmp_path).start()


def test_unsafe_host_names_are_refused(tmp_path):
    with pytest.raises(AgentError, match="plain name"):
        AgentSet([LocalHost("../etc")], tmp_path).start()


@pytest.mark.processes
@pytest.mark.sockets
def test_send_many_batches_and_events_read_as_wire_messages(agents, tmp_path):
    dst = agents.address("h12")
    agents.send_many(
        [
            SendOrder("h11", "m1", *dst, 1000, 2, 1),
            SendOrder("h21", "m2", *dst, 2000, 2, 1),
            SendOrder("h11", "m3", *dst, 3000, 2, 1),
        ]
    )
    got: list[AgentEvent] = []
    while sum(e["event"] in ("flow_sent", "flow_received") for e in got) < 6:
        batch = agents.events(TIMEOUT)
        assert batch, "no event in time"
        got += batch
    received = {e["flow_id"]: e for e in got if e["event"] == "flow_received"}
    assert {f: e["bytes"] for f, e in received.items()} == {"m1": 1000, "m2": 2000, "m3": 3000}
    assert received["m2"]["host"] == "h12" and received["m2"].get("nothing", "x") == "x"
    assert dict(received["m1"]) == {
        "event": "flow_received",
        "flow_id": "m1",
        "host": "h12",
        **received["m1"].fields,
    }
    assert agents.events(0.05) == []
    assert (tmp_path / "out" / "agents" / "h11.log").is_file()
    assert (tmp_path / "run" / "agents" / "h11.sock").is_socket()


@pytest.mark.processes
@pytest.mark.sockets
def test_send_many_validates_every_order_before_sending_any(agents):
    dst = agents.address("h12")
    with pytest.raises(ValueError, match="level"):
        agents.send_many(
            [SendOrder("h11", "ok", *dst, 1000, 2, 1), SendOrder("h11", "bad", *dst, 1000, 2, 9)]
        )
    assert agents.stats("h11").sent == {}


@pytest.mark.processes
@pytest.mark.sockets
def test_agents_exit_when_the_orchestrator_is_killed(tmp_path):
    orch = subprocess.Popen(
        [sys.executable, "-c", ORCHESTRATOR, str(tmp_path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        pids = [int(p) for p in orch.stdout.readline().split()]
        assert len(pids) == 2
        exits = [os.pidfd_open(p) for p in pids]  # readable once the process has exited
    finally:
        orch.kill()
        orch.wait(TIMEOUT)
        orch.stdin.close()
        orch.stdout.close()
    try:
        ready, _, _ = select.select(exits, [], [], TIMEOUT)
        while len(ready) < len(exits):
            more, _, _ = select.select([e for e in exits if e not in ready], [], [], TIMEOUT)
            assert more, "an agent outlived its orchestrator"
            ready += more
    finally:
        for fd in exits:
            os.close(fd)


# -- sender-side pacing (SO_MAX_PACING_RATE) -------------------------------------------


def duration_s(seen: dict[str, dict[str, AgentEvent]], fid: str) -> float:
    """From just before connect to the last byte at the receiver."""
    return (seen[fid]["flow_received"]["last_ns"] - seen[fid]["flow_started"]["t_ns"]) / 1e9


@pytest.mark.processes
@pytest.mark.sockets
def test_paced_flows_take_their_rate_and_unpaced_ones_are_much_faster(agents):
    dst = agents.address("h12")
    agents.send_many(
        [
            SendOrder("h11", "p2M", *dst, 2_000_000, 1, 0, 16.0),  # with a rate: paced
            SendOrder("h21", "p1M", *dst, 1_000_000, 2, 0, 16.0),
            SendOrder("h11", "free", *dst, 2_000_000, 3, 0),  # no rate: unpaced
            SendOrder("h21", "none", *dst, 2_000_000, 4, 0, None),
        ]
    )
    seen = collect(agents, {"p2M", "p1M", "free", "none"})
    assert [seen[f]["flow_started"]["pacing_bps"] for f in ("p2M", "p1M", "free", "none")] == [
        2_000_000,
        2_000_000,
        None,
        None,
    ]
    paced = duration_s(seen, "p2M")
    assert 0.75 <= paced <= 1.25  # 2 MB at 16 Mbit/s: 1 s (first 10 segments go unpaced)
    # the steady rate, with the unpaced head cancelled out: 1 MB more takes 0.5 s more
    assert 0.5 * 0.85 <= paced - duration_s(seen, "p1M") <= 0.5 * 1.15
    assert max(duration_s(seen, "free"), duration_s(seen, "none")) < paced / 4


@pytest.mark.processes
@pytest.mark.sockets
def test_set_rate_changes_live_sockets_of_tag_and_destination_and_lifts(agents):
    with socket.socket() as sink:  # another destination, reading nothing
        sink.bind(("127.0.0.2", 0))
        sink.listen()
        h12 = agents.address("h12")
        agents.send_many(
            [
                SendOrder("h11", "target", *h12, 4_000_000, 6, 0, 8.0),  # ~4 s at 8 Mbit/s
                SendOrder("h11", "other-tag", *h12, 4_000_000, 7, 0, 8.0),
                SendOrder("h11", "other-dst", *sink.getsockname(), 4_000_000, 6, 0, 8.0),
            ]
        )
        seen = collect_started(agents, {"target", "other-tag", "other-dst"})
        assert agents.set_rate("h11", 6, "127.0.0.1", 80.0) == 1
        assert agents.stats("h11").pacing == {
            "target": 10_000_000,
            "other-tag": 1_000_000,
            "other-dst": 1_000_000,
        }
        assert agents.set_rate("h11", 6, "127.0.0.1", None) == 1
        assert agents.stats("h11").pacing["target"] is None  # ~0UL, the kernel default
        assert agents.set_rate("h12", 6, "127.0.0.1", 80.0) == 0
        for fid, kinds in collect(agents, {"target"}).items():
            seen[fid].update(kinds)
        assert duration_s(seen, "target") < 2.0  # would be ~3.8 s at the first rate


def collect_started(ags: AgentSet, flows: set[str]) -> dict[str, dict[str, AgentEvent]]:
    """Events by flow and kind until every flow in ``flows`` has its socket open."""
    seen: dict[str, dict[str, AgentEvent]] = defaultdict(dict)
    while not all("flow_started" in seen[f] for f in flows):
        ev = ags.next_event(TIMEOUT)
        assert ev.kind not in ("agent_lost", "flow_failed"), ev
        seen[ev.flow_id][ev.kind] = ev
    return seen


@pytest.mark.parametrize("rate", [0, -2.0, "16", float("nan")])
@pytest.mark.processes
@pytest.mark.sockets
def test_bad_rates_raise_before_anything_is_sent(agents, rate):
    dst = agents.address("h12")
    with pytest.raises(ValueError, match="rate_mbps: must be null or a finite number"):
        agents.send("h11", "f", *dst, 10, 1, 0, rate_mbps=rate)
    with pytest.raises(ValueError, match="rate_mbps"):
        agents.send_many(
            [SendOrder("h11", "ok", *dst, 10, 1, 0), SendOrder("h11", "bad", *dst, 10, 1, 0, rate)]
        )
    with pytest.raises(ValueError, match="rate_mbps"):
        agents.set_rate("h11", 1, "127.0.0.1", rate)
    with pytest.raises(TypeError, match="not a SendOrder"):  # no positional tuples
        agents.send_many([("h11", "tuple", *dst, 10, 1, 0)])
    assert agents.stats("h11").sent == {}


# -- connections set up before the iteration -------------------------------------------


@pytest.mark.processes
@pytest.mark.sockets
def test_connect_opens_the_pool_and_flows_reuse_it(agents):
    from coflowbed.emulation.agents.client import PoolOrder

    ip, port = agents.address("h12")
    report = agents.connect([PoolOrder("h11", ip, port, 3), PoolOrder("h21", ip, port, 2)])
    assert (report.pairs, report.connections) == (2, 5) and report.setup_s < TIMEOUT
    assert agents.stats("h11").connections == {
        f"{ip}:{port}": {"total": 3, "idle": 3, "on_demand": 0}
    }
    agents.send_many([SendOrder("h11", f"r{i}", ip, port, 100_000, 1 + i, 0) for i in range(3)])
    seen = collect(agents, {"r0", "r1", "r2"})
    assert [seen[f"r{i}"]["flow_started"]["new_connection"] for i in range(3)] == [False] * 3
    assert agents.stats("h11").connections[f"{ip}:{port}"] == {
        "total": 3,
        "idle": 3,
        "on_demand": 0,
    }
    again = agents.connect([PoolOrder("h11", ip, port, 3)])  # already there: nothing opened
    assert again.connections == 3


@pytest.mark.processes
@pytest.mark.sockets
def test_each_message_is_marked_with_its_own_tag_and_level_at_send_time(agents):
    from coflowbed.emulation.agents.client import PoolOrder

    ip, port = agents.address("h12")
    agents.connect([PoolOrder("h11", ip, port, 1)])  # one connection carries all three
    marks = {}
    for fid, tag, level, rate in (("a", 3, 2, None), ("b", 9, 5, 16.0), ("c", 0, 0, None)):
        agents.send("h11", fid, ip, port, 50_000, tag, level, rate)
        seen = collect(agents, {fid})
        st = seen[fid]["flow_started"]
        marks[fid] = (st["tos"], st["pacing_bps"], st["new_connection"])
        assert seen[fid]["flow_received"]["bytes"] == 50_000
        if can_set_priority():
            assert st["priority"] == marking.skb_priority(level)
    assert marks == {
        "a": (marking.tos_byte(3), None, False),
        "b": (marking.tos_byte(9), 2_000_000, False),
        "c": (0, None, False),
    }
    assert agents.stats("h11").connections[f"{ip}:{port}"]["total"] == 1


@pytest.mark.processes
@pytest.mark.sockets
def test_no_flow_of_a_pair_waits_behind_another_flow_of_the_pair(agents):
    from coflowbed.emulation.agents.client import PoolOrder

    ip, port = agents.address("h12")
    agents.connect([PoolOrder("h11", ip, port, 1)])
    agents.send("h11", "bulk", ip, port, 6_000_000, 7, 7, 16.0)  # low level, ~3 s paced
    collect_started(agents, {"bulk"})
    agents.send("h11", "urgent", ip, port, 20_000, 1, 0)  # high level, same pair, later
    seen = collect(agents, {"urgent"})
    assert seen["urgent"]["flow_started"]["new_connection"] is True  # the pooled one is busy
    assert duration_s(seen, "urgent") < 0.5  # not behind the 3 s bulk flow
    assert "bulk" in agents.stats("h12").received  # the bulk flow is still under way
    assert agents.stats("h12").received["bulk"] < 6_000_000
    pool = agents.stats("h11").connections[f"{ip}:{port}"]
    assert (pool["total"], pool["on_demand"]) == (2, 1)  # the new one joined the pool


@pytest.mark.processes
@pytest.mark.sockets
def test_connect_to_a_closed_port_fails_with_the_destination_named(agents):
    from coflowbed.emulation.agents.client import PoolOrder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(AgentError, match=f"127.0.0.1:{port}"):
        agents.connect([PoolOrder("h11", "127.0.0.1", port, 2)])
