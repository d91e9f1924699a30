"""Reading the project's YAML files strictly: a mapping that gives one key twice is an
error (PyYAML's ``safe_load`` silently keeps the last one), and a file that is not UTF-8
text is one too.  A number written ``1e15`` is a number, as YAML 1.2 reads it (YAML 1.1,
PyYAML's, wants ``1.0e+15`` and reads ``1e15`` as a string).  Scenario, sweep and job
files and ``--set`` values are all read here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping key given twice."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict:
        """The mapping of ``node``; ConstructorError at the second of two equal keys."""
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool):
                continue  # unhashable keys are the base loader's to refuse
            if key in seen:
                raise ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


# 1e15, -2E-3, 5e+2, 1.5e3: exponent forms YAML 1.1's float pattern misses (no dot or no sign)
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789.")
)


def parse_yaml(text: str) -> Any:
    """``text`` as YAML with ``_StrictLoader``; yaml.YAMLError on bad YAML."""
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass


def read_text(path: Path) -> str:
    """The file's text; OSError as ``Path.read_text``, ValueError when not UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not a UTF-8 text file (byte {exc.start}: {exc.reason})") from None
