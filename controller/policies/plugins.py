"""User policy plugins: Python files that register policies with
``@controller.policies.register``, imported by the scenario loader (so the names can be
checked) and by the controller (which runs the policy)."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path


def module_name(file: Path) -> str:
    """The module a plugin file runs as: named by its resolved path, so two files of one
    name in different folders are two plugins, and one file loaded twice is one."""
    path = Path(file).resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    return f"coflowbed_plugin_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}_{digest}"


def import_plugin(file: Path) -> None:
    """Execute the Python file ``file`` as its module (``module_name``), once."""
    name = module_name(file)
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
