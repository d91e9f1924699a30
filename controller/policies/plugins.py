"""User policy plugins: Python files that register policies with
``@controller.policies.register``, imported by the scenario loader (so the names can be
checked) and by the controller (which runs the policy)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def import_plugin(file: Path) -> None:
    """Execute the Python file ``file`` as module ``coflowbed_plugin_<stem>`` (once)."""
    name = f"coflowbed_plugin_{file.stem}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
