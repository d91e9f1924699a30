"""scripts/install.sh's optional extras: COFLOWBED_EXTRAS unset, set, and wrong.

The script runs under ``set -u``; an unset variable once stopped every fresh install
(CI's ``make lint`` runs it without the variable).  The function is run alone, cut from
the script, so the test needs neither root nor the network.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install.sh"


def _install_extras(extras: str | None) -> subprocess.CompletedProcess[str]:
    """Run install.sh's ``install_extras`` under its own ``set -euo pipefail``."""
    text = SCRIPT.read_text()
    start = text.index("install_extras() {")
    body = text[start : text.index("\n}\n", start) + 3]
    env = {k: v for k, v in os.environ.items() if k != "COFLOWBED_EXTRAS"}
    if extras is not None:
        env["COFLOWBED_EXTRAS"] = extras
    script = f"set -euo pipefail\nvenv=/nonexistent\n{body}install_extras\n"
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False
    )


def test_unset_extras_install_nothing_and_succeed() -> None:
    done = _install_extras(None)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_empty_extras_install_nothing_and_succeed() -> None:
    done = _install_extras("")
    assert done.returncode == 0, done.stderr


def test_unknown_extra_is_refused_naming_it() -> None:
    done = _install_extras("gpu")
    assert done.returncode == 2
    assert "unknown extra 'gpu'" in done.stderr
