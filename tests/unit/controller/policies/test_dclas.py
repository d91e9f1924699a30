"""Aalo D-CLAS: demotion at 10 MB, 100 MB, ... (MB = 2^20), FIFO within a queue."""

from __future__ import annotations

import pytest

import controller.policies as policies
from controller.compress import compress
from controller.policies import CoflowState, FabricView
from workload.dag import Coflow, Flow

MB = 1 << 20
FABRIC = FabricView.uniform(["h1", "h2"], 1e9)


def _state(cid: str, seq: int, sent: int, size: int = 10**12, left: int | None = None):
    """A one-flow coflow that has sent ``sent`` bytes; ``left`` overrides bytes remaining."""
    cf = Coflow(cid, (Flow(f"{cid}.f", "h1", "h2", size),))
    rem = {f"{cid}.f": left} if left is not None else {}
    return CoflowState(cf, 0.0, seq, bytes_sent=sent, remaining=rem)


def test_default_thresholds_are_10mb_times_powers_of_ten():
    pol = policies.get("dclas")
    assert pol.byte_thresholds == tuple(10 * MB * 10**i for i in range(7))


@pytest.mark.parametrize(
    "sent, queue",
    [
        (0, 0),
        (10 * MB - 1, 0),
        (10 * MB, 1),
        (100 * MB - 1, 1),
        (100 * MB, 2),
        (1000 * MB, 3),
        (10_000 * MB, 4),
        (10**6 * 10 * MB - 1, 6),
        (10**6 * 10 * MB, 7),
        (10**15, 7),
    ],
)
def test_demotion_points(sent, queue):
    pol = policies.get("dclas")
    assert pol.queue_of(sent) == queue
    assert pol.decide([_state("a", 0, sent)], FABRIC, 0.0)["a"].rank[0] == queue


def test_fewer_queues_cap_the_last_queue():
    pol = policies.get("dclas", queues=3)
    assert pol.byte_thresholds == (10 * MB, 100 * MB)
    assert pol.queue_of(10**12) == 2


def test_strict_across_queues_fifo_within_and_blind_to_sizes():
    # "young" arrived later but has sent less: it must go first; within queue 0 the earlier
    # arrival goes first even though its remaining bytes are far larger (non-clairvoyant).
    states = [
        _state("old_big", 0, 200 * MB, left=10**12),
        _state("early", 1, MB, left=10**11),
        _state("late_small", 2, 0, left=1),
        _state("old_mid", 3, 20 * MB),
    ]
    out = policies.get("dclas").decide(states, FABRIC, 0.0)
    assert sorted(out, key=lambda c: out[c].rank) == ["early", "late_small", "old_mid", "old_big"]


def test_each_occupied_queue_keeps_its_own_level_under_compression():
    states = [_state(f"q0_{i}", i, 0) for i in range(6)] + [
        _state("q1", 6, 50 * MB),
        _state("q3", 7, 5000 * MB),
    ]
    pol = policies.get("dclas")
    out = pol.decide(states, FABRIC, 0.0)
    levels = compress({c: d.rank for c, d in out.items()}, 3, pol.compression)
    assert {levels[f"q0_{i}"] for i in range(6)} == {0}
    assert (levels["q1"], levels["q3"]) == (1, 2)
