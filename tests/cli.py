"""Running the ``coflowbed`` command line from integration tests, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "coflowbed" / "scenarios"


def coflowbed(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m coflowbed ARGS`` in the repository; output captured."""
    return subprocess.run(
        [sys.executable, "-m", "coflowbed", *map(str, args)],
        cwd=REPO,
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def coflowbed_ok(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Like ``coflowbed`` but the command must succeed (its stderr tail on failure)."""
    res = coflowbed(*args, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return res
