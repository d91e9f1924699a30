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


# --- the thesis's MID* exception (Table 5.4) --------------------------------------------


def test_mid_star_case1_without_dp_mid_still_beats_lid():
    # MID+LID conflict between EP and PP in forward: no DP involved, so MID decides.
    states = [_state("ep_mb2_l1", EP, 2, 1, 0), _state("pp_mb1_l7", PP, 1, 7, 1)]
    assert _order(states, mid_star=True) == ["pp_mb1_l7", "ep_mb2_l1"]


def test_mid_star_case2_backward_ep_pp_ahead_of_dp():
    # Backward: DP of layer 6 (last microbatch 7) with EP/PP of earlier layers, of the
    # same and of earlier microbatches: EP = PP ahead of DP under both rules.
    states = [
        _state("dp_l6", DP, 7, 6, 0, phase="bwd"),
        _state("ep_m7_l3", EP, 7, 3, 1, phase="bwd"),
        _state("pp_m5_l4", PP, 5, 4, 2, phase="bwd"),
    ]
    assert _order(states) == _order(states, mid_star=True) == ["pp_m5_l4", "ep_m7_l3", "dp_l6"]


def test_mid_star_ctype_lid_conflict_keeps_ctype_within_one_microbatch():
    # One MID, DP of a smaller layer than the EP (the thesis: impossible in training):
    # MID* only rules pairs of different MIDs, so CType still puts EP first.
    states = [_state("dp_l2", DP, 3, 2, 0, phase="bwd"), _state("ep_l9", EP, 3, 9, 1)]
    assert _order(states, mid_star=True) == ["ep_l9", "dp_l2"]


def test_mid_star_case3_next_forward_early_layers_ahead_of_dp_of_later_layers():
    states = [
        _state("dp_ag_l30", DP, 7, 30, 0, iteration=0),
        _state("ep_l1", EP, 0, 1, 1, iteration=1, phase="fwd"),
        _state("pp_l2", PP, 1, 2, 2, iteration=1, phase="fwd"),
    ]
    assert _order(states, mid_star=True) == ["ep_l1", "pp_l2", "dp_ag_l30"]


def test_mid_star_mid_lid_conflict_with_dp_lid_wins():
    # DP all-gather of layer 1 (highest MID 7) against the next iteration's EP of
    # microbatch 2 at layer 2: MID > CType > LID serves the EP first, MID* the DP
    # (its layer is consumed first); the thesis's own example (EP of layer 1 from
    # microbatch 2 against DP of layer 2) comes out EP first under both.
    dp_l1, ep_m2_l2 = _state("dp_l1", DP, 7, 1, 0), _state("ep_m2_l2", EP, 2, 2, 1, iteration=1)
    assert _order([dp_l1, ep_m2_l2]) == ["ep_m2_l2", "dp_l1"]
    assert _order([dp_l1, ep_m2_l2], mid_star=True) == ["dp_l1", "ep_m2_l2"]
    dp_l2, ep_m2_l1 = _state("dp_l2", DP, 7, 2, 0), _state("ep_m2_l1", EP, 2, 1, 1, iteration=1)
    assert _order([dp_l2, ep_m2_l1], mid_star=True) == ["ep_m2_l1", "dp_l2"]


def test_mid_star_mid_ctype_conflict_on_one_layer_falls_back_to_mid():
    # DP of an earlier microbatch against EP of a later one on the same layer (the
    # thesis: impossible): LID ties, then MID decides, as without MID*.
    states = [_state("ep_m3", EP, 3, 5, 0), _state("dp_m0", DP, 0, 5, 1)]
    assert _order(states) == _order(states, mid_star=True) == ["dp_m0", "ep_m3"]


def test_mid_star_places_dp_between_the_coflows_it_sits_between_by_layer():
    # EP/PP of microbatches 0..2 at layers 1, 2, 4; DP of layer 3 and of layer 9: each
    # DP goes after the coflows of smaller layers and before those of larger ones.
    states = [
        _state("ep_m0_l1", EP, 0, 1, 0),
        _state("pp_m1_l2", PP, 1, 2, 1),
        _state("dp_l3", DP, 7, 3, 2),
        _state("ep_m2_l4", EP, 2, 4, 3),
        _state("dp_l9", DP, 7, 9, 4),
    ]
    assert _order(states) == ["ep_m0_l1", "pp_m1_l2", "ep_m2_l4", "dp_l3", "dp_l9"]
    assert _order(states, mid_star=True) == ["ep_m0_l1", "pp_m1_l2", "dp_l3", "ep_m2_l4", "dp_l9"]


def test_mid_star_cycle_keeps_the_order_of_the_non_dp_coflows():
    # a < b by MID, b < d and d < a by LID (a set training cannot produce): the merge
    # keeps a before b and puts d before the first coflow it goes before.
    states = [
        _state("a_m0_l8", EP, 0, 8, 0),
        _state("b_m1_l2", EP, 1, 2, 1),
        _state("d", DP, 7, 3, 2),
    ]
    assert _order(states, mid_star=True) == ["d", "a_m0_l8", "b_m1_l2"]


def test_mid_star_keeps_every_rank_where_it_changes_no_order():
    states = [
        _state("ep_m0_l1", EP, 0, 1, 0),
        _state("pp_m1_l2", PP, 1, 2, 1),
        _state("dp_l5", DP, 7, 5, 2),
        _state("dp_l6", DP, 7, 6, 3),
    ]
    plain = policies.get("hermod").decide(states, FABRIC, 0.0)
    star = policies.get("hermod", mid_star=True).decide(states, FABRIC, 0.0)
    assert {c: d.rank for c, d in star.items()} == {c: (*d.rank, 0.0) for c, d in plain.items()}


def test_mid_star_is_decided_among_active_coflows_not_per_identity():
    assert policies.get("hermod").ranks_by_identity
    assert not policies.get("hermod", mid_star=True).ranks_by_identity


# --- the thesis's 6-bit DSCP packing -------------------------------------------------------


def test_dscp_packs_mid_type_lid_into_the_published_six_bits():
    from controller.policies.hermod import dscp_code, dscp_fields

    def code(ctype, mid, lid, layers=24):
        return dscp_code(dscp_fields(CoflowIdentity(ctype=ctype, mid=mid, lid=lid), layers))

    assert code(PP, 0, 0) == 0b000_0_00
    assert code(EP, 2, 13) == 0b010_0_10  # layer 13 of 24: class 2 of 4
    assert code(DP, 7, 5) == 0b111_1_00
    assert code(DP, 7, 23) == 0b111_1_11
    assert code(EP, 12, 6) == 0b111_0_01  # MIDs beyond 7 share class 7
    assert code(CoflowType.TP, 1, 0) == 0b001_1_00  # every non-EP/PP type has type bit 1
    assert code(EP, 0, 7, layers=32) == 0b000_0_00 and code(EP, 0, 8, layers=32) == 0b000_0_01


def test_dscp_encoding_ranks_are_the_fields_and_merge_identities():
    states = [
        _state("ep_l1", EP, 0, 1, 0),
        _state("ep_l2", EP, 0, 2, 1),
        _state("dp", DP, 9, 23, 2),
    ]
    out = policies.get("hermod", encoding="dscp", layers=24).decide(states, FABRIC, 0.0)
    assert out["ep_l1"].rank == out["ep_l2"].rank == (0, 0, 0)  # layers 1, 2 share class 0
    assert out["dp"].rank == (7, 1, 3)
    ideal = policies.get("hermod").decide(states, FABRIC, 0.0)
    assert ideal["ep_l1"].rank < ideal["ep_l2"].rank


def test_dscp_needs_layers_and_has_no_room_for_interleaved():
    import pytest

    with pytest.raises(ValueError, match="layers"):
        policies.get("hermod", encoding="dscp")
    with pytest.raises(ValueError, match="one type bit"):
        policies.get("hermod", encoding="dscp", layers=24, interleaved=True)
    with pytest.raises(ValueError, match="encoding"):
        policies.get("hermod", encoding="bits")
