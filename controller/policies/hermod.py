"""Hermod: strict cluster-wide order by static model factors (MID > CType > LID), with
the thesis's MID* exception and its 6-bit DSCP packing as options."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.policies._common import bad_param, check_bool, check_int, type_order
from controller.policies.base import CoflowState, Decision, FabricView, Policy
from controller.policies.registry import register
from workload.dag import CoflowIdentity, CoflowType

EP, PP, DP = CoflowType.EP, CoflowType.PP, CoflowType.DP
# CType order: EP and PP share 0 in plain 1F1B; interleaved 1F1B separates them.
_PLAIN = {t: {EP: 0, PP: 0, DP: 1}.get(t, 2) for t in CoflowType}
_INTERLEAVED = type_order((EP, PP, DP))
ENCODINGS = ("ideal", "dscp")
MID_CLASSES, LID_CLASSES = 8, 4  # the thesis's 3 MID bits and 2 LID bits
Key = tuple[int, int, int]  # (MID, CType order, LID), or their classes under "dscp"


def dscp_fields(ident: CoflowIdentity, layers: int) -> Key:
    """The thesis's three DSCP fields of a coflow (MID class, type bit, LID class).

    The thesis packs "the top three bits for microbatchID, one bit for coflow type, and
    two bits for layerID" and does not say how larger ids fold into them; here a MID
    beyond 7 shares class 7 (later microbatches are the least urgent anyway) and the
    ``layers`` layers of the model fall into 4 equal runs of consecutive layers
    (class ``LID * 4 // layers``), both order-preserving.  Type bit 0: EP and PP,
    1: DP and everything else."""
    mid_class = min(ident.mid, MID_CLASSES - 1)
    type_bit = 0 if ident.ctype in (EP, PP) else 1
    lid_class = min(ident.lid * LID_CLASSES // layers, LID_CLASSES - 1)
    return (mid_class, type_bit, lid_class)


def dscp_code(fields: Key) -> int:
    """The 6-bit DSCP value of (MID class, type bit, LID class): ``MMM T LL``."""
    mid_class, type_bit, lid_class = fields
    return mid_class << 3 | type_bit << 2 | lid_class


@register
class Hermod(Policy):
    """Hermod (Wan et al., "Coflow Scheduling for LLM Training", SIGCOMM 2025 poster, HKUST;
    and the author's thesis, ch. 5).  Every coflow carries microbatch id MID, type CType
    and layer id LID; the order is strict and lexicographic: smaller MID first, then EP
    and PP before DP, then smaller LID first.  Coflows with the same three factors share
    a level, as they share a tag in the published prototype (splitting them by arrival
    would serve the flows of one pipeline step one after another instead of together).
    This settles the three overlap cases of 1F1B with ZeRO-2: (1) EP vs PP of different
    microbatches -> older microbatch; (2) EP/PP vs DP in backward -> EP/PP; (3)
    next-iteration EP/PP of early layers vs DP all-gathers of later layers -> smaller
    LID.  ``interleaved=True`` (interleaved 1F1B) splits CType into EP > PP > DP.
    OTHER/TP coflows rank after DP.

    ``mid_star=True``: the thesis's conflict rule (Table 5.4, "MID*"): when two coflows
    of different MIDs meet and one of them is DP, the smaller LID goes first (then MID,
    then CType); pairs of one MID, and pairs without DP, keep MID > CType > LID.  The
    rule depends on which coflows are present, so it is decided among the active
    coflows at every decision (no whole-DAG tag table: ``ranks_by_identity`` is off).

    ``encoding="dscp"``: the ranks are the thesis's 6-bit DSCP fields (``dscp_fields``:
    8 MID classes, 1 type bit, 4 LID classes over ``layers`` layers) instead of the
    ideal integers, so that the cost of the published packing can be measured.

    Rank: ``(MID, ctype_order, LID)``; the iteration is not part of the rank (the
    published 6-bit tag has no iteration bits).  Each coflow runs at line rate within
    its level (no rates).  Compression is MID-first (``"lexicographic"``)."""

    name = "hermod"
    compression = "lexicographic"
    # Static: the rank is the coflow's tag, so the testbed compresses every tag of the
    # DAG once and installs a fixed tag -> level table, as the prototype's switches hold.
    # Over a whole DAG, equal-size buckets of consecutive tags ("quantile") keep MID, CType
    # and LID apart where lexicographic filling runs out of levels after the MIDs
    # (flow-level simulation of small-moe: 10.2 s vs 12.6 s per iteration).
    ranks_by_identity = True
    dag_compression = "quantile"

    def __init__(
        self,
        interleaved: bool = False,
        mid_star: bool = False,
        encoding: str = "ideal",
        layers: Any = None,
    ) -> None:
        """Check the parameters and pick the CType order."""
        super().__init__()
        self.interleaved = check_bool(self.name, "interleaved", interleaved)
        self.mid_star = check_bool(self.name, "mid_star", mid_star)
        if encoding not in ENCODINGS:
            raise bad_param(
                self.name, "encoding", f"must be one of {', '.join(ENCODINGS)}", encoding
            )
        self.encoding = encoding
        self.layers = None if layers is None else check_int(self.name, "layers", layers, 1, 10**6)
        if encoding == "dscp" and self.layers is None:
            raise bad_param(
                self.name, "layers", "encoding dscp needs the model's layer count", None
            )
        if encoding == "dscp" and self.interleaved:
            raise bad_param(self.name, "interleaved", "encoding dscp has one type bit", True)
        self._order = _INTERLEAVED if self.interleaved else _PLAIN
        self.ranks_by_identity = not self.mid_star

    def key(self, ident: CoflowIdentity) -> Key:
        """The coflow's (MID, CType order, LID), or its DSCP fields under ``dscp``."""
        if self.encoding == "dscp":
            assert self.layers is not None
            return dscp_fields(ident, self.layers)
        return (ident.mid, self._order[ident.ctype], ident.lid)

    def decide(
        self, states: Sequence[CoflowState], fabric: FabricView, now: float
    ) -> dict[str, Decision]:
        """Rank (MID, CType order, LID) per coflow; under ``mid_star`` DP coflows are
        placed among the others by ``_mid_star``."""
        keys = {s.coflow_id: self.key(s.coflow.identity) for s in states}
        if not self.mid_star:
            return {cid: Decision(rank=k) for cid, k in keys.items()}
        dps = {s.coflow_id for s in states if s.coflow.identity.ctype is DP}
        ranks = _mid_star(keys, dps)
        return {cid: Decision(rank=r) for cid, r in ranks.items()}


def _dp_first(dp: Key, other: Key) -> bool:
    """Whether DP coflow ``dp`` goes before non-DP ``other`` under MID*: of one MID by
    (CType, LID); of different MIDs by (LID, MID, CType)."""
    if dp[0] == other[0]:
        return (dp[1], dp[2]) < (other[1], other[2])
    return (dp[2], dp[0], dp[1]) < (other[2], other[0], other[1])


def _mid_star(keys: dict[str, Key], dps: set[str]) -> dict[str, tuple]:
    """Ranks of the active coflows under MID*: the others in (MID, CType, LID) order,
    each DP coflow (in LID order) merged in before the first of them it goes before
    (``_dp_first``).  A DP coflow whose own key already sits there keeps it, so MID*
    changes no rank where it changes no order; else it takes its successor's key with
    the LID lowered by 1/2 (its own LID after it, to order DP coflows among themselves).
    Constructed sets can hold cycles (a < b by MID, b < d and d < a by LID); the merge
    then keeps the order among the non-DP coflows."""
    others = sorted((k, cid) for cid, k in keys.items() if cid not in dps)
    dp_list = sorted(((keys[c][2], keys[c][0]), c) for c in dps)
    merged: list[str] = []
    i = 0
    for _, d in dp_list:
        while i < len(others) and not _dp_first(keys[d], others[i][0]):
            merged.append(others[i][1])
            i += 1
        merged.append(d)
    merged.extend(cid for _, cid in others[i:])
    return _ranks_in_order(merged, keys, dps)


def _ranks_in_order(merged: list[str], keys: dict[str, Key], dps: set[str]) -> dict[str, tuple]:
    """Increasing ranks along ``merged`` (see ``_mid_star``): non-DP coflows keep their
    key (plus a 0), DP coflows theirs where it fits between their neighbours."""
    following: list[tuple | None] = [None] * len(merged)  # next non-DP coflow's rank
    nxt: tuple | None = None
    for n in range(len(merged) - 1, -1, -1):
        following[n] = nxt
        if merged[n] not in dps:
            nxt = (*keys[merged[n]], 0.0)
    out: dict[str, tuple] = {}
    prev: tuple | None = None
    for n, cid in enumerate(merged):
        own = (*keys[cid], 0.0)
        if cid in dps:
            nxt = following[n]
            if (prev is None or prev <= own) and (nxt is None or own < nxt):
                rank: tuple = own
            elif nxt is not None:
                rank = (nxt[0], nxt[1], nxt[2] - 0.5, keys[cid][2])
            else:
                assert prev is not None
                rank = (prev[0], prev[1], prev[2] + 0.5, keys[cid][2])
        else:
            rank = own
        out[cid] = rank
        prev = rank
    return out
