"""A fake P4Runtime switch for unit tests (shared test helper): a real gRPC server on
127.0.0.1 implementing the P4Runtime service in Python, recording every request and
keeping the written entities so reads answer like a switch."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from finsy.proto import p4i, p4r, p4r_grpc, rpc_code

from controller.p4runtime import artifacts

ART = artifacts.committed()
needs_p4info = pytest.mark.skipif(
    not ART.exist(),
    reason="p4src/compiled/ missing: p4c has not compiled the pipeline yet (make p4)",
)


def table_key(te: p4r.TableEntry) -> tuple:
    """Identity of a table entry: table and match."""
    return te.table_id, tuple(sorted(m.SerializeToString(deterministic=True) for m in te.match))


class FakeP4Runtime(p4r_grpc.P4RuntimeServicer):
    """Records requests; stores entries; answers reads; one primary by election id."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arbitrations: list = []
        self.pipelines: list = []
        self.writes: list[p4r.WriteRequest] = []
        self.reads: list[p4r.ReadRequest] = []
        self.tables: dict[tuple, p4r.TableEntry] = {}
        self.meters: dict[tuple, p4r.MeterEntry] = {}
        self.members: dict[tuple, p4r.ActionProfileMember] = {}
        self.groups: dict[tuple, p4r.ActionProfileGroup] = {}
        self.p4info: p4i.P4Info | None = None
        self.counters: dict[tuple, tuple[int, int]] = {}  # (counter id, index) -> (b, p)
        self.direct: dict[tuple, tuple[int, int]] = {}  # entry key -> (bytes, packets)
        self.primary_election: int | None = None

    def StreamChannel(self, request_iterator, context):
        for req in request_iterator:
            if not req.HasField("arbitration"):
                continue
            arb = req.arbitration
            with self.lock:
                self.arbitrations.append(arb)
                eid = arb.election_id.low
                if self.primary_election is None or eid >= self.primary_election:
                    self.primary_election, code = eid, rpc_code.OK
                else:
                    code = rpc_code.ALREADY_EXISTS
            resp = p4r.StreamMessageResponse(arbitration=arb)
            resp.arbitration.status.code = code
            yield resp

    def SetForwardingPipelineConfig(self, request, context):
        with self.lock:
            self.pipelines.append(request)
            self.tables.clear()
            self.meters.clear()
            self.members.clear()
            self.groups.clear()
            self.p4info = request.config.p4info
        return p4r.SetForwardingPipelineConfigResponse()

    def Write(self, request, context):
        with self.lock:
            self.writes.append(request)
            for u in request.updates:
                err = self._apply(u)
                if err:
                    context.abort(grpc.StatusCode.UNKNOWN, err)
        return p4r.WriteResponse()

    def _apply(self, u: p4r.Update) -> str | None:
        kind = u.entity.WhichOneof("entity")
        if kind == "table_entry":
            key = table_key(u.entity.table_entry)
            exists = key in self.tables
            if u.type == p4r.Update.INSERT and exists:
                return "entry exists"
            if u.type in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
                return "entry not found"
            if u.type == p4r.Update.DELETE:
                del self.tables[key]
            else:
                self.tables[key] = u.entity.table_entry
        elif kind == "meter_entry":
            m = u.entity.meter_entry
            self.meters[(m.meter_id, m.index.index)] = m
        elif kind == "action_profile_member":
            mb = u.entity.action_profile_member
            self.members[(mb.action_profile_id, mb.member_id)] = mb
        elif kind == "action_profile_group":
            g = u.entity.action_profile_group
            if u.type == p4r.Update.MODIFY and (g.action_profile_id, g.group_id) not in self.groups:
                return "group not found"
            self.groups[(g.action_profile_id, g.group_id)] = g
        return None

    def Read(self, request, context):
        with self.lock:
            self.reads.append(request)
            out = []
            for ent in request.entities:
                out.extend(self._read(ent))
        yield p4r.ReadResponse(entities=out)

    def _read(self, ent: p4r.Entity) -> list[p4r.Entity]:
        if ent.HasField("action_profile_member"):
            return [p4r.Entity(action_profile_member=m) for m in self.members.values()]
        if ent.HasField("action_profile_group"):
            return [p4r.Entity(action_profile_group=g) for g in self.groups.values()]
        if ent.HasField("meter_entry"):  # every cell written (a reset one without config)
            return [p4r.Entity(meter_entry=m) for m in self.meters.values()]
        if ent.HasField("table_entry"):
            res = []
            for key, te in self.tables.items():
                if ent.table_entry.table_id in (0, key[0]):
                    copy = p4r.TableEntry()
                    copy.CopyFrom(te)
                    b, p = self.direct.get(key, (0, 0))
                    copy.counter_data.byte_count, copy.counter_data.packet_count = b, p
                    res.append(p4r.Entity(table_entry=copy))
            return res
        c = ent.counter_entry
        b, p = self.counters.get((c.counter_id, c.index.index), (0, 0))
        res = p4r.CounterEntry()
        res.CopyFrom(c)
        res.data.byte_count, res.data.packet_count = b, p
        return [p4r.Entity(counter_entry=res)]

    def GetForwardingPipelineConfig(self, request, context):
        with self.lock:
            if self.p4info is None:  # as PI's server answers before any pipeline
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "No forwarding pipeline")
            cfg = p4r.ForwardingPipelineConfig()
            cfg.p4info.CopyFrom(self.p4info)
        return p4r.GetForwardingPipelineConfigResponse(config=cfg)

    def Capabilities(self, request, context):
        return p4r.CapabilitiesResponse(p4runtime_api_version="1.3.0")


class FakeSwitch:
    """A FakeP4Runtime served on a free 127.0.0.1 port."""

    def __init__(self) -> None:
        self.fake = FakeP4Runtime()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        p4r_grpc.add_P4RuntimeServicer_to_server(self.fake, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def stop(self) -> None:
        self.server.stop(grace=None).wait(5)


def fake_switches(plan) -> Iterator[dict[str, FakeSwitch]]:
    """A FakeSwitch per switch of ``plan`` by name, for a fixture to yield; each is
    stopped when the fixture ends."""
    sws = {sw.name: FakeSwitch() for sw in plan.switches}
    yield sws
    for s in sws.values():
        s.stop()


def p4info_ids():
    from controller.p4runtime.p4info import P4InfoIndex

    return P4InfoIndex.from_file(ART.p4info)


def entries_of(fake: FakeP4Runtime, table: str) -> list[p4r.TableEntry]:
    tid = p4info_ids().id("tables", table)
    return [te for k, te in fake.tables.items() if k[0] == tid]
