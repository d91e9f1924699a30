"""Ring vs NCCL tree all-reduce in the fluid simulator on a big switch: completion
times match the closed forms (every host port at R = 8e6 bit/s = 1e6 B/s)."""

from __future__ import annotations

import pytest

from coflowbed.sim import BigSwitch, StaticPolicy, simulate
from workload import hostcoll
from workload.dag import CoflowIdentity, CoflowType, Dag

R_BPS = 8e6
S = 1_000_000  # per-rank buffer, bytes


def all_reduce_finish(algorithm: str, n: int) -> float:
    """Finish time of an all-reduce of S over n hosts (one rank each), by ``algorithm``."""
    hosts = [f"h{i}" for i in range(n)]
    phases = hostcoll.all_reduce_phases(algorithm, list(range(n)), S, 100.0)
    ident = CoflowIdentity(CoflowType.DP, collective="all_reduce")
    dag = Dag(hostcoll.chain_coflows("ar", phases, hosts, ident, (), 1.0))
    res = simulate(dag, BigSwitch(hosts, R_BPS), StaticPolicy({}, 0))
    return max(r.finish_s for r in res.coflow_records())


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_cct_is_2_n1_over_n_s_over_r(n):
    # Collapsed ring: each host sends 2(n-1)/n·S to its neighbour alone on its port:
    # 2(n-1)/n s at 1e6 B/s (n=2: 1 s, n=4: 1.5 s, n=8: 1.75 s).
    assert all_reduce_finish("ring", n) == pytest.approx(2 * (n - 1) / n * S / 1e6)


@pytest.mark.parametrize("n", [3, 4, 8, 13])
def test_tree_cct_is_2s_over_r(n):
    # Tree, up phase: every non-root host sends S/2 to its parent in each tree (2 flows
    # on its uplink) and an inner host receives S/2 from each of two children (2 flows
    # on its downlink), so every port carries at most 2 flows of S/2 at R/2 each and the
    # phase ends at S/R = 1 s; the down phase is the same reversed: 2S/R = 2 s in all.
    assert all_reduce_finish("tree", n) == pytest.approx(2 * S / 1e6)


def test_two_hosts_tree_equals_ring():
    # n = 2: each tree is one edge (1->0 and 0->1), each phase sends S/2 each way:
    # 0.5 s + 0.5 s = 1 s, the ring's 2(1)/2·S/R.
    assert all_reduce_finish("tree", 2) == pytest.approx(all_reduce_finish("ring", 2)) == 1.0
