"""Hermod: MID > CType > LID strict order, its three overlap cases and the interleaved variant."""

from __future__ import annotations

import controller.policies as policies
from controller.compress import compress
from controller.policies import CoflowState, FabricView
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow

EP, PP, DP = CoflowType.EP, CoflowType.PP, CoflowType.DP
FABRIC = FabricView.uniform(["h1", "h2", "h3"], 1e9)


def _state(
    cid: str, ctype: CoflowType, mid: int, lid: int, seq: int, iteration: int = 0, phase: str = ""
) -> CoflowState:
    """A one-flow coflow with Hermod's tags; ``seq`` is its arrival order."""
    ident = CoflowIdentity(ctype=ctype, mid=mid, lid=lid, iteration=iteration, phase=phase)
    return CoflowState(Coflow(cid, (Flow(f"{cid}.f", "h1", "h2", 10_000),), ident), 0.0, seq)


def _order(states, **params) -> list[str]:
    """Coflow ids from most to least urgent under hermod."""
    out = policies.get("hermod", **params).decide(states, FABRIC, 0.0)
    return sorted(out, key=lambda cid: out[cid].rank)


def test_case1_ep_vs_pp_across_microbatches_older_microbatch_wins():
    # The newer microbatch arrived first and has the smaller layer id: MID must still win.
    assert _order([_state("ep_mb2", EP, 2, 1, 0), _state("pp_mb1", PP, 1, 7, 1)]) == [
        "pp_mb1",
        "ep_mb2",
    ]
    assert _order([_state("pp_mb2", PP, 2, 1, 0), _state("ep_mb1", EP, 1, 7, 1)]) == [
        "ep_mb1",
        "pp_mb2",
    ]


def test_case2_backward_ep_pp_beat_dp_even_with_larger_layer_id():
    states = [
        _state("dp_l2", DP, 3, 2, 0, phase="bwd"),
        _state("ep_l9", EP, 3, 9, 1, phase="bwd"),
        _state("pp_l8", PP, 3, 8, 2, phase="bwd"),
    ]
    order = _order(states)
    assert order[-1] == "dp_l2"
    assert set(order[:2]) == {"ep_l9", "pp_l8"}


def test_case3_next_forward_early_layers_beat_dp_all_gather_of_later_layers():
    # DP all-gather of iteration 0 tagged with its last microbatch, or with the next
    # iteration's microbatch 0: either way the next forward's EP/PP of earlier layers win.
    for dp_mid in (3, 0):
        states = [
            _state("dp_ag_l30", DP, dp_mid, 30, 0, iteration=0),
            _state("ep_l1", EP, 0, 1, 1, iteration=1, phase="fwd"),
            _state("pp_l2", PP, 0, 2, 2, iteration=1, phase="fwd"),
        ]
        assert _order(states) == ["ep_l1", "pp_l2", "dp_ag_l30"]


def test_same_mid_and_type_smaller_layer_first_then_arrival():
    states = [_state("l5", DP, 0, 5, 0), _state("l2", DP, 0, 2, 1), _state("l2b", DP, 0, 2, 2)]
    assert _order(states) == ["l2", "l2b", "l5"]


def test_plain_ep_and_pp_tie_on_ctype_so_lid_decides_interleaved_puts_ep_first():
    states = [
        _state("ep_l5", EP, 1, 5, 0),
        _state("pp_l3", PP, 1, 3, 1),
        _state("dp_l0", DP, 1, 0, 2),
    ]
    assert _order(states) == ["pp_l3", "ep_l5", "dp_l0"]
    assert _order(states, interleaved=True) == ["ep_l5", "pp_l3", "dp_l0"]


def test_conflict_rules_give_the_papers_total_order():
    states = [
        _state("dp_m1_l0", DP, 1, 0, 0),
        _state("ep_m1_l4", EP, 1, 4, 1),
        _state("pp_m0_l9", PP, 0, 9, 2),
        _state("dp_m0_l1", DP, 0, 1, 3),
        _state("ep_m0_l9", EP, 0, 9, 4),
        _state("other_m0", CoflowType.OTHER, 0, 0, 5),
        _state("pp_m1_l2", PP, 1, 2, 6),
    ]
    assert _order(states) == [
        "pp_m0_l9",
        "ep_m0_l9",
        "dp_m0_l1",
        "other_m0",
        "pp_m1_l2",
        "ep_m1_l4",
        "dp_m1_l0",
    ]


def test_thesis_worked_example_ep_then_pp_then_dp():
    """Thesis Fig. 5.6: EP (highest) and DP (lowest) at t=0, PP arrives at t=2."""
    ep = _state("EP", EP, 0, 2, 0, phase="bwd")
    dp = _state("DP", DP, 1, 0, 1, phase="bwd")
    pp = _state("PP", PP, 1, 3, 2, phase="bwd")
    pol = policies.get("hermod")
    at0 = pol.decide([ep, dp], FABRIC, 0.0)
    assert at0["EP"].rank < at0["DP"].rank
    at2 = pol.decide([ep, dp, pp], FABRIC, 2.0)
    assert at2["EP"].rank < at2["PP"].rank < at2["DP"].rank  # a later arrival still overtakes DP
    assert all(d.flow_rates_bps is None for d in at2.values())  # line rate within the level
    levels = compress({c: d.rank for c, d in at2.items()}, 2, pol.compression)
    assert levels == {"EP": 0, "PP": 1, "DP": 1}  # K=2: MID bucket 0 alone on top


def test_coflows_with_the_same_tag_share_a_level():
    # The four PP sends of one pipeline step carry one (MID, CType, LID) tag: they must be
    # served together, not split across levels by arrival order.
    states = [_state(f"pp{i}", PP, 1, 4, i) for i in range(4)] + [_state("dp", DP, 1, 4, 4)]
    pol = policies.get("hermod")
    ranks = {cid: d.rank for cid, d in pol.decide(states, FABRIC, 0.0).items()}
    levels = compress(ranks, 8, how=pol.compression)
    assert {levels[f"pp{i}"] for i in range(4)} == {0} and levels["dp"] == 1
