"""One P4Runtime connection to one switch, for threads that wait for answers.

Opening a session: wait for the gRPC channel (hard timeout), open the StreamChannel and
send a MasterArbitrationUpdate; the switch answers on the stream, and we hold the
primary role only while that answer says OK.  The stream stays open for the life of
the session (closing it gives up the role); a thread drains it and reports its end.
Writes and reads are unary RPCs with deadlines; a Write returns after the switch has
applied every update (P4Runtime semantics), which is our barrier.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import grpc
from finsy.proto import p4r, p4r_grpc, rpc_code, rpc_status

from controller.southbound.base import SouthboundError

log = logging.getLogger("controller.p4runtime")
_STOP = object()
# p4runtime.proto: P4Runtime servers carry per-update errors in the status details.
_DETAILS_KEY = "grpc-status-details-bin"


def _request_iter(q: queue.Queue) -> Iterator[p4r.StreamMessageRequest]:
    """Messages put on ``q`` until the stop marker."""
    while True:
        item = q.get()
        if item is _STOP:
            return
        yield item


class P4RuntimeSession:
    """Primary client of one device over one gRPC channel (thread-safe)."""

    def __init__(
        self,
        name: str,
        address: str,
        device_id: int,
        election_id: int = 1,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        """Not connected yet: call :meth:`open`."""
        self.name, self.address, self.device_id = name, address, device_id
        self.election_id = election_id
        self.on_lost = on_lost
        self.channel: grpc.Channel | None = None
        self.stub: p4r_grpc.P4RuntimeStub | None = None
        self._out: queue.Queue = queue.Queue()
        self._arbitration: queue.Queue = queue.Queue()
        self.closed = False

    def _election(self) -> p4r.Uint128:
        """Our election id as a Uint128."""
        return p4r.Uint128(high=self.election_id >> 64, low=self.election_id & (2**64 - 1))

    def open(self, timeout: float) -> None:
        """Connect and become primary within ``timeout`` s, else SouthboundError."""
        self.channel = grpc.insecure_channel(self.address)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self.channel.close()
            raise SouthboundError(
                f"{self.name}: no P4Runtime server at {self.address} within {timeout:.0f} s"
            ) from None
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        stream = self.stub.StreamChannel(_request_iter(self._out))
        threading.Thread(
            target=self._drain, args=(stream,), daemon=True, name=f"p4rt-{self.name}"
        ).start()
        self._out.put(
            p4r.StreamMessageRequest(
                arbitration=p4r.MasterArbitrationUpdate(
                    device_id=self.device_id, election_id=self._election()
                )
            )
        )
        self._await_primary(timeout)

    def _await_primary(self, timeout: float) -> None:
        """Wait for the arbitration answer; SouthboundError unless we are primary."""
        try:
            arb = self._arbitration.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise SouthboundError(
                f"{self.name}: no arbitration answer in {timeout:.0f} s"
            ) from None
        if arb is None:
            self.close()
            raise SouthboundError(f"{self.name}: stream closed during arbitration")
        if arb.status.code != rpc_code.OK:
            self.close()
            raise SouthboundError(
                f"{self.name}: not primary (another controller holds "
                f"device {self.device_id}): {arb.status.message}"
            )
        log.info("%s: primary for device %d at %s", self.name, self.device_id, self.address)

    def _drain(self, stream) -> None:
        """Read stream responses; arbitration answers go to the waiting opener."""
        try:
            for resp in stream:
                if resp.HasField("arbitration"):
                    self._arbitration.put(resp.arbitration)
                elif resp.HasField("error"):
                    log.warning("%s: stream error %s", self.name, resp.error.canonical_code)
        except grpc.RpcError as e:
            if not self.closed:
                log.warning("%s: stream ended: %s", self.name, e.code())
        self._arbitration.put(None)
        if not self.closed:
            self.closed = True
            if self.on_lost is not None:
                self.on_lost(self.name)

    def close(self) -> None:
        """Give up the role and close the channel."""
        self.closed = True
        self._out.put(_STOP)
        if self.channel is not None:
            self.channel.close()

    # --- RPCs --------------------------------------------------------------------------
    def set_pipeline(self, p4info, device_json: bytes, timeout: float) -> None:
        """VERIFY_AND_COMMIT the pipeline (this wipes every table, meter and counter)."""
        req = p4r.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            election_id=self._election(),
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
            config=p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=device_json),
        )
        self._call("SetForwardingPipelineConfig", req, timeout)

    def write(self, updates: Sequence[p4r.Update], timeout: float) -> None:
        """One Write RPC with ``updates`` (applied in order); no-op when empty."""
        if updates:
            req = p4r.WriteRequest(
                device_id=self.device_id,
                election_id=self._election(),
                updates=list(updates),
                atomicity=p4r.WriteRequest.CONTINUE_ON_ERROR,
            )
            self._call("Write", req, timeout)

    def read(self, entities: Sequence[p4r.Entity], timeout: float) -> list[p4r.Entity]:
        """Every entity the switch returns for one ReadRequest."""
        req = p4r.ReadRequest(device_id=self.device_id, entities=list(entities))
        out: list[p4r.Entity] = []
        try:
            for resp in self._stub().Read(req, timeout=timeout):
                out.extend(resp.entities)
        except grpc.RpcError as e:
            raise SouthboundError(f"{self.name}: Read failed: {_describe(e)}") from None
        return out

    def _stub(self) -> p4r_grpc.P4RuntimeStub:
        """The stub, or SouthboundError when not connected."""
        if self.stub is None or self.closed:
            raise SouthboundError(f"{self.name}: not connected")
        return self.stub

    def _call(self, method: str, req, timeout: float) -> None:
        """Unary call; SouthboundError with the per-update errors on failure."""
        try:
            getattr(self._stub(), method)(req, timeout=timeout)
        except grpc.RpcError as e:
            raise SouthboundError(f"{self.name}: {method} failed: {_describe(e)}") from None


def _describe(err: grpc.RpcError) -> str:
    """Status code and message, plus the first failing update's P4Runtime error."""
    text = f"{err.code().name}: {err.details()}"
    # (key, value) pairs at run time (grpc._typing.MetadataType); types-grpcio declares
    # them as objects with .key/.value, which grpc has not returned since its beta API.
    metadata = cast("tuple[tuple[str, bytes], ...]", err.trailing_metadata() or ())
    for key, value in metadata:
        if key != _DETAILS_KEY:
            continue
        status = rpc_status.Status.FromString(value)
        for i, detail in enumerate(status.details):
            p4err = p4r.Error()
            if detail.Unpack(p4err) and p4err.canonical_code != rpc_code.OK:
                return f"{text}; update {i}: {p4err.message}"
    return text


def update(kind: p4r.Update.Type.ValueType, **entity) -> p4r.Update:
    """``Update(type=kind, entity=Entity(**entity))``."""
    return p4r.Update(type=kind, entity=p4r.Entity(**entity))


INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
