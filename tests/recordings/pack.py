"""Pack a run's scheduler event log into a test recording:

    .venv/bin/python tests/recordings/pack.py RUN_DIR NAME [--events N]

writes tests/recordings/scheduler/NAME.jsonl.gz: a header line (the run's fabric plan,
levels, scenario and policy), then the run's first N events of
``scheduler-events.jsonl`` (open_job first)."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent / "scheduler"


def main() -> None:
    """Read the run folder, write the recording."""
    p = argparse.ArgumentParser()
    p.add_argument("run", type=Path)
    p.add_argument("name")
    p.add_argument("--events", type=int, default=200)
    a = p.parse_args()
    summary = json.loads((a.run / "summary.json").read_text())
    header = {
        "fabric": json.loads((a.run / "fabric.json").read_text()),
        "levels": summary["levels"],
        "scenario": summary["scenario"],
        "policy": summary["policy"],
        "partial": summary["partial"],
    }
    events = (a.run / "scheduler-events.jsonl").read_text().splitlines()[: a.events]
    HERE.mkdir(exist_ok=True)
    out = HERE / f"{a.name}.jsonl.gz"
    out.write_bytes(
        gzip.compress("\n".join([json.dumps(header), *events]).encode() + b"\n", 9, mtime=0)
    )
    print(f"{out}: {len(events)} events, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
