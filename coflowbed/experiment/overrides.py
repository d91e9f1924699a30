"""Scenario overrides: ``{"policy": "hermod", "fabric.host_bw_mbps": 200}`` set keys of a
scenario's YAML before it is validated (null removes one).  A dotted key reaches into
nested mappings; the scenario loader then checks every value and rejects unknown keys as
it does for the file, and an error about an overridden key names the override, not the
file's text: the flag that set it (``--set: fabric.host_bw_mbps: ...``) when the
overrides came from the command line (``FlagOverrides``), else ``<file> (overrides)``."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

from coflowbed.core.errors import UserError
from workload.schema import touches

Overrides = Mapping[str, Any]  # dotted scenario key -> value


class FlagOverrides(dict[str, Any]):
    """Overrides given on the command line; ``flags`` names the flag that set each key
    (``{"timeout_s": "--set", "policy": "--policy"}``) for the error messages."""

    def __init__(self, values: Mapping[str, Any], flags: Mapping[str, str]) -> None:
        super().__init__(values)
        self.flags = dict(flags)

    def merged(self, values: Mapping[str, Any], flag: str) -> FlagOverrides:
        """These overrides and ``values``, set by ``flag``."""
        return FlagOverrides({**self, **values}, {**self.flags, **dict.fromkeys(values, flag)})


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
    """Set ``data[p0][p1]...[pn] = value``, making absent mappings on the way; a null
    ``value`` removes the key (its default applies again), as in a job's overrides."""
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
    if value is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value


def override_source(source: str) -> str:
    """How an error about an override names where it came from."""
    return f"{source} (overrides)"


@contextlib.contextmanager
def blamed_on_overrides(overrides: Overrides | None, source: str) -> Iterator[None]:
    """Re-raise a UserError about an overridden key as one naming the override: its
    flag for ``FlagOverrides``, else ``<source> (overrides)``."""
    try:
        yield
    except UserError as exc:
        if exc.source not in (source, override_source(source)):
            raise
        key = next((k for k in overrides or {} if touches(exc.key, k)), None)
        if key is None:
            raise
        flags = getattr(overrides, "flags", {})
        flag = flags.get(key)
        if flag is None:
            raise UserError(override_source(source), exc.key, exc.reason) from None
        # a bad value of a flag that sets one key (--policy) needs no key; --set, --fabric
        # and a key the scenario has not (--inter-job with one job) name it
        sole = flag != "--set" and list(flags.values()).count(flag) == 1
        value = exc.key == key and not exc.reason.startswith("unknown key")
        raise UserError(flag, None if sole and value else exc.key, exc.reason) from None
