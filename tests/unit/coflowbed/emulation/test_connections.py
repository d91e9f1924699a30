"""Which connections the agents open before the iteration (coflowbed.emulation.connections)."""

from __future__ import annotations

from coflowbed.emulation.connections import SPARE, flow_slots, pair_counts, pool_orders
from topo.plan import FabricPlan
from workload import ecmp
from workload.dag import Coflow, Dag, Flow

# two leaves of two hosts: h11, h12 on l1 (10.0.1.x), h21, h22 on l2; four spines
PLAN = FabricPlan(spines=4, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)
ADDRESS = {h.name: (h.ip, 5001) for h in PLAN.hosts}


def dag_of(*coflows: Coflow) -> Dag:
    return Dag(coflows=list(coflows))


def test_every_pair_gets_its_largest_coflows_flows_plus_spare():
    a = Coflow(
        "a",
        (
            Flow("a.0", "h11", "h12", 10),
            Flow("a.1", "h11", "h12", 10),
            Flow("a.2", "h12", "h11", 5),
        ),
    )
    b = Coflow("b", (Flow("b.0", "h11", "h12", 10), Flow("b.1", "h21", "h11", 10)), deps=("a",))
    slots = flow_slots(dag_of(a, b).coflows, PLAN)
    assert set(slots) == {"b.1"}  # the only flow between two leaves
    k = slots["b.1"]
    assert pair_counts(dag_of(a, b), slots) == {
        ("h11", "h12", None): 2,
        ("h12", "h11", None): 1,
        ("h21", "h11", k): 1,
    }
    orders = pool_orders(dag_of(a, b), ADDRESS, slots, ecmp.MIN_SLOTS)
    assert [(o.src, o.dst_ip, o.count, o.slot, o.slots) for o in orders] == [
        ("h11", "10.0.1.2", 2 + SPARE, None, None),
        ("h12", "10.0.1.1", 1 + SPARE, None, None),
        ("h21", "10.0.1.1", 1 + SPARE, k, ecmp.MIN_SLOTS),
    ]


def test_a_cross_leaf_pair_gets_a_pool_per_slot_of_its_flows():
    """Flows of one pair in different slots need connections of their own slot each:
    the pair's pool is split by the slot the simulator's hash gives each flow."""
    flows = tuple(Flow(f"a.{i}", "h11", "h21", 10) for i in range(40))
    slots = flow_slots([Coflow("a", flows)], PLAN)
    want = {f.flow_id: ecmp.flow_slot("h11", "h21", f.flow_id, ecmp.MIN_SLOTS) for f in flows}
    assert slots == want
    counts = pair_counts(dag_of(Coflow("a", flows)), slots)
    assert sum(counts.values()) == 40
    assert {k for (_s, _d, k) in counts} == set(want.values())
    orders = pool_orders(dag_of(Coflow("a", flows)), ADDRESS, slots, ecmp.MIN_SLOTS)
    assert [o.slot for o in orders] == sorted(set(want.values()))
    assert all(o.count == counts["h11", "h21", o.slot] + SPARE for o in orders)


def test_coflows_without_dependencies_may_overlap_so_their_flows_add_up():
    a = Coflow("a", (Flow("a.0", "h11", "h12", 10),))
    b = Coflow("b", (Flow("b.0", "h11", "h12", 10), Flow("b.1", "h12", "h11", 10)))
    c = Coflow("c", (Flow("c.0", "h11", "h12", 10),), deps=("a",))  # after a: not counted
    assert pair_counts(dag_of(a, b, c), {}) == {("h11", "h12", None): 2, ("h12", "h11", None): 1}
