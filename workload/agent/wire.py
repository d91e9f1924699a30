"""Basics of the agent's wire protocol (documented in ``workload.agent.proto``): the data
header that opens every flow, the control-line encoding and the protocol's errors."""

from __future__ import annotations

import json
import struct
from typing import Any

HEADER_MAGIC = b"CFB1"
HEADER = struct.Struct("!4sHQ")  # magic, flow-id length, payload bytes
MAX_FLOW_ID_BYTES = 512
MAX_LINE_BYTES = 1 << 20  # one control line; far above any legal request
UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the terminating NUL
# The receiver answers each complete message with this one byte on the same connection:
# the sender then knows everything arrived and the connection is free for the next one.
MESSAGE_ACK = b"\x06"

EVENTS = ("flow_started", "flow_sent", "flow_received", "flow_failed")


class ProtocolError(ValueError):
    """A malformed header or control request; the text names the key and the reason."""


class RequestError(ProtocolError):
    """A control request that can be answered (its ``id`` was readable) with an error."""

    def __init__(self, req_id: int | str | None, reason: str) -> None:
        """``reason`` names the key; ``req_id`` goes into the error reply."""
        super().__init__(reason)
        self.req_id = req_id


def encode_header(flow_id: str, nbytes: int) -> bytes:
    """The bytes that open a flow's data connection."""
    raw = flow_id.encode()
    if not raw or len(raw) > MAX_FLOW_ID_BYTES:
        raise ProtocolError(f"flow_id: must be 1..{MAX_FLOW_ID_BYTES} UTF-8 bytes")
    return HEADER.pack(HEADER_MAGIC, len(raw), nbytes) + raw


def decode_header(buf: bytes | bytearray) -> tuple[str, int, int] | None:
    """``(flow_id, payload bytes, header length)`` or None while ``buf`` is too short."""
    if len(buf) < HEADER.size:
        return None
    magic, id_len, nbytes = HEADER.unpack_from(buf)
    if magic != HEADER_MAGIC:
        raise ProtocolError(f"data header: bad magic {magic!r}")
    if not 0 < id_len <= MAX_FLOW_ID_BYTES:
        raise ProtocolError(f"data header: flow-id length {id_len} out of range")
    end = HEADER.size + id_len
    if len(buf) < end:
        return None
    try:
        flow_id = bytes(buf[HEADER.size : end]).decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"data header: flow id is not UTF-8 ({exc})") from exc
    return flow_id, nbytes, end


def encode_line(msg: dict[str, Any]) -> bytes:
    """One control line (compact JSON + newline)."""
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"
