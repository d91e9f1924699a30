"""FlowBlock stands for the tuple of Flow objects it describes; the column helpers
read blocks and plain tuples alike."""

from __future__ import annotations

import numpy as np
import pytest

from workload.dag import Coflow, Flow
from workload.flowblock import FlowBlock, flow_columns, flow_ids

HOSTS = ("h0", "h1", "h2")


def block() -> FlowBlock:
    """c: h0->h1 10 B, h1->h2 20 B, h2->h0 30 B."""
    return FlowBlock("c", HOSTS, np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([10, 20, 30]))


def as_tuple() -> tuple[Flow, ...]:
    """The same three flows as objects, ids c:0..c:2."""
    return (Flow("c:0", "h0", "h1", 10), Flow("c:1", "h1", "h2", 20), Flow("c:2", "h2", "h0", 30))


def test_block_reads_as_its_tuple():
    """Length, indexing (negative too), slicing, iteration, equality and hash all match
    the tuple; a coflow holding the block equals one holding the tuple."""
    b, t = block(), as_tuple()
    assert len(b) == 3 and b[1] == t[1] and b[-1] == t[2] and b[0:2] == t[0:2]
    assert tuple(b) == t and b == t and t == b and hash(b) == hash(t)
    assert b != t[:2] and b != (*t[:2], Flow("c:2", "h2", "h0", 31))
    assert Coflow("c", b) == Coflow("c", t)
    with pytest.raises(IndexError):
        b[3]
    assert b.src_names() == ["h0", "h1", "h2"] and b.dst_names() == ["h1", "h2", "h0"]
    assert b.flow_ids() == ["c:0", "c:1", "c:2"]


def test_block_rejects_what_flow_rejects_and_is_read_only():
    """Flow 1 from h1 to itself, or flow 0 with 0 bytes, raise as Flow() does."""
    with pytest.raises(ValueError, match="flow c:1: src and dst are both h1"):
        FlowBlock("c", HOSTS, np.array([0, 1]), np.array([1, 1]), np.array([5, 5]))
    with pytest.raises(ValueError, match="flow c:0: bytes must be > 0, got 0"):
        FlowBlock("c", HOSTS, np.array([0]), np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="differ in length"):
        FlowBlock("c", HOSTS, np.array([0]), np.array([1, 2]), np.array([1]))
    with pytest.raises(ValueError, match="read-only"):
        block().nbytes[0] = 1


def test_columns_and_ids_cover_blocks_and_tuples_in_order():
    """A block coflow then a one-flow tuple coflow: 3 + 1 flows in that order."""
    cfs = [Coflow("c", block()), Coflow("d", (Flow("d:x", "h2", "h1", 7),))]
    cols = flow_columns(cfs)
    assert cols.src == ["h0", "h1", "h2", "h2"] and cols.dst == ["h1", "h2", "h0", "h1"]
    assert cols.nbytes.tolist() == [10.0, 20.0, 30.0, 7.0]
    assert flow_ids(cfs) == ["c:0", "c:1", "c:2", "d:x"]
