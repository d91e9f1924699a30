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


class ScriptedServer:
    """A control API stand-in on a Unix socket: ``answer(request)`` gives the reply, or
    None to drop the connection unanswered and stop listening (a controller killed)."""

    def __init__(self, path, answer):
        import socket

        self.path, self.answer, self.seen = path, answer, []
        if path.exists():
            path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        import json

        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn, conn.makefile("rb") as rfile:
            for line in rfile:
                req = json.loads(line)
                self.seen.append(req)
                reply = self.answer(req)
                if reply is None:
                    self.sock.close()
                    return
                conn.sendall(json.dumps(reply).encode() + b"\n")


def test_a_resumed_client_gets_the_logged_answers_back_and_resends_the_rest(tmp_path):
    from controller.client import ResumableClient

    path, got_second, crash_now = tmp_path / "api.sock", threading.Event(), threading.Event()

    def old_controller(req):
        if req["i"] == 2:  # decided (and logged) this one, then was killed
            got_second.set()
            crash_now.wait(5)
            return None
        return {"ok": True, "n": req["i"]}

    old = ScriptedServer(path, old_controller)
    client = ResumableClient(path, timeout=5)
    assert client.submit({"op": "x", "i": 1}).result(5) == {"ok": True, "n": 1}
    second = client.submit({"op": "x", "i": 2})
    assert got_second.wait(5)
    client.hold()
    crash_now.set()
    third = client.submit({"op": "x", "i": 3})  # while the controller is away
    assert not second.done() and not third.done()
    assert [r["i"] for r in old.seen] == [1, 2]

    def new_controller(req):
        if req["op"] == "resume":
            return {"ok": True, "replies": [{"ok": True, "n": 2}] if req["answered"] == 1 else []}
        return {"ok": True, "n": req["i"] * 10}

    new = ScriptedServer(path, new_controller)
    assert client.resume() == (1, 1)
    assert second.result(5) == {"ok": True, "n": 2}  # the old controller's answer
    assert third.result(5) == {"ok": True, "n": 30}  # sent again, answered by the new one
    assert new.seen == [{"op": "resume", "answered": 1}, {"op": "x", "i": 3}]
    assert client.answered == 3
    client.close()


def test_an_abandoned_restart_fails_what_waits_and_what_comes(tmp_path):
    from controller.client import ResumableClient

    path = tmp_path / "api.sock"
    ScriptedServer(path, lambda req: {"ok": True})
    client = ResumableClient(path, timeout=5)
    client.hold()
    waiting = client.submit({"op": "x"})
    client.abandon(RuntimeError("controller printed no READY"))
    with pytest.raises(ConnectionError, match="restart failed: controller printed no READY"):
        waiting.result(5)
    with pytest.raises(ConnectionError, match="no controller to resume"):
        client.submit({"op": "x"})
    client.close()


def test_a_resume_whose_resent_requests_are_answered_at_once_sends_each_once(tmp_path, monkeypatch):
    """The replies to resent requests may settle inside the resend (the integration
    failure was 'deque mutated during iteration'), and a callback may submit more."""
    from controller import client as client_module

    path = tmp_path / "api.sock"
    ScriptedServer(path, lambda req: None)  # killed before answering anything
    client = client_module.ResumableClient(path, timeout=5)
    first = client.submit({"op": "x", "i": 1})
    client.hold()
    second = client.submit({"op": "x", "i": 2})
    later: list = []
    second.add_done_callback(lambda f: later.append(client.submit({"op": "x", "i": 3})))
    new = ScriptedServer(
        path,
        lambda req: {"ok": True, "replies": []} if req["op"] == "resume" else {"ok": True, **req},
    )
    submit = client_module.PipelinedClient.submit

    def answered_before_returning(self, request):
        done = submit(self, request)
        done.exception(5)  # the callback added next runs at once, in this thread
        return done

    monkeypatch.setattr(client_module.PipelinedClient, "submit", answered_before_returning)
    assert client.resume() == (0, 3)
    assert first.result(5)["i"] == 1 and second.result(5)["i"] == 2
    assert later[0].result(5)["i"] == 3
    assert [r.get("i") for r in new.seen] == [None, 1, 2, 3]
    assert client.answered == 3
    client.close()
