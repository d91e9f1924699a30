"""Rate allocation: max-min water-filling, caps, strict priority, work conservation,
fabric paths and the D-CLAS threshold events of the engine."""

from __future__ import annotations

import numpy as np
import pytest

from coflowbed.sim import BigSwitch, LeafSpine, parse_fabric_spec, simulate
from coflowbed.sim.alloc import allocate, waterfill
from coflowbed.sim.fabric import parse_rate
from controller.policies.base import Decision, Policy
from workload.dag import Coflow, Dag, Flow

INF = 2  # index of the padding link in the 2-link cases below


def test_waterfill_max_min_with_two_bottlenecks():
    # link0 cap 1 carries A and B; link1 cap 2 carries B and C.  link0 fills first at
    # 1/2 each; C then takes what B leaves on link1: 2 - 1/2 = 3/2.
    paths = np.array([[0, INF], [0, 1], [1, INF]])
    res = np.array([1.0, 2.0, np.inf])
    rates = waterfill(paths, res)
    assert rates.tolist() == pytest.approx([0.5, 0.5, 1.5])
    assert res[:2].tolist() == pytest.approx([0.0, 0.0])


def test_waterfill_caps_release_share_to_others():
    # One link of 10, caps 2 / none / none: the capped flow takes 2, the others 4 each.
    paths = np.array([[0, INF]] * 3)
    rates = waterfill(paths, np.array([10.0, 0.0, np.inf]), np.array([2.0, np.inf, np.inf]))
    assert rates.tolist() == pytest.approx([2.0, 4.0, 4.0])


def test_allocate_strict_priority_then_leftover_by_level():
    # One link of 10.  Level 0 capped at 3, level 1 capped at 1: capped pass gives 3 and 1;
    # the work-conserving pass hands the leftover 6 to level 0 first -> 9 and 1.
    paths = np.array([[0, INF], [0, INF]])
    cap = np.array([10.0, 10.0, np.inf])
    rates = allocate(paths, np.array([0, 1]), cap, np.array([3.0, 1.0]))
    assert rates.tolist() == pytest.approx([9.0, 1.0])
    hard = allocate(paths, np.array([0, 1]), cap, np.array([3.0, 1.0]), hard_caps=True)
    assert hard.tolist() == pytest.approx([3.0, 1.0])
    # Without caps level 0 takes the whole link.
    assert allocate(paths, np.array([0, 1]), cap).tolist() == pytest.approx([10.0, 0.0])


def test_allocate_lower_level_uses_links_the_upper_level_leaves_free():
    # Level 0 flow on link 0 only; level 1 flows on link 0 and on link 1: the one on
    # link 1 still gets the whole of link 1 (work conservation across levels).
    paths = np.array([[0, INF], [0, INF], [1, INF]])
    rates = allocate(paths, np.array([0, 1, 1]), np.array([5.0, 7.0, np.inf]))
    assert rates.tolist() == pytest.approx([5.0, 0.0, 7.0])


def test_leafspine_paths_use_host_and_core_links():
    fab = LeafSpine(
        ("a1", "a2", "b1", "b2"), hosts_per_leaf=2, spines=2, host_bps=1e9, fabric_bps=1e9
    )
    p = fab.paths(["a1", "a1"], ["b2", "a2"], ["f", "g"])
    # cross-leaf: a1 up (0), leaf1->spine, spine->leaf2, b2 down (4 + 3)
    assert p[0, 0] == 0 and p[0, 3] == 7
    assert 8 <= p[0, 1] < 12 and 12 <= p[0, 2] < 16
    assert (p[0, 1] - 8) % 2 == (p[0, 2] - 12) % 2  # same spine up and down
    assert p[1].tolist() == [0, fab.dummy, fab.dummy, 5]  # same leaf: host links only
    with pytest.raises(ValueError, match="'zz' is not on the fabric"):
        fab.paths(["zz"], ["a1"], ["f"])


def test_fabric_spec_and_rates():
    fab = parse_fabric_spec("bigswitch:150x1Gbps", binary=True)
    assert len(fab.hosts) == 150 and fab.port_bps == 2**30
    assert parse_rate("1Gbps") == 1e9 and parse_rate("100Mbps") == 1e8
    assert parse_rate("1Gibps") == 2**30
    ls = parse_fabric_spec("leafspine:4x8x2:100Gbps/200Gbps")
    assert (ls.leaves, ls.spines, ls.host_bps, ls.fabric_bps) == (4, 2, 100e9, 200e9)
    for bad in ("bigswitch:x1Gbps", "torus:4x4", "leafspine:4x8:1Gbps", "bigswitch:4x1Gbit"):
        with pytest.raises(ValueError, match="fabric|rate"):
            parse_fabric_spec(bad)


class Dclas2(Policy):
    """Test D-CLAS with two queues and a 1e6-byte threshold: (queue, arrival) ranks."""

    name = "dclas-test"
    byte_thresholds = (1_000_000,)

    def decide(self, states, fabric, now):
        """Queue by bytes sent, FIFO inside."""
        return {
            s.coflow_id: Decision(rank=(int(s.bytes_sent >= 1_000_000), s.arrival_seq))
            for s in states
        }


def test_threshold_crossing_demotes_without_arrival_or_completion():
    # 1e6 B/s link; X (5e6 B) and Z (1e6 B) both arrive at 0 in queue 0, FIFO: X first.
    # At t=1 X has sent 1e6 -> demoted to queue 1 by a threshold event (no arrival or
    # completion happens then), so Z runs alone on [1,2] and ends at 2.  X resumes with
    # 4e6 B left -> ends at 6.  Without the threshold event X would end at 5 and Z at 6.
    dag = Dag(
        [
            Coflow("X", (Flow("x", "h1", "h2", 5_000_000),)),
            Coflow("Z", (Flow("z", "h1", "h3", 1_000_000),)),
        ]
    )
    res = simulate(dag, BigSwitch(("h1", "h2", "h3"), 8e6), Dclas2())
    fin = {r.coflow_id: r.finish_s for r in res.coflow_records()}
    assert fin == {"X": pytest.approx(6.0), "Z": pytest.approx(2.0)}
    assert res.sim.stats.policy_calls == 3  # both arrive, X crosses, Z done
