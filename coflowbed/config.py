"""Strict readers for YAML/JSON mappings: unknown keys, missing keys and bad values are
reported as one ``UserError`` line naming the file, the dotted key and the reason."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from coflowbed.errors import UserError


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; UserError on a missing file or a syntax error."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UserError(str(path), None, f"cannot read: {exc.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        raise UserError(str(path), where, f"invalid YAML: {getattr(exc, 'problem', exc)}") from None


class Section:
    """A mapping being validated: ``get``/``need`` take keys out; ``done`` rejects the
    rest as unknown.  ``key`` is the dotted path used in messages."""

    def __init__(self, source: str, key: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise UserError(source, key or "(top level)", f"must be a mapping, got {type(data).__name__}")
        self.source, self.key, self._data, self._used = source, key, data, set()

    def _path(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def fail(self, name: str, reason: str) -> UserError:
        """A UserError for key ``name`` of this section."""
        return UserError(self.source, self._path(name), reason)

    def has(self, name: str) -> bool:
        """Whether ``name`` is present."""
        return name in self._data

    def get(self, name: str, default: Any = None, check: Callable[[Any], Any] | None = None) -> Any:
        """Value of optional key ``name`` passed through ``check`` (which may raise
        ValueError/TypeError with a reason)."""
        self._used.add(name)
        if name not in self._data:
            return default
        value = self._data[name]
        if check is None:
            return value
        try:
            return check(value)
        except (ValueError, TypeError) as exc:
            raise self.fail(name, str(exc)) from None

    def need(self, name: str, check: Callable[[Any], Any] | None = None) -> Any:
        """Value of required key ``name``."""
        if name not in self._data:
            raise self.fail(name, "missing required key")
        return self.get(name, None, check)

    def section(self, name: str, required: bool = True) -> "Section | None":
        """A nested mapping as a Section (None if optional and absent)."""
        self._used.add(name)
        if name not in self._data:
            if required:
                raise self.fail(name, "missing required section")
            return None
        return Section(self.source, self._path(name), self._data[name])

    def done(self, hints: dict[str, str] | None = None) -> None:
        """Reject keys that were never read; ``hints`` explain known-unsupported keys."""
        for name in self._data:
            if name not in self._used:
                reason = (hints or {}).get(name, f"unknown key (known: {', '.join(sorted(self._used))})")
                raise self.fail(name, reason)


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    """Checker: an int (not bool) within [lo, hi]."""
    def check(v: Any) -> int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"must be an integer, got {v!r}")
        _bounds(v, lo, hi)
        return v
    return check


def number(lo: float | None = None, hi: float | None = None, positive: bool = False) -> Callable[[Any], float]:
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
