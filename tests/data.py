"""Paths of the data and scenarios shipped in the repository (shared test helper)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FB_TRACE = REPO / "data" / "FB2010-1Hr-150-0.txt"
SCENARIOS = REPO / "coflowbed" / "scenarios"
MECHANISM_SCENARIO = SCENARIOS / "mechanism.yaml"
