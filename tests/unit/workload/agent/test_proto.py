"""Wire formats of the traffic agent: data header, control requests, socket marking,
and the receiving end of a flow (driven here by hand, without a network)."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

import pytest

from workload import marking
from workload.agent.proto import (
    HEADER,
    MESSAGE_ACK,
    PACING_UNLIMITED,
    SO_MAX_PACING_RATE,
    FlowReceiver,
    ProtocolError,
    RequestError,
    SendRequest,
    SetLevelRequest,
    SetRateRequest,
    StatsRequest,
    can_set_priority,
    decode_header,
    encode_header,
    mark_flow_socket,
    open_flow_socket,
    pacing_rate,
    parse_request,
    request_dict,
    set_pacing,
)
from workload.agent.sockets import bytes_retransmitted

SEND = {
    "id": 7,
    "op": "send",
    "flow_id": "c1/f0",
    "dst_ip": "10.0.1.2",
    "dst_port": 5001,
    "bytes": 1000,
    "tag": 3,
    "level": 2,
}


def line(**overrides: Any) -> bytes:
    """A send request line with some keys replaced (value None removes the key)."""
    msg = {**SEND, **overrides}
    return json.dumps({k: v for k, v in msg.items() if v is not None}).encode()


def test_header_round_trip_and_incomplete_prefixes():
    raw = encode_header("job0/it3/dp/f12", 5_000_000) + b"payload"
    for cut in range(len(raw) - len(b"payload")):
        assert decode_header(raw[:cut]) is None
    assert decode_header(raw) == ("job0/it3/dp/f12", 5_000_000, HEADER.size + 15)


def test_header_rejects_bad_magic_and_bad_ids():
    with pytest.raises(ProtocolError, match="magic"):
        decode_header(b"XXXX" + encode_header("f", 1)[4:])
    with pytest.raises(ProtocolError, match="flow_id"):
        encode_header("", 1)
    with pytest.raises(ProtocolError, match="flow_id"):
        encode_header("x" * 513, 1)


def test_parse_send_request():
    req_id, req = parse_request(line())
    assert req_id == 7
    assert req == SendRequest("c1/f0", "10.0.1.2", 5001, 1000, 3, 2)


def test_request_dict_round_trips_through_parse():
    req = SetLevelRequest(tag=9, level=0)
    assert parse_request(json.dumps(request_dict("a", req)).encode()) == ("a", req)
    assert parse_request(json.dumps(request_dict(1, StatsRequest())).encode()) == (
        1,
        StatsRequest(),
    )


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"bytes": None}, "missing key 'bytes'"),
        ({"tag": marking.TAG_ID_MAX + 1}, "tag"),
        ({"tag": True}, "tag"),
        ({"level": 8}, "level"),
        ({"dst_ip": "h12"}, "dst_ip"),
        ({"dst_port": 0}, "dst_port"),
        ({"bytes": 0}, "bytes"),
        ({"bytes": 1.5}, "bytes"),
        ({"op": "fly"}, "unknown operation"),
    ],
)
def test_bad_requests_name_key_and_keep_the_id(overrides, words):
    with pytest.raises(RequestError, match=words) as info:
        parse_request(line(**overrides))
    assert info.value.req_id == 7


def test_unreadable_requests():
    with pytest.raises(ProtocolError, match="not JSON"):
        parse_request(b"{send")
    with pytest.raises(ProtocolError, match="JSON object"):
        parse_request(b"[1, 2]")
    with pytest.raises(RequestError, match="id"):
        parse_request(b'{"op": "stats"}')


def test_tag_zero_is_untagged_traffic():
    assert SendRequest("f", "10.0.0.1", 1, 1, 0, 0).tag == marking.DSCP_UNTAGGED


@pytest.mark.parametrize(
    "tag, level, dscp", [(1, 0, 1), (3, 2, 3), (55, 7, 55), (0, 5, 0), (58, 1, 3), (3520, 4, 55)]
)
@pytest.mark.sockets
def test_flow_socket_carries_tag_and_level(tag, level, dscp):
    """Tag ids above 55 go out as DSCP 1 + (tag - 1) % 55: 58 -> 3, 3520 -> 55."""
    with open_flow_socket(tag, level, set_priority=can_set_priority()) as sock:
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == dscp << 2
        assert sock.getblocking() is False
        if can_set_priority():
            # would be rt_tos2priority(tos) if SO_PRIORITY were set before IP_TOS
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY) == marking.skb_priority(
                level
            )


@pytest.mark.sockets
def test_a_remapped_flow_is_marked_with_its_dscp_not_its_tags():
    """Tag 58 would go out as DSCP 3; the controller gave this sender 31."""
    _id, req = parse_request(json.dumps({**SEND, "tag": 58, "dscp": 31}).encode())
    assert req.dscp == 31
    with open_flow_socket(58, 1, set_priority=False, mark=False) as sock:
        mark_flow_socket(sock, 58, 1, False, req.dscp)
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 31 << 2


@pytest.mark.parametrize("dscp", [0, 64, True, "3"])
def test_a_bad_dscp_is_refused(dscp):
    """DSCP 0 (untagged), 64 (no DSCP), a bool or a string: refused by name."""
    with pytest.raises(RequestError, match="dscp: must be an int 1..55 .a tag's. or 56..63"):
        parse_request(json.dumps({**SEND, "dscp": dscp}).encode())


@pytest.mark.parametrize("dscp", [1, 55, 56, 63])
def test_a_tags_dscp_or_a_levels_code_is_taken(dscp):
    """A level's code: the coflow's entry is not yet in the switches."""
    assert parse_request(json.dumps({**SEND, "dscp": dscp}).encode())[1].dscp == dscp


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"tag": 4, "dscp": 4, "unpace": 1}, "unpace: must be true or false"),
        ({"tag": 4, "dscp": 0}, "dscp: must be an int"),
        ({"tag": -1, "dscp": 4}, "tag: must be an int"),
    ],
)
def test_a_bad_set_dscp_is_refused_by_name(fields, error):
    with pytest.raises(RequestError, match=error):
        parse_request(json.dumps({"id": 1, "op": "set_dscp", **fields}).encode())


@pytest.mark.sockets
def test_flow_socket_can_be_marked_after_connect():
    """The agent connects unmarked (the handshake at level 0, never starved by strict
    priority) and marks the socket once connected."""
    with open_flow_socket(5, 3, set_priority=False, mark=False) as sock:
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 0
        mark_flow_socket(sock, 5, 3, set_priority=False)
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == marking.tos_byte(5)


# -- pacing (SO_MAX_PACING_RATE) ---------------------------------------------------------

SET_RATE = {"id": 8, "op": "set_rate", "tag": 4, "dst_ip": "10.0.2.1", "rate_mbps": 16.0}


def test_send_rate_is_optional_and_null_means_unpaced():
    assert parse_request(line(rate_mbps=16))[1].rate_mbps == 16
    assert parse_request(line(rate_mbps=2.5))[1] == SendRequest(
        "c1/f0", "10.0.1.2", 5001, 1000, 3, 2, 2.5
    )
    assert parse_request(line())[1].rate_mbps is None  # key absent: unpaced
    raw = json.dumps({**SEND, "rate_mbps": None}).encode()
    assert parse_request(raw)[1].rate_mbps is None


def test_rate_requests_round_trip_through_the_wire():
    for req in (
        SendRequest("f", "10.0.0.1", 1, 1, 1, 0, 12.5),
        SetRateRequest(9, "10.0.1.1", 100.0),
        SetRateRequest(9, "10.0.1.1", None),
    ):
        assert parse_request(json.dumps(request_dict(3, req)).encode()) == (3, req)


@pytest.mark.parametrize("rate", [0, -5, "16", True, 1e-9, 1e300, [16]])
def test_bad_rates_are_refused_in_send_and_set_rate(rate):
    with pytest.raises(
        RequestError, match=r"send: rate_mbps: must be null or a finite number"
    ) as info:
        parse_request(line(rate_mbps=rate))
    assert info.value.req_id == 7
    with pytest.raises(RequestError, match=r"set_rate: rate_mbps: must be") as info:
        parse_request(json.dumps({**SET_RATE, "rate_mbps": rate}).encode())
    assert info.value.req_id == 8


@pytest.mark.parametrize("raw", [b"NaN", b"Infinity", b"-Infinity"])
def test_json_non_numbers_are_refused_as_rates(raw):
    with pytest.raises(RequestError, match="rate_mbps"):
        parse_request(line()[:-1] + b', "rate_mbps": ' + raw + b"}")


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"rate_mbps": None}, None),
        ({"dst_ip": "h21"}, "dst_ip"),
        ({"tag": marking.TAG_ID_MAX + 1}, "tag"),
        ({"level": 1}, "unknown key 'level'"),
    ],
)
def test_set_rate_request_is_strict(overrides, words):
    msg = {**SET_RATE, **overrides}
    if words is None:  # rate_mbps may be null, but the key must be there
        assert parse_request(json.dumps(msg).encode())[1] == SetRateRequest(4, "10.0.2.1", None)
        del msg["rate_mbps"]
        words = "missing key 'rate_mbps'"
    with pytest.raises(RequestError, match=words):
        parse_request(json.dumps(msg).encode())


@pytest.mark.sockets
def test_flow_socket_is_paced_before_connect_and_unpaced_by_default():
    with open_flow_socket(1, 0, set_priority=False, rate_mbps=16.0) as sock:
        assert pacing_rate(sock) == 2_000_000  # bytes/s
        with pytest.raises(OSError):  # not connected yet: the cap is there before the SYN
            sock.getpeername()
    with open_flow_socket(1, 0, set_priority=False) as sock:
        assert pacing_rate(sock) is None


@pytest.mark.sockets
def test_lifting_the_cap_restores_the_kernel_default():
    with socket.socket() as fresh, socket.socket() as sock:
        default = fresh.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8)
        assert int.from_bytes(default, "little") == PACING_UNLIMITED  # ~0UL on this kernel
        set_pacing(sock, 40_000.0)  # 5e9 B/s: does not fit the 32-bit form of the option
        assert pacing_rate(sock) == 5_000_000_000
        set_pacing(sock, None)
        assert sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8) == default
        assert pacing_rate(sock) is None
        with pytest.raises(ProtocolError, match="rate_mbps"):
            set_pacing(sock, 0)


# -- FlowReceiver, driven by hand -------------------------------------------------------


class Sink:
    """The agent side of a FlowReceiver: a shared buffer and an event list."""

    def __init__(self) -> None:
        self.rx_view = memoryview(bytearray(64))
        self.recv_flows: dict[str, FlowReceiver] = {}
        self.receivers: set[FlowReceiver] = set()
        self.events: list[dict[str, Any]] = []

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)


class Transport:
    """Just enough of an asyncio transport."""

    def __init__(self) -> None:
        self.aborted = self.closed = False
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def get_extra_info(self, name: str) -> Any:
        return ("10.0.1.1", 40000) if name == "peername" else None

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True


def feed(rx: FlowReceiver, sink: Sink, data: bytes, step: int) -> None:
    """Deliver ``data`` in reads of at most ``step`` bytes, as the event loop would."""
    for i in range(0, len(data), step):
        part = data[i : i + step]
        buf = rx.get_buffer(-1)
        buf[: len(part)] = part
        rx.buffer_updated(len(part))


def connected() -> tuple[FlowReceiver, Sink, Transport]:
    sink, tr = Sink(), Transport()
    rx = FlowReceiver(sink)
    rx.connection_made(tr)
    return rx, sink, tr


@pytest.mark.parametrize("step", [1, 5, 64])
def test_receiver_reports_flow_when_last_byte_arrives(step):
    rx, sink, tr = connected()
    feed(rx, sink, encode_header("f9", 100) + bytes(99), step)
    assert sink.events == [] and sink.recv_flows["f9"].received == 99 and not tr.closed
    feed(rx, sink, b"\0", 1)
    assert tr.written == [MESSAGE_ACK] and not tr.closed  # the ack confirms the flow; it stays open
    (ev,) = sink.events
    assert ev["event"] == "flow_received" and ev["flow_id"] == "f9" and ev["bytes"] == 100
    assert ev["src"] == "10.0.1.1" and 0 < ev["first_ns"] <= ev["last_ns"]
    assert rx.eof_received() is False and len(sink.events) == 1 and not tr.aborted


@pytest.mark.parametrize("step", [1, 7, 64])
def test_one_connection_carries_messages_one_after_another(step):
    rx, sink, tr = connected()
    for fid, n in (("m1", 50), ("m2", 3), ("m3", 120)):
        feed(rx, sink, encode_header(fid, n) + bytes(n), step)
        assert sink.events[-1]["flow_id"] == fid and sink.events[-1]["bytes"] == n
        assert not rx.busy  # between messages: the watchdog leaves it alone
    assert tr.written == [MESSAGE_ACK] * 3 and not tr.aborted
    assert {f: r.received for f, r in sink.recv_flows.items()} == {"m1": 50, "m2": 3, "m3": 120}
    rx.eof_received()
    rx.connection_lost(None)  # the sender closing an idle pooled connection is no failure
    assert [e["event"] for e in sink.events] == ["flow_received"] * 3


def test_receiver_fails_when_closed_inside_a_header():
    rx, sink, _ = connected()
    feed(rx, sink, encode_header("m1", 5) + bytes(5), 64)
    feed(rx, sink, encode_header("m2", 5)[:4], 64)  # the sender waits for the ack first
    assert rx.busy
    rx.eof_received()
    assert (
        sink.events[-1]["event"] == "flow_failed" and "inside a header" in sink.events[-1]["error"]
    )


def test_receiver_fails_short_flow_on_eof():
    rx, sink, _ = connected()
    feed(rx, sink, encode_header("f1", 100) + bytes(40), 64)
    rx.eof_received()
    rx.connection_lost(None)
    (ev,) = sink.events
    assert ev["event"] == "flow_failed" and ev["flow_id"] == "f1" and "40 of 100" in ev["error"]
    assert rx not in sink.receivers


def test_receiver_fails_on_reset_and_on_garbage():
    rx, sink, _ = connected()
    feed(rx, sink, encode_header("f1", 100), 64)
    rx.connection_lost(ConnectionResetError("reset by peer"))
    assert sink.events[-1]["event"] == "flow_failed" and "reset by peer" in sink.events[-1]["error"]
    rx2, sink2, tr2 = connected()
    feed(rx2, sink2, b"GET / HTTP/1.1\r\n", 64)
    assert sink2.events[-1]["event"] == "flow_failed" and tr2.aborted


def test_receiver_rejects_more_bytes_than_announced_and_duplicate_ids():
    rx, sink, tr = connected()
    feed(rx, sink, encode_header("f1", 10) + bytes(11), 64)
    assert [e["event"] for e in sink.events] == ["flow_failed"] and tr.aborted
    rx2 = FlowReceiver(sink)
    rx2.connection_made(Transport())
    feed(rx2, sink, encode_header("f1", 10), 64)
    assert sink.events[-1]["event"] == "flow_failed" and "duplicate" in sink.events[-1]["error"]


class InfoSocket:
    """A socket whose TCP_INFO is ``info`` (the kernel's struct tcp_info bytes)."""

    def __init__(self, info: bytes):
        self.info = info

    def getsockopt(self, level, name, size):
        assert (level, name) == (socket.IPPROTO_TCP, socket.TCP_INFO)
        return self.info[:size]


def test_bytes_retransmitted_reads_tcpi_bytes_retrans_and_none_from_an_older_kernel():
    """tcpi_bytes_retrans is the u64 at byte 208 of struct tcp_info (Linux 4.19+): the
    neighbours (bytes_sent at 200, dsack_dups at 216) must not leak into it; a kernel
    whose struct ends before it (a 104-byte struct of Linux 4.9) says nothing."""
    info = bytearray(232)
    struct.pack_into("@QQI", info, 200, 7_000_000, 123_456, 9)
    assert bytes_retransmitted(InfoSocket(bytes(info))) == 123_456
    assert bytes_retransmitted(InfoSocket(bytes(104))) is None


@pytest.mark.sockets
def test_a_loopback_transfer_sends_nothing_again():
    """On loopback nothing drops: the real kernel's count is there and 0."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        with socket.create_connection(srv.getsockname()) as c, srv.accept()[0] as s:
            c.sendall(b"x" * 100_000)
            got = 0
            while got < 100_000:
                got += len(s.recv(65536))
            assert bytes_retransmitted(c) == 0
