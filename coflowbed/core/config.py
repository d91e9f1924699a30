"""Strict readers for YAML mappings (scenarios): unknown keys, missing keys and bad values
are reported as one ``UserError`` line naming the file, the dotted key and the reason.
The strictness itself is ``workload.schema.Section``'s; this module adds YAML loading and
checker-style access."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from coflowbed.core.errors import UserError
from workload import schema
from workload.yamlfile import parse_yaml, read_text


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; UserError on a missing or non-text file, a syntax error or a
    key given twice."""
    try:
        text = read_text(path)
    except OSError as exc:
        raise UserError(str(path), None, f"cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise UserError(str(path), None, str(exc)) from None
    try:
        return parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        raise UserError(str(path), where, f"invalid YAML: {getattr(exc, 'problem', exc)}") from None


class Section(schema.Section):
    """The shared strict reader (``workload.schema.Section``: unknown keys rejected by
    ``done``, errors naming file and dotted key) with the scenario reader's access style:
    ``get``/``need`` pass a value through a checker callable that raises ValueError or
    TypeError with the reason.  A key set to null counts as absent."""

    def fail(self, name: str, reason: str) -> UserError:
        """A UserError for key ``name`` of this section."""
        return self.error(name, reason)

    def get(self, name: str, default: Any = None, check: Callable[[Any], Any] | None = None) -> Any:
        """Value of optional key ``name`` passed through ``check``."""
        value = self.raw(name, None)
        if value is None:
            return default
        if check is None:
            return value
        try:
            return check(value)
        except (ValueError, TypeError) as exc:
            raise self.fail(name, str(exc)) from None

    def need(self, name: str, check: Callable[[Any], Any] | None = None) -> Any:
        """Value of required key ``name``."""
        if not self.has(name):
            self.raw(name, None)  # mark it read
            raise self.typo(name) or self.fail(name, "missing required key")
        return self.get(name, None, check)


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    """Checker: an integer (not bool; a whole float counts) within [lo, hi]."""

    def check(v: Any) -> int:
        v = schema.whole(v)  # 1e9 (a float in YAML) is the integer it names
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"must be an integer, got {v!r}")
        _bounds(v, lo, hi)
        return v

    return check


def number(
    lo: float | None = None, hi: float | None = None, positive: bool = False
) -> Callable[[Any], float]:
    """Checker: an int or float within bounds (strictly > 0 if ``positive``)."""

    def check(v: Any) -> float:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ValueError(f"must be a number, got {v!r}")
        if positive and not v > 0:
            raise ValueError(f"must be > 0, got {v!r}")
        _bounds(v, lo, hi)
        return float(v)

    return check


def choice(options: Iterable[str]) -> Callable[[Any], str]:
    """Checker: one of ``options``."""
    opts = tuple(options)

    def check(v: Any) -> str:
        if v not in opts:
            raise ValueError(f"must be one of {', '.join(opts)}, got {v!r}")
        return v

    return check


def string(v: Any) -> str:
    """Checker: a non-empty string."""
    if not isinstance(v, str) or not v:
        raise ValueError(f"must be a non-empty string, got {v!r}")
    return v


def _bounds(v: float, lo: float | None, hi: float | None) -> None:
    if lo is not None and v < lo:
        raise ValueError(f"must be >= {lo}, got {v!r}")
    if hi is not None and v > hi:
        raise ValueError(f"must be <= {hi}, got {v!r}")
