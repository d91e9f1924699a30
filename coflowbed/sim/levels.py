"""From policy decisions to simulated priority levels (the scenario's 'static' policy lives
in ``controller.policies.static``, shared with the emulator).

Two level modes:

- ``K`` (1..8): the ranks are compressed onto the fabric's K hardware queues by
  ``controller.compress`` with the policy's own scheme, exactly as the emulator does.
- exact (``None``): every distinct rank is its own level (dense ranking), the total order
  the classic reference simulators assume; equal ranks share a level (max-min fair).
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.compress import compress
from controller.policies.base import Decision
from controller.policies.static import StaticPolicy  # noqa: F401  (one object for both backends)
from workload.marking import MAX_LEVELS


def assign_levels(
    decisions: Mapping[str, Decision], levels: int | None, how: str = "top"
) -> dict[str, int]:
    """Level per coflow id (0 = most urgent) for ``levels`` queues or exact (None)."""
    ranks = {cid: _as_tuple(d.rank) for cid, d in decisions.items()}
    if levels is not None:
        return compress(ranks, levels, how)
    try:
        distinct = sorted(set(ranks.values()))
    except TypeError as exc:
        raise ValueError(f"policy ranks are not mutually comparable ({exc})") from None
    dense = {r: i for i, r in enumerate(distinct)}
    return {cid: dense[r] for cid, r in ranks.items()}


def _as_tuple(rank) -> tuple:
    """A rank as a tuple (bare numbers allowed)."""
    return rank if isinstance(rank, tuple) else (rank,)


def parse_levels(text: str | int | None, default: int | None) -> int | None:
    """``"exact"`` -> None, ``"4"`` -> 4, None -> ``default``; ValueError otherwise."""
    if text is None:
        return default
    if str(text) == "exact":
        return None
    try:
        k = int(text)
    except ValueError:
        raise ValueError(f"levels must be 1..{MAX_LEVELS} or 'exact', got {text!r}") from None
    if not 1 <= k <= MAX_LEVELS:
        raise ValueError(f"levels must be 1..{MAX_LEVELS} or 'exact', got {text!r}")
    return k
