"""TagPool: tag ids whose DSCP is unique on each sending host, reuse after a batched
clear, and the one-line errors when no tag is left."""

from __future__ import annotations

import pytest

from controller.tags import TagPool
from workload.marking import TAG_MAX, tag_dscp


def test_tags_are_distinct_and_reused_only_after_a_batched_clear():
    pool = TagPool()
    a, b = pool.take({"a"}), pool.take({"a"})
    assert (a, b) == (1, 2)
    pool.give(a)
    assert pool.take({"a"}) == 3  # 1 is dirty: its entry is still installed
    for _ in range(52):
        pool.take({"a"})
    assert pool.take({"a"}) is None  # only dirty tags left
    assert pool.reclaim() == [1] and pool.take({"a"}) == 1
    with pytest.raises(
        RuntimeError, match="^more than 55 coflows active at once sending from host a$"
    ):
        pool.take({"a"})


def test_200_active_coflows_get_tags_whose_dscp_is_unique_on_each_sender():
    """Coflow i sends from host i % 20 (10 coflows a host).  The smallest free tag of
    coflow i is i + 1: tags 1..i are held, and DSCP 1 + i % 55 is free on its host,
    whose other coflows i + 20k (k = 1..9 apart) have DSCPs 20k mod 55 away from it,
    never 0 (55 | 20k needs 11 | k)."""
    pool = TagPool()
    tags = [pool.take({f"h{i % 20}"}) for i in range(200)]
    assert tags == list(range(1, 201))
    for h in range(20):
        dscps = [tag_dscp(t) for i, t in enumerate(tags) if i % 20 == h]
        assert len(set(dscps)) == 10


def test_dirty_tags_are_cleared_before_a_tag_above_55_is_given():
    """Tags 1..55 held (coflows 0..54), 54 active after 1 finished: the new coflow on
    another host could take 56 (DSCP 1, free there) but clears 1 first and takes it."""
    pool = TagPool()
    for i in range(55):
        pool.take({f"h{i}"})
    pool.give(1)
    assert pool.take({"new"}) is None
    assert pool.reclaim() == [1] and pool.take_clean({"new"}) == 1
    assert pool.take({"other"}) == 56  # all 55 active: a second tag with DSCP 1


def test_a_sender_holding_the_tags_dscp_marks_it_with_its_smallest_free_one():
    """a holds tags 1..30 (DSCPs 1..30), b 31..55.  Tag 56's own DSCP is 1: free on b,
    held on a, so a marks tag 56 with its smallest free DSCP, 31."""
    pool = TagPool()
    for _ in range(30):
        pool.take({"a"})
    for _ in range(25):
        pool.take({"b"})
    assert pool.take({"a", "b"}) == 56
    assert pool.dscps_of(56) == {"a": 31}
    assert pool.dscps_of(1) == {}
    pool.give(56)
    assert pool.reclaim() == [56]
    assert pool.take({"a", "b"}) == 56 and pool.dscps_of(56) == {"a": 31}  # freed again


def test_exhaustion_names_the_full_host_or_the_pipeline_limit():
    """One line each: a host with 55 active coflows; a DSCP-only pipeline (tag_max 55),
    which never remaps: 55 coflows in the fabric."""
    pool = TagPool()
    for i in range(55):
        pool.take({"a", f"x{i}"})
    with pytest.raises(
        RuntimeError, match="^more than 55 coflows active at once sending from host a$"
    ):
        pool.take({"b", "a"})
    assert pool.take({"b"}) == 56
    bmv2 = TagPool(TAG_MAX)
    for i in range(55):
        bmv2.take({f"h{i}"})
    with pytest.raises(RuntimeError, match=r"^more than 55 coflows active at once \(tags 1..55\)$"):
        bmv2.take({"h99"})
