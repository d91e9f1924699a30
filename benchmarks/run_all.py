"""Run every benchmark script (``bench_*.py`` beside this file) in turn and print its
figures; root-only ones are skipped with a note when not root.  ``make bench``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEEDS_ROOT = {"bench_fabric.py"}
BY_HAND = {"bench_soak.py"}  # tens of minutes of fabric runs: run it on its own


def main() -> int:
    """Run each benchmark; exit 1 if any failed."""
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name in BY_HAND:
            print(f"== {script.name}: skipped (run by hand, see its docstring)")
            continue
        if script.name in NEEDS_ROOT and os.geteuid() != 0:
            print(f"== {script.name}: skipped (needs root)")
            continue
        print(f"== {script.name}", flush=True)
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(
            f"== {script.name}: exit {res.returncode} after {time.monotonic() - t0:.1f} s\n",
            flush=True,
        )
        if res.returncode:
            failed.append(script.name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
