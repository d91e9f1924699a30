"""Read a BMv2 switch's whole state over P4Runtime without taking part in arbitration
(no StreamChannel, no election id): what the orchestrator compares before and after a
fault.  A P4Runtime server answers Read and GetForwardingPipelineConfig from any client,
the primary controller keeps its role."""

from __future__ import annotations

import grpc
from finsy.proto import p4r, p4r_grpc

from controller.p4runtime.artifacts import Artifacts, committed
from controller.p4runtime.entities import EntityBuilder, N
from controller.p4runtime.p4info import P4InfoIndex
from controller.p4runtime.readback import dump_lines, p4info_digest, state_reads
from controller.southbound.base import SouthboundError

NO_PIPELINE = "pipeline none"  # the dump of a switch that has no pipeline yet


class SwitchReader:
    """Reads of one switch (``address``: ``unix:/PATH`` or ``HOST:PORT``)."""

    def __init__(self, address: str, device_id: int, artifacts: Artifacts | None = None) -> None:
        """Reader of device ``device_id`` at ``address`` (entity ids from the pipeline's
        P4Info, the committed one by default)."""
        art = artifacts or committed()
        self.address, self.device_id = address, device_id
        self.build = EntityBuilder(P4InfoIndex.from_file(art.p4info))

    def dump(self, timeout: float) -> list[str]:
        """Every entry, ECMP member and group and configured meter cell, as sorted lines
        (``readback.dump_lines``), the installed P4Info's digest first (``NO_PIPELINE``
        alone before a pipeline is pushed); SouthboundError when the switch does not
        answer."""
        with grpc.insecure_channel(self.address) as channel:
            stub = p4r_grpc.P4RuntimeStub(channel)
            try:
                cfg = stub.GetForwardingPipelineConfig(
                    p4r.GetForwardingPipelineConfigRequest(
                        device_id=self.device_id,
                        response_type=p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
                    ),
                    timeout=timeout,
                )
                p4info = cfg.config.p4info if cfg.config.HasField("p4info") else None
                ents: list[p4r.Entity] = []
                req = p4r.ReadRequest(device_id=self.device_id, entities=state_reads(self.build))
                for resp in stub.Read(req, timeout=timeout):
                    ents.extend(resp.entities)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.FAILED_PRECONDITION:  # no pipeline pushed yet
                    return [NO_PIPELINE]
                raise SouthboundError(f"{self.address}: read failed: {e.code().name}") from None
        return dump_lines(ents, p4info_digest(p4info))

    def egress_packets(self, port: int, timeout: float) -> int:
        """Packets the pipeline sent out of ``port`` (its ``port_tx`` counter cell), what
        it tried to send whatever the interface's state."""
        with grpc.insecure_channel(self.address) as channel:
            req = p4r.ReadRequest(
                device_id=self.device_id,
                entities=[p4r.Entity(counter_entry=self.build.counter_read(N.port_tx, port))],
            )
            try:
                ents = [
                    e
                    for r in p4r_grpc.P4RuntimeStub(channel).Read(req, timeout=timeout)
                    for e in r.entities
                ]
            except grpc.RpcError as e:
                raise SouthboundError(f"{self.address}: read failed: {e.code().name}") from None
        return sum(e.counter_entry.data.packet_count for e in ents)
