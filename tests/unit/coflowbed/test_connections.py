"""Which connections the agents open before the iteration (coflowbed.connections)."""

from __future__ import annotations

from coflowbed.connections import SPARE, pair_counts, pool_orders
from workload.dag import Coflow, Dag, Flow


def dag_of(*coflows: Coflow) -> Dag:
    return Dag(coflows=list(coflows))


def test_every_pair_gets_its_largest_coflows_flows_plus_spare():
    a = Coflow(
        "a", (Flow("a.0", "h1", "h2", 10), Flow("a.1", "h1", "h2", 10), Flow("a.2", "h2", "h1", 5))
    )
    b = Coflow("b", (Flow("b.0", "h1", "h2", 10), Flow("b.1", "h3", "h1", 10)), deps=("a",))
    assert pair_counts(dag_of(a, b)) == {("h1", "h2"): 2, ("h2", "h1"): 1, ("h3", "h1"): 1}
    address = {"h1": ("10.0.1.1", 5001), "h2": ("10.0.1.2", 5001), "h3": ("10.0.2.1", 5002)}
    orders = pool_orders(dag_of(a, b), address)
    assert [(o.src, o.dst_ip, o.dst_port, o.count) for o in orders] == [
        ("h1", "10.0.1.2", 5001, 2 + SPARE),
        ("h2", "10.0.1.1", 5001, 1 + SPARE),
        ("h3", "10.0.1.1", 5001, 1 + SPARE),
    ]


def test_coflows_without_dependencies_may_overlap_so_their_flows_add_up():
    a = Coflow("a", (Flow("a.0", "h1", "h2", 10),))
    b = Coflow("b", (Flow("b.0", "h1", "h2", 10), Flow("b.1", "h2", "h1", 10)))
    c = Coflow("c", (Flow("c.0", "h1", "h2", 10),), deps=("a",))  # after a: not counted
    assert pair_counts(dag_of(a, b, c)) == {("h1", "h2"): 2, ("h2", "h1"): 1}
