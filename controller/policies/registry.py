"""Policy registry: users select policies by name and add their own with ``@register``."""

from __future__ import annotations

import inspect
from typing import Any

from controller.policies.base import Policy

_CLASSES: dict[str, type[Policy]] = {}  # canonical name -> class
_ALIASES: dict[str, str] = {}  # alias -> canonical name


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make ``cls`` selectable by ``cls.name`` (and its aliases)."""
    if not (inspect.isclass(cls) and issubclass(cls, Policy)):
        raise ValueError(f"policy registry: {cls!r} is not a subclass of Policy")
    if inspect.isabstract(cls):
        raise ValueError(f"policy registry: {cls.__name__} does not implement decide()")
    keys = [cls.name, *cls.aliases]
    for key in keys:
        if not isinstance(key, str) or not key.strip():
            raise ValueError(
                f"policy registry: {cls.__name__} has an empty or non-string name {key!r}"
            )
        owner = _CLASSES.get(_ALIASES.get(key, key))
        if owner is not None and owner is not cls:
            raise ValueError(f"policy registry: name {key!r} is already taken by {owner.__name__}")
    _CLASSES[cls.name] = cls
    for alias in cls.aliases:
        _ALIASES[alias] = cls.name
    return cls


def unregister(name: str) -> None:
    """Remove a registered policy and its aliases (for user code and tests)."""
    cls = _CLASSES.pop(_ALIASES.get(name, name), None)
    if cls is None:
        raise ValueError(f"policy registry: no policy named {name!r}")
    for alias in cls.aliases:
        _ALIASES.pop(alias, None)


def names() -> list[str]:
    """Canonical names of every registered policy, sorted."""
    return sorted(_CLASSES)


def policy_class(name: str) -> type[Policy]:
    """The class registered under ``name`` or an alias; ValueError listing valid names."""
    cls = _CLASSES.get(_ALIASES.get(name, name)) if isinstance(name, str) else None
    if cls is None:
        valid = ", ".join(names())
        aliases = ", ".join(f"{a} (= {c})" for a, c in sorted(_ALIASES.items()))
        extra = f"; aliases: {aliases}" if aliases else ""
        raise ValueError(f"policy: unknown name {name!r}; valid names: {valid}{extra}")
    return cls


def get(name: str, **params: Any) -> Policy:
    """A new policy instance by name; unknown names or parameters give a one-line ValueError."""
    cls = policy_class(name)
    accepted = _accepted_params(cls)
    if accepted is not None:
        unknown = sorted(set(params) - accepted)
        if unknown:
            valid = ", ".join(sorted(accepted)) or "none"
            raise ValueError(
                f"policy {cls.name!r}: unknown parameter(s) {', '.join(unknown)}; valid: {valid}"
            )
    return cls(**params)


def _accepted_params(cls: type[Policy]) -> set[str] | None:
    """Keyword names ``cls.__init__`` accepts, or None when it takes ``**params``."""
    sig = inspect.signature(cls.__init__)
    accepted: set[str] = set()
    for p in list(sig.parameters.values())[1:]:  # skip self
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            accepted.add(p.name)
    return accepted
