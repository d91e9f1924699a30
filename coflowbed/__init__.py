"""coflowbed: an emulated testbed for coflow scheduling in LLM-training networks.

The Python API (docs/python-api.md), imported on first use so that ``import coflowbed``
stays cheap: ``coflowbed.run`` (emulated), ``coflowbed.simulate`` (flow-level
simulator), ``coflowbed.compare`` (several policies), ``coflowbed.RunResult`` (a run
folder read back), ``coflowbed.Comparison``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coflowbed.api import Comparison, compare, run, simulate
    from coflowbed.results.read import RunResult

__all__ = ["Comparison", "RunResult", "compare", "run", "simulate"]

_HOMES = {
    "run": "coflowbed.api",
    "simulate": "coflowbed.api",
    "Comparison": "coflowbed.api",
    "RunResult": "coflowbed.results.read",
    "compare": "coflowbed.api",
}


def __getattr__(name: str) -> Any:
    """The API's names, imported when first used."""
    if name not in _HOMES:
        raise AttributeError(f"module 'coflowbed' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
