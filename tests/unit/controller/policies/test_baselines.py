"""fair, fifo, dp/pp/ep-first, lina and bytescheduler order coflows as documented."""

from __future__ import annotations

import pytest

import controller.policies as policies
from controller.compress import compress
from controller.policies import CoflowState, FabricView
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow

EP, PP, DP, OTHER = CoflowType.EP, CoflowType.PP, CoflowType.DP, CoflowType.OTHER
FABRIC = FabricView.uniform(["h1", "h2"], 1e9)


def _state(
    cid: str, ctype: CoflowType, seq: int, lid: int = 0, phase: str = "", size: int = 1000
) -> CoflowState:
    """A one-flow coflow of a type; ``seq`` is its arrival order."""
    ident = CoflowIdentity(ctype=ctype, lid=lid, phase=phase)
    return CoflowState(Coflow(cid, (Flow(f"{cid}.f", "h1", "h2", size),), ident), 0.0, seq)


def _decide(name: str, states, **params):
    """Decisions of policy ``name``."""
    return policies.get(name, **params).decide(states, FABRIC, 0.0)


def _order(name: str, states, **params) -> list[str]:
    """Coflow ids from most to least urgent (stable for equal ranks)."""
    out = _decide(name, states, **params)
    return sorted(out, key=lambda cid: out[cid].rank)


MIXED = [
    _state("dp0", DP, 0),
    _state("pp1", PP, 1),
    _state("ep2", EP, 2),
    _state("dp3", DP, 3),
    _state("ep4", EP, 4),
    _state("x5", OTHER, 5),
    _state("pp6", PP, 6),
]


def test_fair_puts_everyone_on_one_level():
    out = _decide("fair", MIXED)
    assert len({d.rank for d in out.values()}) == 1
    assert set(compress({c: d.rank for c, d in out.items()}, 8).values()) == {0}


def test_fifo_orders_by_arrival_not_by_size():
    states = [_state("big_first", OTHER, 0, size=10**9), _state("small_late", OTHER, 1, size=1)]
    assert _order("fifo", states) == ["big_first", "small_late"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("dp-first", ["dp0", "dp3", "ep2", "ep4", "pp1", "pp6", "x5"]),
        ("pp-first", ["pp1", "pp6", "ep2", "ep4", "dp0", "dp3", "x5"]),
        ("ep-first", ["ep2", "ep4", "pp1", "pp6", "dp0", "dp3", "x5"]),
    ],
)
def test_type_first_is_strict_type_order_fifo_within(name, expected):
    assert _order(name, MIXED) == expected


def test_lina_lifts_backward_ep_above_dp_and_nothing_else():
    states = [
        _state("dp", DP, 0, phase="bwd"),
        _state("ep_bwd", EP, 1, phase="bwd"),
        _state("ep_fwd", EP, 2, phase="fwd"),
        _state("pp", PP, 3, phase="bwd"),
    ]
    out = _decide("lina", states)
    assert out["ep_bwd"].rank < out["dp"].rank
    assert out["ep_fwd"].rank == out["dp"].rank == out["pp"].rank  # untouched: fair level
    out = _decide("lina", states, backward_only=False)
    assert out["ep_fwd"].rank == out["ep_bwd"].rank < out["dp"].rank


def test_bytescheduler_orders_dp_by_layer_front_first_below_other_traffic():
    states = [
        _state("dp_l7", DP, 0, lid=7),
        _state("dp_l1", DP, 1, lid=1),
        _state("dp_l3", DP, 2, lid=3),
        _state("ep", EP, 3, lid=9),
        _state("pp", PP, 4),
    ]
    order = _order("bytescheduler", states)
    assert order[2:] == ["dp_l1", "dp_l3", "dp_l7"]
    assert set(order[:2]) == {"ep", "pp"}
    out = _decide("bytescheduler", states)
    assert out["ep"].rank == out["pp"].rank
