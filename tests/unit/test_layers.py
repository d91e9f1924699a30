"""Lower layers never import upper ones: ``workload`` imports nothing of ``coflowbed``,
``controller`` or ``topo``; ``topo`` nothing of ``coflowbed`` or ``controller``;
``controller`` (its own process) nothing of ``coflowbed`` (the orchestrator).  Every
import statement counts, including those inside functions and ``TYPE_CHECKING`` blocks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "workload": {"coflowbed", "controller", "topo"},
    "topo": {"coflowbed", "controller"},
    "controller": {"coflowbed"},
}


def imported_packages(source: str, module: str) -> set[str]:
    """Top-level packages that ``source`` (the text of ``module``) imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(module.split(".")[0] if node.level else node.module.split(".")[0])
    return found


def violations(package: str) -> dict[str, set[str]]:
    """Module -> the forbidden packages it imports, for every module of ``package``."""
    out = {}
    for path in sorted((REPO / package).rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        bad = imported_packages(path.read_text(), module) & FORBIDDEN[package]
        if bad:
            out[module] = bad
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layer_imports_no_upper_one(package):
    assert len(list((REPO / package).rglob("*.py"))) > 5  # the modules were found
    assert violations(package) == {}


def test_every_kind_of_import_is_seen():
    src = (
        "import os\nimport topo.plan as p\nfrom controller.client import C\n"
        "def f():\n    from coflowbed import errors\n"
        "if False:\n    import controller.app\nfrom . import sibling\n"
    )
    assert imported_packages(src, "workload.x") == {
        "os",
        "topo",
        "controller",
        "coflowbed",
        "workload",
    }
