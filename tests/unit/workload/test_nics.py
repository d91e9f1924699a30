"""NIC endpoints of multi-NIC servers: GPU -> NIC, slots, intra-server traffic dropped,
and the generated traffic on a rail fabric (TP never on the network)."""

from __future__ import annotations

import numpy as np
import pytest

from workload import generate, sizes
from workload.dag import CoflowType
from workload.nics import NicMap, endpoint_name, slot_name, slot_of
from workload.presets import load_preset
from workload.schema import SpecError


def test_names():
    """Endpoint and slot names, and slot names parsed back."""
    assert endpoint_name("h1", 1, 2) == "h1n1" and endpoint_name("h1", 0, 1) == "h1"
    assert slot_name("h3", 2, 4) == "h3s2" and slot_of("h3s2", 4) == ("h3", 2)
    assert slot_of("h3", 1) == ("h3", 0)
    with pytest.raises(ValueError, match="not a slot"):
        slot_of("h3s4", 4)


def test_gpu_g_sends_on_nic_g_mod_nics():
    """One slot per server, 4 DP ranks of TP 2 = 8 GPUs, 2 NICs: rank r, TP rank t is
    GPU 2(r mod 4) + t, so its NIC is t (2(r mod 4) is even); server r // 4."""
    m = NicMap.of(["h1", "h2"], nics=2, tp=2, k=4, slots=1)
    assert [m.endpoint(r, t) for r in (0, 3, 4) for t in (0, 1)] == [0, 1, 0, 1, 2, 3]


def test_slot_q_holds_gpus_q_plus_multiples_of_slots():
    """Slots of 2 GPUs, 4 per server, 2 NICs: slot q holds GPUs q and q + 4, both on NIC
    q mod 2, so a slot is on one rail."""
    m = NicMap.of(["h1s0", "h1s1", "h2s2", "h2s3"], nics=2, tp=1, k=2, slots=4)
    assert [m.gpu_nic(j, u) for j in range(4) for u in range(2)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert m.same_server(0, 3) and not m.same_server(3, 4)


def test_matrix_drops_traffic_inside_a_server():
    """Two servers of 2 GPUs (k 2, TP 1, 2 NICs): GPU-level all-ones matrix.  Rank 0 ->
    rank 2 is h1n0 -> h2n0 (endpoint 0 -> 2): 1; rank 0 -> rank 1 stays in h1: dropped."""
    m = NicMap.of(["h1", "h2"], nics=2, tp=1, k=2, slots=1)
    out = m.matrix(np.ones((4, 4)))
    assert out[0, 2] == 1 and out[0, 3] == 1 and out[0, 1] == 0 and out.sum() == 8


def test_ring_edges_skip_hops_inside_a_server():
    """Ring 0-1-2-3 over 2 servers of 2 GPUs: hops 1->2 (h1n1 -> h2n0, endpoints 1 -> 2)
    and 3->0 (h2n1 -> h1n0, 3 -> 0) leave a server; 0->1 and 2->3 are NVLink."""
    m = NicMap.of(["h1", "h2"], nics=2, tp=1, k=2, slots=1)
    assert m.ring_edges([[0, 1, 2, 3]]) == {(1, 2): 1, (3, 0): 1}


def pp_job(**extra):
    """tiny-moe made dense PP2 x DP4 with TP 1, 4 GPUs per server."""
    over = {"model.moe": None, "parallelism.ep": 1, "placement.gpus_per_host": 4, **extra}
    return load_preset("tiny-moe", over)


def test_pp_on_rails_each_nic_carries_its_gpus():
    """Stage 0 on h1, stage 1 on h2, 2 NICs: GPUs 0, 2 -> NIC 0 and 1, 3 -> NIC 1, GPU g
    to GPU g: per microbatch h1n0 -> h2n0 and h1n1 -> h2n1 carry 2 messages of 2bsh each
    (b 1, s 256, h 512: 2 x 262144 x byte_scale 0.25 = 131072 bytes)."""
    job = pp_job()
    dag = generate(job, ["h1", "h2"], nics=2)
    fwd = [c for c in dag.coflows if c.ctype is CoflowType.PP and ".F" in c.coflow_id]
    msg = sizes.pp_message_bytes(1, 256, 512)
    assert {(f.src, f.dst, f.bytes) for f in fwd[0].flows} == {
        ("h1n0", "h2n0", 2 * msg * 0.25),
        ("h1n1", "h2n1", 2 * msg * 0.25),
    }


def test_tp_and_traffic_inside_a_server_never_on_the_network():
    """TP 4, PP 1, DP 2 on one server of 8 GPUs with 2 NICs: TP and the DP ring stay on
    NVLink, so the DAG has no flows at all; on two servers (4 GPUs each) the DP ring
    crosses: 4 TP ranks x 2 hops, and every flow joins NICs of different servers."""
    over = {"parallelism.tp": 4, "parallelism.pp": 1, "parallelism.dp": 2}
    one = generate(pp_job(**over, **{"placement.gpus_per_host": 8}), ["h1"], nics=2)
    assert one.coflows == [] and one.computes
    two = generate(pp_job(**over), ["h1", "h2"], nics=2)
    flows = [f for c in two.coflows for f in c.flows]
    assert flows and all(f.src[:2] != f.dst[:2] for f in flows)
    first = [f for c in two.coflows if c.coflow_id.endswith("rs.dense.k0") for f in c.flows]
    assert {(f.src, f.dst) for f in first} == {
        ("h1n0", "h2n0"),
        ("h1n1", "h2n1"),
        ("h2n0", "h1n0"),
        ("h2n1", "h1n1"),
    }


def test_pp_between_slots_of_one_server_is_a_zero_time_compute():
    """Stage 0 and 1 on slots 0 and 1 of h1 (2 slots of 4 GPUs): PP is NVLink."""
    job = pp_job(iterations=2)
    dag = generate(job, ["h1s0", "h1s1"], nics=2, slots=2)
    assert not [c for c in dag.coflows if c.ctype is CoflowType.PP]
    local = [c for c in dag.computes if c.label == "nvlink"]
    assert local and all(c.duration_s == 0 for c in local)
    # each stands in its own iteration, in the job (not in iteration 0 of the default job)
    assert {(c.job, c.iteration) for c in local} == {(job.name, 0), (job.name, 1)}


def test_more_nics_than_gpus_is_rejected():
    """4 GPUs per server cannot feed 8 NICs."""
    with pytest.raises(SpecError, match="cannot feed 8 NICs"):
        generate(pp_job(), ["h1", "h2"], nics=8)


def test_ep_split_over_nics_keeps_the_bytes_between_servers():
    """tiny-moe (EP4) with 2 GPUs per server: the EP bytes that leave a server are the
    same whether a server has one NIC or two (only split differently), up to one byte
    of rounding per flow; with two NICs rank r's traffic leaves on NIC r mod 2."""
    job = load_preset("tiny-moe", {"placement.gpus_per_host": 2})
    hosts = ["h1", "h2", "h3", "h4"]
    total = {}
    for nics in (1, 2):
        dag = generate(job, hosts, nics=nics)
        ep = [f for c in dag.coflows if c.ctype is CoflowType.EP for f in c.flows]
        total[nics] = (sum(f.bytes for f in ep), len(ep))
    assert abs(total[1][0] - total[2][0]) <= total[2][1]
    assert total[2][1] == 4 * total[1][1]  # each host pair: 2 x 2 NIC pairs
