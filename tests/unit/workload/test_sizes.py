"""Message sizes, parameter shards and ring formulas against WORKLOADS.md."""

from __future__ import annotations

import pytest

from workload import sizes
from workload.presets import load_preset

MiB, GiB = 2**20, 2**30


def test_gpt3_175b_pp_message_is_48_mib():
    assert sizes.pp_message_bytes(1, 2048, 12288) == 48 * MiB


def test_pp_message_with_tp8_sequence_parallel_is_6_mib():
    assert sizes.pp_message_bytes(1, 2048, 12288, tp=8, sequence_parallel=True) == 6 * MiB
    assert sizes.pp_message_bytes(1, 2048, 12288, tp=8, sequence_parallel=False) == 48 * MiB


@pytest.mark.parametrize("s,h,mib", [(2048, 5120, 20), (8192, 8192, 128), (4096, 4096, 32)])
def test_reference_pp_messages(s, h, mib):
    assert sizes.pp_message_bytes(1, s, h) == mib * MiB


def test_mixtral_ep_all_to_all_is_64_mib_per_direction():
    assert sizes.ep_a2a_bytes(1, 4096, 4096, top_k=2) == 64 * MiB


def test_gpt3_175b_zero2_shard_matches_reference():
    job = load_preset("gpt3-175b", {"model.vocab": None})
    p = sizes.rank_shard_params(job, 3)  # a middle stage: 12 layers / TP8
    assert p == 12 * 12 * 12288**2 / 8
    rs, ag = sizes.zero2_bytes(p)
    assert rs == 4 * p and ag == 2 * p
    assert rs / GiB == pytest.approx(10.2, abs=0.15)
    assert ag / GiB == pytest.approx(5.1, abs=0.1)


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_ring_wire_bytes(n):
    s = 1200.0 * n
    assert sizes.ring_wire_bytes("all_reduce", n, s) == pytest.approx(2 * (n - 1) / n * s)
    for c in ("reduce_scatter", "all_gather", "all_to_all"):
        assert sizes.ring_wire_bytes(c, n, s) == pytest.approx((n - 1) / n * s)
    assert sizes.ring_steps("all_reduce", n) == 2 * (n - 1)
    assert sizes.ring_steps("reduce_scatter", n) == n - 1


def test_unknown_ring_collective_rejected():
    with pytest.raises(ValueError, match="broadcast"):
        sizes.ring_steps("broadcast", 4)


def test_compute_time_from_flops_and_explicit():
    job = load_preset("gpt3-13b", {"model.vocab": None})
    b, s, h = 4, 2048, 5120
    flops = 2 * b * s * 4 * h * h + 4 * b * s * s * h + 2 * b * s * 2 * h * 4 * h
    t = sizes.layer_times(job, 0)
    assert t.total_s == pytest.approx(flops / (312e12 * 0.4 * 4))
    explicit = load_preset("gpt3-13b", {"compute": {"gpu_tflops": None, "fwd_layer_s": 0.05}})
    assert sizes.layer_times(explicit, 7).total_s == pytest.approx(0.05)
