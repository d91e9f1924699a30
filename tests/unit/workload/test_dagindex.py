"""The integer index of a DAG: node order, CSR children, and the validation errors."""

from __future__ import annotations

import pytest

from workload import dagindex
from workload.dag import Coflow, Compute, Dag, Flow
from workload.dagindex import check_acyclic, index_dag


def diamond() -> Dag:
    """a -> (x, y) -> b, with x a coflow: computes a, b, y are nodes 0-2, coflow x is 3."""
    computes = [
        Compute("a", "h0", 1.0),
        Compute("b", "h0", 1.0, ("x", "y")),
        Compute("y", "h1", 1.0, ("a",)),
    ]
    return Dag([Coflow("x", (Flow("x:0", "h0", "h1", 5),), deps=("a",))], computes)


def children(ix, i):
    """Children of node i as ids."""
    return [ix.ids[c] for c in ix.children[ix.ptr[i] : ix.ptr[i + 1]]]


def test_index_numbers_computes_then_coflows_and_lists_children_in_dag_order():
    """a's dependants in DAG order are y (compute 2) then x (coflow, node 3); b has
    two dependencies and no children."""
    ix = index_dag(diamond())
    assert ix.ids == ["a", "b", "y", "x"]
    assert ix.indeg.tolist() == [0, 2, 1, 1]
    assert children(ix, 0) == ["y", "x"]
    assert children(ix, 1) == []
    assert children(ix, 2) == ["b"] and children(ix, 3) == ["b"]
    check_acyclic(ix)


def test_duplicate_unknown_and_cycle_are_named():
    """Each broken DAG names the offending node."""
    dup = Dag([], [Compute("a", "h0", 1.0), Compute("a", "h1", 1.0)])
    with pytest.raises(ValueError, match="duplicate node id 'a'"):
        index_dag(dup)
    unknown = Dag([], [Compute("a", "h0", 1.0, ("zz",))])
    with pytest.raises(ValueError, match="node 'a' depends on unknown node 'zz'"):
        index_dag(unknown)
    loop = Dag([], [Compute("r", "h0", 1.0), Compute("p", "h0", 1.0, ("q", "r"))])
    loop.computes.append(Compute("q", "h0", 1.0, ("p",)))
    with pytest.raises(ValueError, match=r"cycle among nodes such as \['p', 'q'\]"):
        dagindex.validate(loop)
