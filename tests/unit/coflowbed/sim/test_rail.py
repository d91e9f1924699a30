"""The rail-optimised fabric (``coflowbed.sim.fabric.Rail``): paths, closed-form CCTs
of one-NIC-per-GPU patterns, and the ``rail:`` spec string."""

from __future__ import annotations

import pytest

from coflowbed.sim import Rail, parse_fabric_spec, simulate
from tests.unit.coflowbed.sim.test_closed_form import OneLevel, cf, finish
from workload.dag import Dag

approx = lambda x: pytest.approx(x, rel=1e-9, abs=1e-12)  # noqa: E731
B = 1_250_000  # bytes: 1e7 bit


def rail(servers=2, nics=2, spines=1, nic_bps=100e6, core_bps=10e6) -> Rail:
    """Servers h1.., NIC endpoints h<s>n<i>."""
    return Rail.of([f"h{i}" for i in range(1, servers + 1)], nics, spines, nic_bps, core_bps)


def test_endpoints_are_listed_rail_by_rail():
    """NIC 0 of every server (leaf 0), then NIC 1 (leaf 1)."""
    assert rail().hosts == ("h1n0", "h2n0", "h1n1", "h2n1")


def test_same_rail_crosses_only_its_leaf_other_rail_a_spine():
    """NIC 100 Mbit/s, core 10 Mbit/s, B = 1e7 bit.  h1n0 -> h2n0 (rail 0): NIC links only,
    1e7 / 1e8 = 0.1 s.  h2n1 -> h1n0 (rail 1 -> rail 0, no link shared with the first)
    crosses the 10 Mbit/s core: 1e7 / 1e7 = 1 s."""
    dag = Dag([cf("same", [("h1n0", "h2n0", B)]), cf("cross", [("h2n1", "h1n0", B)])])
    assert finish(simulate(dag, rail(), OneLevel())) == {"same": approx(0.1), "cross": approx(1.0)}


def test_one_nic_per_gpu_all_to_all_between_two_servers():
    """2 GPUs per server, one NIC each.  GPU g of h1 sends B to GPU g of h2 (same rail):
    the two flows use different NICs and leaves, each at the full 1e8 bit/s: both end
    at 1e7 / 1e8 = 0.1 s (on one shared NIC they would end at 2 x 0.1 = 0.2 s)."""
    dag = Dag([cf("a2a", [("h1n0", "h2n0", B), ("h1n1", "h2n1", B)])])
    res = simulate(dag, rail(core_bps=1e6), OneLevel())
    assert [f.finish_s for f in res.flow_records()] == [approx(0.1)] * 2


def test_cross_rail_flows_share_the_leaf_spine_link():
    """One spine, core 10 Mbit/s.  h1n0 -> h2n1 and h2n0 -> h1n1 both go leaf0 -> spine ->
    leaf1 and share leaf0's uplink: 5 Mbit/s each, 1e7 / 5e6 = 2 s."""
    dag = Dag([cf("x", [("h1n0", "h2n1", B), ("h2n0", "h1n1", B)])])
    assert finish(simulate(dag, rail(), OneLevel())) == {"x": approx(2.0)}


def test_parse_rail_spec():
    """4 servers x 2 NICs x 2 spines, 100G NICs, 200G core (the thesis testbed)."""
    fab = parse_fabric_spec("rail:4x2x2:100Gbps/200Gbps")
    assert isinstance(fab, Rail) and fab.servers == ("h1", "h2", "h3", "h4")
    assert (fab.nics, fab.spines, fab.leaves) == (2, 2, 2)
    assert (fab.host_bps, fab.fabric_bps) == (100e9, 200e9)
    assert parse_fabric_spec("rail:2x4x1:10Gbps").fabric_bps == 10e9  # core = NIC rate


@pytest.mark.parametrize(
    "spec", ["rail:4x2:1Gbps", "rail:0x2x2:1Gbps", "rail:4x2x2", "rail:4xax2:1Gbps"]
)
def test_bad_rail_specs_are_rejected(spec):
    """Wrong dimension count, a zero, no rate, a non-number: each names the form."""
    with pytest.raises(ValueError, match=r"expected rail:<servers>x<nics>x<spines>"):
        parse_fabric_spec(spec)


def test_bad_rail_rate_is_rejected():
    """A rate that is not <number><prefix>bps."""
    with pytest.raises(ValueError, match="must look like"):
        parse_fabric_spec("rail:4x2x2:fast")


def test_rail_hosts_must_be_the_nic_endpoints():
    """Hosts that are not the servers' endpoints rail by rail are refused."""
    with pytest.raises(ValueError, match="NIC endpoints"):
        Rail(("a", "b"), 1, 1, 1e6, 1e6, ("h1",), 2)


def test_generated_pp_on_rails_takes_its_nic_share_closed_form():
    """tiny-moe made dense PP2 x DP4 with one microbatch (its forward and backward PP
    never overlap), 4 GPUs per server, 2 NICs of 8 Mbit/s: each PP coflow is two flows
    of 2 messages x 2bsh x byte_scale = 2 x 262144 x 0.25 = 131072 bytes on separate
    rails, so it takes 131072 x 8 / 8e6 = 0.131072 s (on one shared NIC: twice that)."""
    from workload import generate
    from workload.presets import load_preset

    over = {"model.moe": None, "parallelism.ep": 1, "placement.gpus_per_host": 4}
    over["microbatches"] = 1
    dag = generate(load_preset("tiny-moe", over), ["h1", "h2"], nics=2)
    res = simulate(dag, rail(nic_bps=8e6, core_bps=8e6), OneLevel())
    pp = [r for r in res.coflow_records() if ".pp." in r.coflow_id]
    assert len(pp) == 2 and {round(r.finish_s - r.start_s, 9) for r in pp} == {0.131072}
