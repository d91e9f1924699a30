"""Strict readers for user-written mappings (job specs, DAG JSON): every value is
checked where it is read, and every error names the file, the key path and the reason.

``SpecError`` is both a ``UserError`` (the CLI prints it as one line, exit 2) and a
``ValueError`` (library callers that catch ValueError keep working).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Any, Literal, Self, overload

from workload.errors import UserError


class _Required:
    """Type of the ``default`` that makes a key required."""


_REQUIRED = _Required()


class SpecError(UserError, ValueError):
    """Bad value or unknown key in a user file: ``<file>: <key>: <reason>``."""


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Section:
    """A mapping being read: ``take`` each known key, then ``done`` rejects the rest.

    The readers ``int``/``float``/``str``/``list`` return None only when given ``None``
    as the default (their overloads say so); inside this class, those names are the
    methods, so the builtin types are spelled ``builtins.int`` etc."""

    def __init__(self, data: Any, source: str, path: str = "") -> None:
        """Wrap ``data`` (must be a mapping) found at ``path`` of file ``source``."""
        if not isinstance(data, Mapping):
            raise SpecError(source, path or None, f"must be a mapping, got {_kind(data)}")
        self.data, self.source, self.path = data, source, path
        self._seen: set[str] = set()

    def error(self, key: str | int | None, reason: str) -> SpecError:
        """A SpecError for ``key`` inside this section."""
        return SpecError(
            self.source, _join(self.path, key) if key is not None else self.path or None, reason
        )

    def has(self, key: str) -> bool:
        """Whether ``key`` is present (and not null)."""
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = _REQUIRED) -> Any:
        """The unchecked value of ``key`` (marked as read); error if required and absent."""
        self._seen.add(key)
        if self.data.get(key) is None:
            if default is _REQUIRED:
                raise self.error(key, "is required")
            return default
        return self.data[key]

    @overload
    def int(
        self,
        key: builtins.str,
        default: builtins.int | _Required = ...,
        lo: builtins.int | None = None,
        hi: builtins.int | None = None,
    ) -> builtins.int: ...
    @overload
    def int(
        self,
        key: builtins.str,
        default: None,
        lo: builtins.int | None = None,
        hi: builtins.int | None = None,
    ) -> builtins.int | None: ...
    def int(
        self,
        key: builtins.str,
        default: builtins.int | _Required | None = _REQUIRED,
        lo: builtins.int | None = None,
        hi: builtins.int | None = None,
    ) -> builtins.int | None:
        """An integer (not a bool) within [lo, hi]."""
        v = self.raw(key, default)
        return check_int(v, lambda r: self.error(key, r), lo, hi) if v is not None else None

    @overload
    def float(
        self,
        key: builtins.str,
        default: builtins.float | _Required = ...,
        lo: builtins.float | None = None,
        hi: builtins.float | None = None,
        lo_open: builtins.bool = False,
    ) -> builtins.float: ...
    @overload
    def float(
        self,
        key: builtins.str,
        default: None,
        lo: builtins.float | None = None,
        hi: builtins.float | None = None,
        lo_open: builtins.bool = False,
    ) -> builtins.float | None: ...
    def float(
        self,
        key: builtins.str,
        default: builtins.float | _Required | None = _REQUIRED,
        lo: builtins.float | None = None,
        hi: builtins.float | None = None,
        lo_open: builtins.bool = False,
    ) -> builtins.float | None:
        """A number within [lo, hi] (or (lo, hi] with ``lo_open``), returned as float."""
        v = self.raw(key, default)
        if v is None:
            return None
        return check_float(v, lambda r: self.error(key, r), lo, hi, lo_open)

    @overload
    def str(
        self,
        key: builtins.str,
        default: builtins.str | _Required = ...,
        choices: tuple[builtins.str, ...] = (),
    ) -> builtins.str: ...
    @overload
    def str(
        self, key: builtins.str, default: None, choices: tuple[builtins.str, ...] = ()
    ) -> builtins.str | None: ...
    def str(
        self,
        key: builtins.str,
        default: builtins.str | _Required | None = _REQUIRED,
        choices: tuple[builtins.str, ...] = (),
    ) -> builtins.str | None:
        """A non-empty string, optionally one of ``choices``."""
        v = self.raw(key, default)
        if v is None:
            return v
        if not isinstance(v, str) or not v:
            raise self.error(key, f"must be a non-empty string, got {v!r}")
        if choices and v not in choices:
            raise self.error(key, f"must be one of {', '.join(choices)}, got {v!r}")
        return v

    def bool(
        self, key: builtins.str, default: builtins.bool | _Required = _REQUIRED
    ) -> builtins.bool:
        """A true/false value."""
        v = self.raw(key, default)
        if not isinstance(v, bool):
            raise self.error(key, f"must be true or false, got {v!r}")
        return v

    @overload
    def section(self, key: builtins.str, required: Literal[True] = True) -> Self: ...
    @overload
    def section(self, key: builtins.str, required: builtins.bool) -> Self | None: ...
    def section(self, key: builtins.str, required: builtins.bool = True) -> Self | None:
        """The nested mapping at ``key`` (None when optional and absent), read the same
        way as this one (a subclass's nested sections are of that subclass)."""
        v = self.raw(key, _REQUIRED if required else None)
        return None if v is None else type(self)(v, self.source, _join(self.path, key))

    @overload
    def list(
        self, key: builtins.str, default: builtins.list[Any] | _Required = ...
    ) -> builtins.list[Any]: ...
    @overload
    def list(self, key: builtins.str, default: None) -> builtins.list[Any] | None: ...
    def list(
        self, key: builtins.str, default: builtins.list[Any] | _Required | None = _REQUIRED
    ) -> builtins.list[Any] | None:
        """A list value."""
        v = self.raw(key, default)
        if v is not None and not isinstance(v, list):
            raise self.error(key, f"must be a list, got {_kind(v)}")
        return v

    def done(self, hints: Mapping[builtins.str, builtins.str] | None = None) -> None:
        """Reject keys that were never read; ``hints`` give the reason for keys known
        to be unsupported (instead of "unknown key")."""
        unknown = sorted(str(k) for k in self.data if k not in self._seen)
        if unknown:
            reason = (hints or {}).get(unknown[0], f"unknown key (known: {self._known()})")
            raise self.error(unknown[0], reason)

    def _known(self) -> builtins.str:
        return ", ".join(sorted(self._seen)) or "none"


def check_int(
    v: Any, err: Callable[[str], Exception], lo: int | None = None, hi: int | None = None
) -> int:
    """``v`` if it is an int (not bool) within [lo, hi]; else raise ``err(reason)``."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise err(f"must be an integer, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise err(f"must be in {_range(lo, hi)}, got {v}")
    return v


def check_float(
    v: Any,
    err: Callable[[str], Exception],
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
) -> float:
    """``v`` as float if it is a finite number within the range; else ``err(reason)``."""
    if (
        not isinstance(v, (int, float))
        or isinstance(v, bool)
        or v != v
        or v in (float("inf"), float("-inf"))
    ):
        raise err(f"must be a finite number, got {v!r}")
    bad_lo = lo is not None and (v <= lo if lo_open else v < lo)
    if bad_lo or (hi is not None and v > hi):
        left = "(" if lo_open else "["
        raise err(f"must be in {left}{_range(lo, hi)[1:]}, got {v}")
    return float(v)


def _range(lo: Any, hi: Any) -> str:
    return f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"


def _kind(v: Any) -> str:
    return type(v).__name__
