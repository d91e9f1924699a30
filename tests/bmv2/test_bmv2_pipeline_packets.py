"""Packet-level tests of the P4 pipeline (``p4src/coflowbed.p4`` on BMv2
simple_switch_grpc, P4Runtime controller), the same checks as
``tests/integration/test_pipeline_packets.py`` runs on Open vSwitch (helpers and checks in
``tests/packets.py``): a crafted scapy frame per tag and level leaves the ingress leaf
with DSCP 56 + level (IPv4 checksum recomputed by the pipeline's
``CoflowComputeChecksum``, every other byte unchanged) through that level's tc class;
DSCP 0, unmapped tags and level codes pass untouched; a metered tag (the pipeline's
``tag_meter``, RED dropped and counted in ``meter_drop``) passes part of a burst and
its counters account for the rest.  Root, skipped where simple_switch_grpc is absent;
run under ``flock /tmp/coflowbed-fabric.lock``.

Links run at 10 Mbit/s so that unoptimised BMv2 builds (10-30 Mbit/s) keep up, as in
``test_bmv2_fabric.py``.
"""

from __future__ import annotations

import pytest

from controller.coflow_table import TagEntry
from tests import packets
from topo.plan import FabricPlan
from workload.marking import level_dscp

pytestmark = [pytest.mark.bmv2, pytest.mark.root, pytest.mark.slow]

LEVELS = 8
LEVEL_OF_TAG = packets.level_tags(LEVELS)
LINK_MBPS = 10.0
PLAN = FabricPlan(
    spines=1, leaves=2, hosts_per_leaf=2, host_bw_mbps=LINK_MBPS, fabric_bw_mbps=LINK_MBPS
)
SRC, DST = packets.pick_hosts(PLAN)  # h11 (leaf 1) -> h21 (leaf 2)
OTHER = PLAN.host("h12")
METERED_TAG, UNMETERED_TAG, SENDER_TAG = 3, 4, 5
assert not {METERED_TAG, UNMETERED_TAG, SENDER_TAG, packets.UNMAPPED_TAG} & set(LEVEL_OF_TAG)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """P4Runtime controller + BMv2 fabric for the module, one tag entry per level."""
    with packets.bmv2_bench(PLAN, tmp_path_factory.mktemp("bmv2packets"), LEVELS) as b:
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


def test_meter_passes_part_of_a_burst_and_its_counters_match_the_wire(bench):
    packets.check_meter(bench, SRC, DST, METERED_TAG, 1, rate_mbps=0.2)


def test_unmetered_burst_passes_whole(bench):
    packets.check_unmetered_burst(bench, SRC, DST, UNMETERED_TAG, 1)
