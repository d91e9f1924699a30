"""Errors the user can fix: reported as one line, exit code 2, nothing started.

``UserError`` lives in ``workload.errors`` (the lowest layer that raises it); it is
re-exported here so that ``from coflowbed.core.errors import UserError`` keeps working."""

from __future__ import annotations

from workload.errors import UserError

__all__ = ["UserError"]
