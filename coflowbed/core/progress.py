"""Progress bars on long work (compare, sweep, big simulations): one library (tqdm),
one look.  Bars go to stderr and only when it is a terminal (or ``COFLOWBED_PROGRESS=1``
forces them), so logs, CI output and captured tests stay clean."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")
ENV_FORCE = "COFLOWBED_PROGRESS"  # "1": always draw, "0": never


def enabled() -> bool:
    """Whether bars are drawn: a terminal on stderr, unless the environment says."""
    forced = os.environ.get(ENV_FORCE)
    if forced in ("0", "1"):
        return forced == "1"
    return sys.stderr.isatty()


def bar(total: int | None, desc: str, unit: str = "run") -> tqdm:
    """A bar of ``total`` steps (``update(n)`` / ``set_postfix_str``; close it, or use
    it as a context manager)."""
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled(),
        file=sys.stderr,
        dynamic_ncols=True,
        leave=True,
    )


def track(
    items: Iterable[T], desc: str, total: int | None = None, unit: str = "run"
) -> Iterator[T]:
    """``items`` with a bar advancing one step per item."""
    with bar(total if total is not None else _len(items), desc, unit) as b:
        for it in items:
            yield it
            b.update(1)


def _len(items: Iterable) -> int | None:
    """len(items) when it has one."""
    try:
        return len(items)  # type: ignore[arg-type]
    except TypeError:
        return None
