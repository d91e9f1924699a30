"""Strict readers for user-written mappings (job specs, DAG JSON): every value is
checked where it is read, and every error names the file, the key path and the reason.

``SpecError`` is both a ``UserError`` (the CLI prints it as one line, exit 2) and a
``ValueError`` (library callers that catch ValueError keep working).
"""

from __future__ import annotations

import builtins
import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Literal, Self, overload

from workload.errors import UserError

# How alike an unknown key and a known one must be (difflib's ratio) to be called its typo:
# once every known key of a section has been read, and (stricter, as a key not read yet
# may be a valid one: mid and id are 0.8 alike) while reading fails.
TYPO_CUTOFF = 0.75
GUESS_CUTOFF = 0.85


class _Required:
    """Type of the ``default`` that makes a key required."""


_REQUIRED = _Required()


class SpecError(UserError, ValueError):
    """Bad value or unknown key in a user file: ``<file>: <key>: <reason>``."""


# The sections read inside ``typos_first`` (None outside it).
_READING: ContextVar[list[Section] | None] = ContextVar("_READING", default=None)


def did_you_mean(
    word: str, known: Iterator[str] | list[str] | set[str], cutoff: float = TYPO_CUTOFF
) -> str:
    """``; did you mean 'X'?`` when ``word`` is close to one of ``known``, else ""."""
    close = difflib.get_close_matches(word, sorted(known), 1, cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


@contextlib.contextmanager
def typos_first() -> Iterator[None]:
    """Read a file's sections inside this: when reading fails for another reason while
    a section holds an unknown key close to a key it looked up and did not find (a typo
    of a key with a default, whose default then caused the error), the unknown key is
    reported instead."""
    token = _READING.set([])
    try:
        yield
    except UserError as exc:
        typo = next((t for s in _READING.get() or [] if (t := s.typo()) is not None), None)
        if typo is None or typo.key == exc.key:
            raise
        raise typo from None
    finally:
        _READING.reset(token)


def touches(error_key: str | None, key: str) -> bool:
    """Whether an error about ``error_key`` concerns the overridden dotted ``key``."""
    if error_key is None:
        return False
    return error_key == key or error_key.startswith((f"{key}.", f"{key}["))


@contextlib.contextmanager
def blamed_on(source: str, keys: Mapping[str, Any], where: str, prefix: str) -> Iterator[None]:
    """Re-raise a UserError about ``source``'s key set by one of the overrides ``keys``
    as one about where the user wrote that override: ``where``, key ``prefix.KEY``
    (``prefix`` "" for a flag such as ``--set``)."""
    try:
        yield
    except UserError as exc:
        if exc.source != source or not any(touches(exc.key, k) for k in keys):
            raise
        key = _join(prefix, exc.key) if prefix and exc.key else exc.key
        raise SpecError(where, key, exc.reason) from None


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
        self._absent: set[str] = set()  # keys looked up and not given
        self._present: set[str] = set()  # keys asked about (``has``) and given
        reading = _READING.get()
        if reading is not None:
            reading.append(self)

    def error(self, key: str | int | None, reason: str) -> SpecError:
        """A SpecError for ``key`` inside this section."""
        return SpecError(
            self.source, _join(self.path, key) if key is not None else self.path or None, reason
        )

    def has(self, key: str) -> bool:
        """Whether ``key`` is present (and not null)."""
        if self.data.get(key) is None:
            self._absent.add(key)
            return False
        self._present.add(key)
        return True

    def raw(self, key: str, default: Any = _REQUIRED) -> Any:
        """The unchecked value of ``key`` (marked as read); error if required and absent."""
        self._seen.add(key)
        if self.data.get(key) is None:
            self._absent.add(key)
            if default is _REQUIRED:
                raise self.typo(key) or self.error(key, "is required")
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
        unknown = self._unknown()
        if unknown:
            hint = did_you_mean(unknown[0], self._seen)
            reason = hint[2:] if hint else f"known: {self._known()}"
            raise self.error(unknown[0], (hints or {}).get(unknown[0], f"unknown key ({reason})"))

    def typo(self, missing: builtins.str | None = None) -> SpecError | None:
        """The error for an unknown key of this section that looks like a typo of
        ``missing`` (default: of any key looked up and not found), or None."""
        wanted = self._absent if missing is None else {missing}
        for key in self._unknown():
            if key in self._present:
                continue
            hint = did_you_mean(key, wanted - {key}, GUESS_CUTOFF)
            if hint:
                return self.error(key, f"unknown key ({hint[2:]})")
        return None

    def _unknown(self) -> builtins.list[builtins.str]:
        return sorted(str(k) for k in self.data if k not in self._seen)

    def _known(self) -> builtins.str:
        return ", ".join(sorted(self._seen)) or "none"


def check_int(
    v: Any, err: Callable[[str], Exception], lo: int | None = None, hi: int | None = None
) -> int:
    """``v`` as int if it is an integer (not a bool; a whole float such as ``1e9``
    counts) within [lo, hi]; else raise ``err(reason)``."""
    v = whole(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise err(f"must be an integer, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise err(f"must be in {_range(lo, hi)}, got {v}")
    return v


def whole(v: Any) -> Any:
    """``v`` as an int when it is a float with a whole value (``1e9``, ``8.0``), else ``v``."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
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
