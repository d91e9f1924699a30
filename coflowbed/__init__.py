"""coflowbed: an emulated testbed for coflow scheduling in LLM-training networks.

The Python API (docs/python-api.md), imported on first use so that ``import coflowbed``
stays cheap: ``coflowbed.run`` (emulated), ``coflowbed.simulate`` (flow-level
simulator), ``coflowbed.compare`` (several policies), ``coflowbed.RunResult`` (a run
folder read back), ``coflowbed.Comparison``.

``coflowbed.compare`` is also the module of the comparison table
(``coflowbed.compare.compare``); calling the module runs ``coflowbed.api.compare``."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coflowbed.api import Comparison, run, simulate
    from coflowbed.run_result import RunResult

__all__ = ["Comparison", "RunResult", "compare", "run", "simulate"]

_HOMES = {
    "run": "coflowbed.api",
    "simulate": "coflowbed.api",
    "Comparison": "coflowbed.api",
    "RunResult": "coflowbed.run_result",
    "compare": "coflowbed.compare",  # the module, made callable (_CallableCompare)
}


class _CallableCompare(types.ModuleType):
    """``coflowbed.compare``: the module, and a call of it is ``coflowbed.api.compare``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``coflowbed.api.compare(*args, **kwargs)``."""
        from coflowbed.api import compare

        return compare(*args, **kwargs)


class _Package(types.ModuleType):
    """The ``coflowbed`` package: its ``compare`` submodule is made callable however it
    is first imported (the import system sets it here)."""

    def __setattr__(self, name: str, value: Any) -> None:
        """Set ``name``; the ``compare`` submodule gets its call first."""
        if name == "compare" and type(value) is types.ModuleType:
            value.__class__ = _CallableCompare
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """The API's names, imported when first used."""
    if name not in _HOMES:
        raise AttributeError(f"module 'coflowbed' has no attribute {name!r}")
    module = importlib.import_module(_HOMES[name])
    return module if _HOMES[name] == f"{__name__}.{name}" else getattr(module, name)
