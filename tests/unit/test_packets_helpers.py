"""The pure parts of the packet-test helpers (``tests/packets.py``): the expected frame
after a DSCP rewrite, the checksum check, the tag/level table and the tc class oracle.
No root, no fabric."""

from __future__ import annotations

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from tests import packets
from topo.plan import FabricPlan
from workload.marking import TAG_MAX, TAG_MIN, level_dscp

PLAN = FabricPlan(spines=1, leaves=2, hosts_per_leaf=2, host_bw_mbps=10, fabric_bw_mbps=10)
SRC, DST = packets.pick_hosts(PLAN)


def test_probe_frames_carry_the_dscp_marker_and_size():
    probe = packets.make_probe(SRC, DST, 17, "tcp", 3, size=300)
    assert [len(f) for f in probe.frames] == [300] * 3
    assert [packets.dscp_of(f) for f in probe.frames] == [17] * 3
    assert [probe.seq_of(f) for f in probe.frames] == [0, 1, 2]
    assert all(probe.matches(f) and TCP in f for f in probe.frames)
    other = packets.make_probe(SRC, DST, 17, "udp", 1)
    assert not probe.matches(other.frames[0])  # distinct tokens per probe
    assert (SRC.leaf, DST.leaf) == (1, 2)


def test_with_dscp_changes_only_the_tos_byte_and_the_ip_checksum():
    frame = packets.make_probe(SRC, DST, 20, "udp", 1).frames[0]
    out = packets.with_dscp(frame, level_dscp(5))
    before = bytes(frame)
    changed = [i for i in range(len(before)) if before[i] != out[i]]
    assert len(out) == len(before)
    assert changed and set(changed) <= {14 + 1, 14 + 10, 14 + 11}  # TOS, header checksum
    parsed = Ether(out)
    assert packets.dscp_of(parsed) == 61 and packets.ip_checksum_ok(parsed)
    assert packets.with_dscp(frame, 20) == before  # an untouched frame stays the same


def test_ip_checksum_ok_detects_a_stale_checksum():
    frame = packets.make_probe(SRC, DST, 20, "udp", 1).frames[0]
    stale = frame.copy()
    stale[IP].tos = level_dscp(0) << 2  # DSCP rewritten, checksum left as it was
    assert packets.ip_checksum_ok(frame)
    assert not packets.ip_checksum_ok(Ether(bytes(stale)))


def test_level_tags_give_every_level_one_distinct_tag():
    for levels in (1, 2, 4, 5, 7, 8):
        table = packets.level_tags(levels)
        assert sorted(table.values()) == list(range(levels))
        assert all(TAG_MIN <= t <= TAG_MAX for t in table)
        assert packets.UNMAPPED_TAG not in table
    assert list(packets.level_tags(8).values()) != list(range(8))  # permuted


def test_tc_level_oracle_follows_the_documented_filters():
    def frame(dscp):
        return Ether() / IP(tos=dscp << 2)

    assert packets.tc_level(frame(0), 8) == 0
    assert [packets.tc_level(frame(56 + lv), 8) for lv in range(8)] == list(range(8))
    assert packets.tc_level(frame(59), 2) == 1  # a level code beyond K: any other IP
    assert packets.tc_level(frame(23), 8) == 7  # a tag without an entry: lowest level
    assert packets.tc_level(Ether() / IPv6(), 8) == 0  # non-IPv4: HTB default, level 0
