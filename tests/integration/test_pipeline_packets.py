"""Packet-level tests of both pipelines, as PTF tests do for P4 programs: the OpenFlow
one (OVS userspace + os-ken) and the P4 one (``p4src/coflowbed.p4`` on BMv2
simple_switch_grpc, P4Runtime controller; skipped where BMv2 is absent).  Crafted scapy
frames from a host namespace are checked on the wire at the ingress leaf's uplink and the
receiving leaf's host port (rewritten DSCP, IPv4 checksum recomputed, every other byte
unchanged), in the tc class of their level on both, and against the meter's counters.
The helpers and the checks are in ``tests/packets.py``.  BMv2's links run at 10 Mbit/s
so that unoptimised builds (10-30 Mbit/s) keep up, as in ``tests/bmv2/test_bmv2_fabric.py``.
Root, under the lock:

    flock /tmp/coflowbed-fabric.lock .venv/bin/python -m pytest \
        tests/integration/test_pipeline_packets.py
"""

from __future__ import annotations

import pytest

from controller.client import ControllerError
from controller.coflow_table import TagEntry
from tests import packets
from topo.plan import FabricPlan
from workload.marking import WIRE_TAGS, level_dscp, tag_dscp

pytestmark = [pytest.mark.root, pytest.mark.slow]

LEVELS = 8
LEVEL_OF_TAG = packets.level_tags(LEVELS)
LINK_MBPS = {"ovs": 100.0, "bmv2": 10.0}
BENCHES = {"ovs": packets.ovs_bench, "bmv2": packets.bmv2_bench}


def plan_of(switch: str) -> FabricPlan:
    """One spine: the ingress leaf has one uplink, so every frame crosses one known port."""
    mbps = LINK_MBPS[switch]
    return FabricPlan(spines=1, leaves=2, hosts_per_leaf=2, host_bw_mbps=mbps, fabric_bw_mbps=mbps)


PLAN = plan_of("ovs")  # the hosts below are the same on both (only the link rate differs)
SRC, DST = packets.pick_hosts(PLAN)  # h11 (leaf 1) -> h21 (leaf 2)
OTHER = PLAN.host("h12")  # a second sender on SRC's leaf
METERED_TAG, UNMETERED_TAG, SENDER_TAG = 3, 4, 5
assert not {METERED_TAG, UNMETERED_TAG, SENDER_TAG, packets.UNMAPPED_TAG} & set(LEVEL_OF_TAG)


@pytest.fixture(scope="module", params=["ovs", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def bench(request, tmp_path_factory):
    """Controller + fabric of each switch kind, with one tag entry per level installed."""
    switch = request.param
    run_dir = tmp_path_factory.mktemp(f"packets-{switch}")
    with BENCHES[switch](plan_of(switch), run_dir, LEVELS) as b:
        b.client.set([TagEntry(tag, level) for tag, level in LEVEL_OF_TAG.items()])
        yield b


@pytest.mark.parametrize("proto", ["udp", "tcp"])
@pytest.mark.parametrize(
    "tag", sorted(LEVEL_OF_TAG), ids=lambda t: f"tag{t}-level{LEVEL_OF_TAG[t]}"
)
def test_tagged_frame_gets_its_level_code_and_class(bench, tag, proto):
    level = LEVEL_OF_TAG[tag]
    packets.check_forwarding(bench, SRC, DST, tag, level_dscp(level), level, proto)


@pytest.mark.parametrize("proto", ["udp", "tcp"])
@pytest.mark.parametrize(
    "dscp,level",
    [(0, 0), (packets.UNMAPPED_TAG, LEVELS - 1), (level_dscp(3), 3)],
    ids=["dscp0", "unmapped-tag", "level-code"],
)
def test_frame_without_an_entry_is_forwarded_untouched(bench, dscp, level, proto):
    packets.check_forwarding(bench, SRC, DST, dscp, dscp, level, proto)


def test_entry_matches_only_its_sender_port(bench):
    bench.client.set([TagEntry(SENDER_TAG, 2, senders=frozenset({OTHER.name}))])
    try:
        packets.check_forwarding(bench, OTHER, DST, SENDER_TAG, level_dscp(2), 2, "udp")
        packets.check_forwarding(bench, SRC, DST, SENDER_TAG, SENDER_TAG, LEVELS - 1, "udp")
    finally:
        bench.client.clear([SENDER_TAG])


def test_tags_sharing_a_dscp_are_told_apart_by_their_sender_port(bench, request):
    """Tag 60 = 55 + 5 goes out as DSCP 5, as tag 5 does: OTHER sends tag 5 (level 2)
    and SRC tag 60 (level 6), so a frame with DSCP 5 gets the level of its sender's tag.
    BMv2 keeps tags 1..55 (its program counts per DSCP): its controller refuses 60."""
    wide = SENDER_TAG + WIRE_TAGS
    entry = TagEntry(wide, 6, senders=frozenset({SRC.name}))
    if request.node.callspec.params["bench"] == "bmv2":
        with pytest.raises(ControllerError, match="takes tags 1..55"):
            bench.client.set([entry])
        return
    bench.client.set([TagEntry(SENDER_TAG, 2, senders=frozenset({OTHER.name})), entry])
    try:
        packets.check_forwarding(bench, OTHER, DST, SENDER_TAG, level_dscp(2), 2, "udp")
        packets.check_forwarding(bench, SRC, DST, tag_dscp(wide), level_dscp(6), 6, "udp")
    finally:
        bench.client.clear([SENDER_TAG, wide])


def test_meter_passes_part_of_a_burst_and_its_counters_match_the_wire(bench):
    packets.check_meter(bench, SRC, DST, METERED_TAG, 1, rate_mbps=0.2)


def test_unmetered_burst_passes_whole(bench):
    packets.check_unmetered_burst(bench, SRC, DST, UNMETERED_TAG, 1)
