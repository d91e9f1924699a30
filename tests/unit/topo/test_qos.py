"""Port scheduler command building, stats parsing and option rejection (no root)."""

from __future__ import annotations

import re

import pytest

from topo import qos
from workload.marking import skb_priority


def _filters(lines):
    """(tos, mask, flowid) of DSCP filters and flowid of the catch-all IP filter."""
    dscp = [
        re.search(r"dsfield (\S+) (\S+) flowid (\S+)", ln).groups()
        for ln in lines
        if "dsfield" in ln
    ]
    catch = [ln.split("flowid ")[1] for ln in lines if "match u32 0 0" in ln]
    return [(int(t, 16), int(m, 16), f) for t, m, f in dscp], catch


def test_every_level_code_maps_to_its_class_and_others_as_specified():
    ps = qos.PortScheduler("l1-eth1", 100, 4, 50)
    dscp, catch = _filters(qos.tc_batch_lines(ps))
    by_dscp = {tos >> 2: flowid for tos, mask, flowid in dscp}
    assert all(mask == 0xFC for _t, mask, _f in dscp)
    assert by_dscp == {56: "1:a", 57: "1:b", 58: "1:c", 59: "1:d", 0: "1:a"}
    assert catch == ["1:d"]  # unmapped tags -> lowest level


def test_classes_prios_rates_and_queues():
    lines = qos.tc_batch_lines(qos.PortScheduler("h11-eth0", 50, 3, 77, mtu=1500))
    assert lines[0] == "qdisc replace dev h11-eth0 root handle 1: htb default 100"
    assert "classid 1:1 htb rate 50000kbit ceil 50000kbit" in lines[1]
    for level, cid in enumerate(("1:a", "1:b", "1:c")):
        cls = next(ln for ln in lines if f"classid {cid} " in ln)
        assert f"prio {level}" in cls and "ceil 50000kbit" in cls and "rate 50kbit" in cls
        buckets = [ln for ln in lines if f"parent {cid} classid" in ln]
        assert len(buckets) == qos.BUCKETS and all(f"prio {level}" in b for b in buckets)
        first = qos.bucket_classid(level, 0)
        q = next(ln for ln in lines if f"parent {first} handle" in ln)
        assert q.endswith(f"bfifo limit {77 * 1514}")


def test_flows_are_hashed_over_the_buckets_of_their_level():
    lines = qos.tc_batch_lines(qos.PortScheduler("x", 50, 2, 10))
    link = [ln for ln in lines if "hashkey" in ln]
    assert len(link) == 2 and all("mask 0x001e0000 at 20" in ln for ln in link)
    targets = {ln.split("flowid ")[1] for ln in lines if "parent 1:b " in ln and "flowid" in ln}
    assert targets == {qos.bucket_classid(1, b) for b in range(qos.BUCKETS)}


def test_class_ids_agree_with_socket_priority():
    for level in range(8):
        major, minor = (int(x, 16) for x in qos.classid(level).split(":"))
        assert (major << 16) | minor == skb_priority(level)


@pytest.mark.parametrize(
    "kw,msg",
    [
        ({"levels": 9}, "levels"),
        ({"rate_mbps": 0}, "rate_mbps"),
        ({"queue_packets": 0}, "queue_packets"),
    ],
)
def test_bad_scheduler_parameters_are_rejected(kw, msg):
    args = {"dev": "x", "rate_mbps": 10, "levels": 2, "queue_packets": 10, **kw}
    with pytest.raises(ValueError, match=msg):
        qos.PortScheduler(**args)


def test_unsupported_link_options_name_source_key_and_reason():
    with pytest.raises(
        ValueError, match=r"^s.yaml: delay: unsupported link option \(needs the netem"
    ):
        qos.reject_unsupported({"bw": 1, "delay": "1ms"}, "s.yaml")
    qos.reject_unsupported({"bw": 1}, "s.yaml")  # supported options pass


SAMPLE = """class htb 1:1 root rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b
 Sent 900 bytes 9 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:a parent 1:1 leaf a: prio 0 rate 100Kbit ceil 100Mbit burst 1600b cburst 1600b
 Sent 700 bytes 7 pkt (dropped 2, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:b parent 1:1 leaf b: prio 1 rate 100Kbit ceil 100Mbit burst 1600b cburst 1600b
 Sent 200 bytes 2 pkt (dropped 0, overlimits 0 requeues 0)
"""


def test_parse_class_stats_reads_level_classes_only():
    stats = qos.parse_class_stats(SAMPLE, levels=2)
    assert stats == {0: qos.ClassStats(0, 700, 7, 2), 1: qos.ClassStats(1, 200, 2, 0)}
