"""Coflow-table rules, meters, validation and diffs (pure)."""

from __future__ import annotations

import pytest

from controller import coflow_table as ct
from topo.plan import FabricPlan
from workload.marking import TAG_ID_MAX

PLAN = FabricPlan(spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


def _state(entries, leaf=1, burst_s=0.25):
    epochs = {e.tag: 3 for e in entries}
    return ct.leaf_state(PLAN, leaf, entries, epochs, burst_s)


def test_one_rule_per_sender_host_with_per_host_meter():
    rules, meters = _state([ct.TagEntry(7, 2, 10.0)])
    assert sorted(rules) == [(7, 1, None), (7, 2, None)]
    r = rules[(7, 1, None)]
    assert (r.level, r.meter, r.cookie) == (2, ("host", 7, "h11"), (3 << ct.COOKIE_TAG_BITS) | 7)
    assert meters[("host", 7, "h12")] == ct.MeterSpec(("host", 7, "h12"), 10000, 2500)


def test_senders_limit_rules_and_meters_to_their_ports():
    e = ct.parse_entry({"tag": 7, "level": 1, "rate_mbps": 10, "senders": ["h12"]}, PLAN, 8, "e")
    rules1, meters1 = _state([e], leaf=1)
    rules2, meters2 = _state([e], leaf=2)
    assert sorted(rules1) == [(7, 2, None)] and list(meters1) == [("host", 7, "h12")]
    assert rules2 == {} and meters2 == {}
    with pytest.raises(ValueError, match=r"e.senders: must be a list of host names"):
        ct.parse_entry({"tag": 7, "level": 1, "senders": ["h99"]}, PLAN, 8, "e")


def test_pair_rules_only_on_the_senders_leaf():
    e = ct.TagEntry(7, 0, None, (ct.FlowRate("h21", "h12", 5.0),))
    rules1, meters1 = _state([e], leaf=1)
    rules2, meters2 = _state([e], leaf=2)
    assert meters1 == {} and (7, 1, "10.0.1.2") not in rules1
    assert rules2[(7, 1, "10.0.1.2")].meter == ("pair", 7, "h21", "h12")
    assert rules2[(7, 2, None)].meter is None
    assert meters2[("pair", 7, "h21", "h12")].rate_kbps == 5000


def test_diff_writes_only_what_changed_and_orders_meters():
    table = ct.LeafTable()
    rules, meters = _state([ct.TagEntry(1, 0, 10.0), ct.TagEntry(2, 1)])
    d, ids = table.diff(rules, meters)
    assert d.count() == 6 and len(d.meters_add) == 2 and len(d.rules_add) == 4
    assert sorted(ids.values()) == [1, 2]
    table.commit(rules, meters, ids)
    # tag 2 changes level; tag 1 unchanged -> two rule modifications, nothing else
    rules2, meters2 = _state([ct.TagEntry(1, 0, 10.0), ct.TagEntry(2, 3)])
    d2, ids2 = table.diff(rules2, meters2)
    assert d2.count() == 2 and [r.level for r in d2.rules_mod] == [3, 3]
    assert ids2 == ids
    # tag 1 loses its meter: rules modified, meters deleted (after the rules)
    rules3, meters3 = _state([ct.TagEntry(1, 0), ct.TagEntry(2, 3)])
    table.commit(rules2, meters2, ids2)
    d3, ids3 = table.diff(rules3, meters3)
    assert len(d3.rules_mod) == 2 and sorted(m for m, _ in d3.meters_del) == [1, 2]
    assert ids3 == {} and d3.meters_add == []


def test_new_meters_take_the_lowest_ids_not_installed_and_freed_ids_come_back():
    table = ct.LeafTable()
    r, m = _state([ct.TagEntry(1, 0, 1.0), ct.TagEntry(2, 0, 2.0)])
    table.commit(r, m, table.diff(r, m)[1])
    r2, m2 = _state([ct.TagEntry(2, 0, 2.0), ct.TagEntry(3, 0, 3.0)])
    d, ids = table.diff(r2, m2)
    assert ids[("host", 2, "h11")] == table.meter_ids[("host", 2, "h11")]
    # ids 1..4 are still installed while the diff is applied (old meters go last)
    assert {ids[("host", 3, "h11")], ids[("host", 3, "h12")]} == {5, 6}
    assert sorted(mid for mid, _ in d.meters_del) == [1, 2]
    table.commit(r2, m2, ids)
    r3, m3 = _state([ct.TagEntry(2, 0, 2.0), ct.TagEntry(3, 0, 3.0), ct.TagEntry(4, 0, 4.0)])
    _d, ids3 = table.diff(r3, m3)
    assert {ids3[("host", 4, "h11")], ids3[("host", 4, "h12")]} == {1, 2}


@pytest.mark.parametrize(
    "raw,msg",
    [
        ([{"tag": 0, "level": 0}], r"entries\[0\]: tag must be"),
        ([{"tag": 1, "level": 8}], r"entries\[0\]: level must be"),
        ([{"tag": 1, "level": 0, "prio": 1}], r"entries\[0\]\.prio: unknown key"),
        ([{"level": 0}], r"entries\[0\]\.tag: missing"),
        (
            [{"tag": 1, "level": 0, "rate_mbps": -1}],
            r"entries\[0\]\.rate_mbps: must be a number > 0",
        ),
        (
            [{"tag": 1, "level": 0, "flow_rates": [{"src": "h11", "dst": "h99", "rate_mbps": 1}]}],
            r"entries\[0\]\.flow_rates\[0\]\.dst: unknown host 'h99'",
        ),
        ([{"tag": 1, "level": 0}, {"tag": 1, "level": 1}], "tag 1 appears more than once"),
        ("x", "entries: must be a list"),
    ],
)
def test_bad_entries_get_one_line_errors_naming_the_key(raw, msg):
    with pytest.raises(ValueError, match=msg):
        ct.parse_entries(raw, PLAN, levels=8)


def test_parse_entries_accepts_nulls_and_flow_rates():
    (e,) = ct.parse_entries(
        [
            {
                "tag": 4,
                "level": 1,
                "rate_mbps": None,
                "flow_rates": [{"src": "h11", "dst": "h21", "rate_mbps": 2}],
            }
        ],
        PLAN,
        levels=2,
    )
    assert e == ct.TagEntry(4, 1, None, (ct.FlowRate("h11", "h21", 2.0),))
    assert ct.parse_tags([1, 55, 56, TAG_ID_MAX]) == [1, 55, 56, TAG_ID_MAX]
    for bad in (0, TAG_ID_MAX + 1, True):
        with pytest.raises(ValueError, match="tags: tag must be"):
            ct.parse_tags([bad])


def test_rule_cookie_keeps_tag_and_epoch_apart():
    """12 low bits for the tag (TAG_ID_MAX = 3520 < 4096): 1234 * 4096 + 3520."""
    cookie = ct.rule_cookie(TAG_ID_MAX, 1234)
    assert cookie == 1234 * 4096 + 3520
    assert (ct.cookie_tag(cookie), ct.cookie_epoch(cookie)) == (TAG_ID_MAX, 1234)
    with pytest.raises(ValueError, match="tag"):
        ct.rule_cookie(TAG_ID_MAX + 1, 1)  # would overlap the epoch bits


@pytest.mark.parametrize(
    "entry",
    [
        ct.TagEntry(3, 1),
        ct.TagEntry(4, 2, 20.0, (ct.FlowRate("h11", "h21", 5.0),), frozenset({"h11", "h12"})),
    ],
)
def test_an_entry_crosses_the_control_api_unchanged(entry):
    """What the orchestrator's client writes is what the controller parses back."""
    assert ct.parse_entry(entry.to_wire(), PLAN, 8, "entries[0]") == entry
