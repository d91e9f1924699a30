"""The project's imports go one way.

Between the top-level packages: ``workload`` imports nothing of ``coflowbed``,
``controller`` or ``topo``; ``topo`` nothing of ``coflowbed`` or ``controller``;
``controller`` (its own process) nothing of ``coflowbed``.  Inside ``coflowbed``, each
capability package imports only those below it in ``ORDER`` (and itself): the command
line and the Python API are faces nothing imports, the emulator never imports the
analysis (the fidelity check is attached by the caller) nor the analysis the emulator.
And no module, anywhere in the four packages, is part of an import circle.  Every import
statement counts, including those inside functions and ``TYPE_CHECKING`` blocks."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.data import REPO

PACKAGES = ("workload", "topo", "controller", "coflowbed")
FORBIDDEN = {
    "workload": {"coflowbed", "controller", "topo"},
    "topo": {"coflowbed", "controller"},
    "controller": {"coflowbed"},
}
# coflowbed's capability packages, lowest first; a package may import those of lower
# rank.  Two of one rank are peers that do not import each other.
ORDER = {
    "core": 0,
    "results": 1,
    "sim": 2,
    "packet": 3,
    "experiment": 4,
    "emulation": 5,
    "analysis": 5,
    "studies": 6,
    "api": 7,
    "cli": 7,
    "__main__": 8,
    "__init__": 8,
    "testing": 8,
}
Edges = dict[str, set[str]]


def module_name(path: Path, root: Path = REPO) -> str:
    """``coflowbed/sim/__init__.py`` -> ``coflowbed.sim``; ``a/b.py`` -> ``a.b``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, is_package: bool = False) -> list[list[str]]:
    """What each import of ``source`` (the text of ``module``) names, one list per
    imported name, most specific first: ``import a.b`` gives ``[a.b]``; ``from a import
    b`` gives ``[a.b, a]`` (b is a module of a, or a name defined in a)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[list[str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend([alias.name] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.extend([f"{base}.{alias.name}", base] for alias in node.names)
    return found


def imported_packages(source: str, module: str) -> set[str]:
    """Top-level packages that ``source`` (the text of ``module``) imports."""
    return {names[-1].split(".")[0] for names in imported_names(source, module)}


def project_graph(root: Path = REPO, packages: Iterable[str] = PACKAGES) -> Edges:
    """Module -> the project modules it imports (names resolved to existing modules)."""
    paths = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    graph: Edges = {}
    for mod, path in paths.items():
        names = imported_names(path.read_text(), mod, path.name == "__init__.py")
        graph[mod] = {_resolve(n, paths) for n in names} - {None, mod}  # type: ignore[misc]
    return graph


def _resolve(names: list[str], modules: dict) -> str | None:
    """The first of ``names`` that is a project module, else the longest prefix of the
    last one that is, or None (not a project module)."""
    for name in names:
        if name in modules:
            return name
    name = names[-1]
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def circles(graph: Edges) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def capability(module: str) -> str:
    """The capability package of a coflowbed module (``coflowbed.sim.engine`` -> sim)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: Edges) -> list[tuple[str, str]]:
    """(importer, imported) pairs of coflowbed modules against ``ORDER``."""
    bad = []
    for src, targets in sorted(graph.items()):
        if not src.startswith("coflowbed"):
            continue
        for dst in sorted(t for t in targets if t.startswith("coflowbed")):
            a, b = capability(src), capability(dst)
            if a != b and ORDER[b] >= ORDER[a]:
                bad.append((src, dst))
    return bad


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


def test_no_module_is_in_an_import_circle():
    graph = project_graph()
    assert len(graph) > 200 and sum(map(len, graph.values())) > 500  # the graph was read
    assert circles(graph) == []


def test_capability_packages_import_only_downwards():
    graph = project_graph()
    assert {capability(m) for m in graph if m.startswith("coflowbed")} <= set(ORDER)
    assert upward_imports(graph) == []


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


def _tree(tmp_path: Path, files: dict[str, str]) -> Edges:
    """The import graph of a throw-away package tree ``files`` (path -> text)."""
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return project_graph(tmp_path, ["coflowbed"])


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path):
    graph = _tree(
        tmp_path,
        {
            "coflowbed/__init__.py": "",
            "coflowbed/sim/__init__.py": "",
            "coflowbed/sim/a.py": "from coflowbed.sim import b\n",
            "coflowbed/sim/b.py": "def f():\n    from coflowbed.sim.a import x\n",
            "coflowbed/sim/c.py": "from . import a\n",
        },
    )
    assert circles(graph) == [["coflowbed.sim.a", "coflowbed.sim.b"]]


def test_an_upward_or_sideways_import_is_found(tmp_path):
    graph = _tree(
        tmp_path,
        {
            "coflowbed/__init__.py": "",
            "coflowbed/core/__init__.py": "",
            "coflowbed/core/errors.py": "",
            "coflowbed/cli/__init__.py": "",
            "coflowbed/cli/main.py": "from coflowbed.core.errors import E\n",
            "coflowbed/sim/__init__.py": "",
            "coflowbed/sim/engine.py": "if T:\n    from coflowbed.cli.main import main\n",
            "coflowbed/emulation/__init__.py": "",
            "coflowbed/emulation/run.py": "from coflowbed.analysis import fidelity\n",
            "coflowbed/analysis/__init__.py": "",
            "coflowbed/analysis/fidelity.py": "",
        },
    )
    assert upward_imports(graph) == [
        ("coflowbed.emulation.run", "coflowbed.analysis.fidelity"),
        ("coflowbed.sim.engine", "coflowbed.cli.main"),
    ]
