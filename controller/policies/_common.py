"""Small helpers shared by the built-in policies: parameter checks and type orders."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from workload.dag import CoflowType


def bad_param(policy: str, key: str, reason: str, value: Any) -> ValueError:
    """The one-line error for a bad policy parameter."""
    return ValueError(f"policy {policy!r}: parameter {key!r}: {reason}, got {value!r}")


def check_bool(policy: str, key: str, value: Any) -> bool:
    """``value`` if it is a bool, else ValueError."""
    if not isinstance(value, bool):
        raise bad_param(policy, key, "must be true or false", value)
    return value


def check_int(policy: str, key: str, value: Any, lo: int, hi: int) -> int:
    """``value`` if it is an int in lo..hi, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise bad_param(policy, key, f"must be an integer in {lo}..{hi}", value)
    return value


def check_positive(policy: str, key: str, value: Any) -> float:
    """``value`` as float if it is a finite number > 0, else ValueError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise bad_param(policy, key, "must be a finite number > 0", value)
    return float(value)


def type_order(first: Sequence[CoflowType]) -> dict[CoflowType, int]:
    """Rank per coflow type: ``first`` in the given order, every other type after them."""
    order = {t: i for i, t in enumerate(first)}
    rest = len(first)
    return {t: order.get(t, rest) for t in CoflowType}
