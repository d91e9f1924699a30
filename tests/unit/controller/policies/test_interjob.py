"""The inter-job layer (controller.policies.interjob): per-job ranks inside level blocks
chosen by fair, priority or crux; the wire form of its spec."""

from __future__ import annotations

import pytest

from controller import policies
from controller.compress import compress
from controller.policies.base import CoflowState, FabricView
from controller.policies.interjob import (
    InterJobPolicy,
    InterJobSpec,
    JobClass,
    level_blocks,
)
from controller.policies.static import StaticPolicy
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow

VIEW = FabricView.uniform(["h1", "h2"], 1e9, 8)
JOBS = (JobClass("a", priority=1, intensity=1.0, leaves=(1,)), JobClass("b", 0, 2.0, (1,)))


def state(job: str, mid: int, ctype=CoflowType.EP, seq: int = 0) -> CoflowState:
    """An active coflow of ``job`` with Hermod factors (mid, ctype, lid 0)."""
    cid = f"{job}/m{mid}{ctype.value}"
    cf = Coflow(cid, (Flow(f"{cid}.f", "h1", "h2", 10),), CoflowIdentity(ctype, job, mid=mid))
    return CoflowState(cf, 0.0, seq)


STATES = [state(j, m, t) for j in "ab" for m in range(3) for t in (CoflowType.EP, CoflowType.DP)]


def levels(mode: str, states=STATES, jobs=JOBS) -> dict[str, int]:
    """Level (rank[0]) per coflow under ``mode`` with Hermod inside each job."""
    pol = InterJobPolicy(policies.get("hermod"), InterJobSpec(mode, jobs))
    return {cid: d.rank[0] for cid, d in pol.decide(states, VIEW, 0.0).items()}


def test_level_blocks_split_k_evenly_remainder_to_the_urgent():
    """8 levels over 2 classes: 4 + 4; over 3: 3 + 3 + 2."""
    assert level_blocks(2, 8) == [(0, 4), (4, 4)]
    assert level_blocks(3, 8) == [(0, 3), (3, 3), (6, 2)]


def test_fair_gives_each_job_its_own_compression_onto_all_levels():
    """Each job alone has 6 distinct Hermod ranks (3 MIDs x EP/DP) <= 8 levels: levels
    0..5 in rank order; the same coflow of the other job gets the same level."""
    got = levels("fair")
    hermod = policies.get("hermod")
    for job in "ab":
        mine = [s for s in STATES if s.coflow.identity.job == job]
        ranks = {cid: d.rank for cid, d in hermod.decide(mine, VIEW, 0.0).items()}
        assert {c: got[c] for c in ranks} == compress(ranks, 8, "quantile")
    assert got["a/m1EP"] == got["b/m1EP"] == 2


def test_priority_puts_every_coflow_of_the_urgent_job_first():
    """b has priority 0 (more urgent): levels 0..3, a gets 4..7."""
    got = levels("priority")
    assert max(v for c, v in got.items() if c.startswith("b/")) <= 3
    assert min(v for c, v in got.items() if c.startswith("a/")) >= 4


def test_crux_puts_the_higher_gpu_intensity_job_first():
    """b's intensity 2.0 > a's 1.0: b on levels 0..3; swapping the intensities swaps."""
    got = levels("crux")
    assert max(v for c, v in got.items() if c.startswith("b/")) <= 3
    swapped = (JobClass("a", 1, 3.0, (1,)), JobClass("b", 0, 2.0, (1,)))
    got = levels("crux", jobs=swapped)
    assert max(v for c, v in got.items() if c.startswith("a/")) <= 3


def test_inside_a_block_the_inner_order_is_kept():
    """Hermod's 6 distinct ranks of b, (MID, EP/DP) in order, quantile-compressed into
    b's 4 levels: floor(i*4/6) = 0, 0, 1, 2, 2, 3."""
    got = levels("priority")
    order = [f"b/m{m}{t}" for m in range(3) for t in ("EP", "DP")]
    assert [got[c] for c in order] == [0, 0, 1, 2, 2, 3]


def test_a_job_the_spec_does_not_name_goes_last():
    got = levels("priority", states=[*STATES, state("z", 0)])
    assert got["z/m0EP"] >= 4


def test_more_priority_values_than_levels_share_the_last_class():
    jobs = tuple(JobClass(n, p) for p, n in enumerate("abc"))
    spec = InterJobSpec("priority", jobs)
    assert spec.classes(2) == {"a": 0, "b": 1, "c": 1}


def test_the_wrapper_keeps_the_inner_policy_traits():
    inner = policies.get("sebf")
    pol = InterJobPolicy(inner, InterJobSpec("fair", JOBS))
    assert pol.name == "sebf+fair" and pol.clairvoyant and pol.hold_rates == inner.hold_rates
    assert InterJobPolicy(policies.get("hermod"), InterJobSpec("fair", JOBS)).ranks_by_identity


def test_the_wrapper_reads_bytes_sent_when_the_inner_policy_does():
    class Reads(type(policies.get("fifo"))):  # type: ignore[misc]
        reads_bytes_sent = True

    assert InterJobPolicy(Reads(), InterJobSpec("fair", JOBS)).reads_bytes_sent
    assert not InterJobPolicy(policies.get("fifo"), InterJobSpec("fair", JOBS)).reads_bytes_sent


def test_rates_of_the_inner_policy_pass_through():
    """SEBF (MADD) gives a lone coflow's single flow the full 1 Gbit/s."""
    pol = InterJobPolicy(policies.get("sebf"), InterJobSpec("fair", JOBS))
    s = state("a", 0)
    s.remaining = {f.flow_id: f.bytes for f in s.coflow.flows}
    got = pol.decide([s], VIEW, 0.0)["a/m0EP"]
    assert got.flow_rates_bps == {"a/m0EP.f": pytest.approx(1e9)}


def test_a_policy_that_gives_levels_itself_is_refused():
    with pytest.raises(ValueError, match="gives levels itself"):
        InterJobPolicy(StaticPolicy({}, 0), InterJobSpec("fair", JOBS))


@pytest.mark.parametrize(
    "wire, where",
    [
        ({"mode": "fair"}, "inter_job: must be an object"),
        ({"mode": "lottery", "jobs": []}, r"inter_job\.mode"),
        ({"mode": "fair", "jobs": [{"name": "a"}]}, r"inter_job\.jobs\[0\]"),
    ],
)
def test_bad_wire_forms_are_refused_by_key(wire, where):
    with pytest.raises(ValueError, match=where):
        InterJobSpec.from_wire(wire)
