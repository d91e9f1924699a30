"""Scenario overrides: ``{"policy": "hermod", "fabric.host_bw_mbps": 200}`` set keys of a
scenario's YAML before it is validated.  A dotted key reaches into nested mappings; the
scenario loader then checks every value and rejects unknown keys as it does for the file,
and an error about an overridden key names the override, not the file's text."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

from coflowbed.core.errors import UserError

Overrides = Mapping[str, Any]  # dotted scenario key -> value


def apply_overrides(raw: Any, overrides: Overrides, source: str) -> Any:
    """A copy of the scenario mapping ``raw`` with every dotted key of ``overrides`` set;
    ``raw`` (if not a mapping) is returned unchanged for the loader to reject."""
    if not isinstance(raw, dict) or not overrides:
        return raw
    out = copy.deepcopy(raw)
    for key, value in overrides.items():
        _set(out, _parts(key, source), value, source)
    return out


def _parts(key: Any, source: str) -> list[str]:
    """The segments of dotted ``key``; UserError on an empty segment or a non-string."""
    parts = key.split(".") if isinstance(key, str) else [""]
    if not all(parts):
        raise UserError(override_source(source), str(key), "not a dotted scenario key")
    return parts


def _set(data: dict, parts: list[str], value: Any, source: str) -> None:
    """Set ``data[p0][p1]...[pn] = value``, making absent mappings on the way."""
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            where = ".".join(parts[: i + 1])
            raise UserError(
                override_source(source),
                ".".join(parts),
                f"{where} is {child!r}, not a mapping: override {where} itself",
            )
        node = child
    node[parts[-1]] = value


def override_source(source: str) -> str:
    """How an error about an override names where it came from."""
    return f"{source} (overrides)"


def _touches(error_key: str | None, key: str) -> bool:
    """Whether an error about ``error_key`` concerns the overridden ``key``."""
    if error_key is None:
        return False
    return error_key == key or error_key.startswith((f"{key}.", f"{key}["))


@contextlib.contextmanager
def blamed_on_overrides(overrides: Overrides | None, source: str) -> Iterator[None]:
    """Re-raise a UserError about an overridden key as one naming the override."""
    try:
        yield
    except UserError as exc:
        if exc.source == source and any(_touches(exc.key, k) for k in overrides or {}):
            raise UserError(override_source(source), exc.key, exc.reason) from None
        raise
