"""Scheduling policies: pure functions from coflow state to ranks (and rates).

Select one by name with ``get(name, **params)``; list them with ``names()``; add your own
by decorating a ``Policy`` subclass with ``@register``.  See docs/policies.md.
"""

from controller.policies.base import CoflowState, Decision, FabricView, Policy, Rank
from controller.policies.registry import get, names, policy_class, register, unregister

# isort: split
# Importing the built-in policies registers them.
from controller.policies import dclas, hermod, llm, sebf, simple, sincronia  # noqa: F401

__all__ = [
    "CoflowState",
    "Decision",
    "FabricView",
    "Policy",
    "Rank",
    "get",
    "names",
    "policy_class",
    "register",
    "unregister",
]
