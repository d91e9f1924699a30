"""ControllerClient and PipelinedClient against a real ApiServer on a Unix socket
(handler faked)."""

from __future__ import annotations

import threading

import pytest

from controller.api_server import ApiServer
from controller.client import ControllerClient, ControllerError, PipelinedClient
from controller.coflow_table import TagEntry
from controller.stats import PortCount, TagCount

pytestmark = pytest.mark.sockets


@pytest.fixture
def server(tmp_path):
    calls = []
    gate = threading.Event()

    def handler(req, received):
        calls.append(req)
        if req.get("op") == "slow":
            gate.wait(5)
        if req.get("op") == "bad":
            return {"ok": False, "error": "tags: must be a list"}
        if req.get("op") == "wait_ready":
            return {"ok": True, "switches": ["l1"], "ready": False, "levels": 8}
        return {
            "ok": True,
            "echo": req,
            "tags": {"3": {"bytes": 5, "packets": 1}},
            "switches": {
                "l1": {"2": {"rx_bytes": 1, "tx_bytes": 2, "rx_packets": 3, "tx_packets": 4}}
            },
        }

    srv = ApiServer(tmp_path / "api.sock", handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv, calls, gate
    gate.set()
    srv.close()


def test_requests_and_replies_round_trip_in_order(server):
    srv, calls, _ = server
    with ControllerClient(srv.path, timeout=5) as c:
        wire = {"tag": 1, "level": 0, "rate_mbps": None, "flow_rates": None, "senders": None}
        assert c.set([TagEntry(1, 0)])["echo"] == {"op": "set", "entries": [wire]}
        assert c.clear([1])["echo"] == {"op": "clear", "tags": [1]}
        assert c.tag_stats() == {3: TagCount(5, 1)}
        assert c.port_stats() == {"l1": {2: PortCount(1, 2, 3, 4)}}
    assert [r["op"] for r in calls] == ["set", "clear", "tag_stats", "port_stats"]


def test_error_reply_raises_controller_error(server):
    srv, _, _ = server
    with ControllerClient(srv.path, timeout=5) as c:
        with pytest.raises(ControllerError, match="tags: must be a list"):
            c.call({"op": "bad"})
        assert c.call({"op": "x"})["ok"]  # the connection is still usable


def test_timeout_and_not_ready(server):
    srv, _, gate = server
    with ControllerClient(srv.path, timeout=0.2) as c:
        with pytest.raises(TimeoutError):
            c.call({"op": "slow"})
        gate.set()
        with pytest.raises(TimeoutError, match="not ready after 0 s"):
            c.wait_ready(0.0)


def test_server_rejects_non_json_lines(server, tmp_path):
    import socket

    srv, _, _ = server
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(str(srv.path))
    s.sendall(b"not json\n")
    assert b'"ok": false' in s.recv(4096)
    s.close()


def test_missing_socket_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        ControllerClient(tmp_path / "none.sock", timeout=1).status()


def test_pipelined_requests_go_out_before_earlier_answers_and_settle_in_order(server):
    srv, calls, gate = server
    client = PipelinedClient(srv.path, timeout=5)
    slow = client.submit({"op": "slow"})  # the server holds it until the gate opens
    later = [client.submit({"op": "status", "n": i}) for i in range(3)]
    bad = client.submit({"op": "bad"})
    assert not slow.done() and not any(f.done() for f in later)
    gate.set()
    assert [f.result(5)["echo"]["n"] for f in later] == [0, 1, 2]
    with pytest.raises(ControllerError, match="tags: must be a list"):
        bad.result(5)
    assert [c["op"] for c in calls] == ["slow", "status", "status", "status", "bad"]
    client.close()


def test_a_lost_connection_fails_pending_and_later_requests(server):
    srv, calls, gate = server
    client = PipelinedClient(srv.path, timeout=5)
    pending = client.submit({"op": "slow"})
    client.close()
    with pytest.raises(ConnectionError):
        pending.result(5)
    with pytest.raises(ConnectionError, match="connection lost"):
        client.submit({"op": "status"})
