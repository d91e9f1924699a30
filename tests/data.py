"""Paths of the data and scenarios shipped in the repository (shared test helper)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FB_TRACE = REPO / "data" / "FB2010-1Hr-150-0.txt"
SCENARIOS = REPO / "coflowbed" / "scenarios"
MECHANISM_SCENARIO = SCENARIOS / "mechanism.yaml"

# 2 leaves x 2 hosts at 80 Mbit/s = 1e7 B/s.  hi (level 0) and lo (level 3) both leave
# h11 at t=0: hi alone 1e7 B -> 1 s; lo waits behind it, ends at 2 s.
HI_LO_SCENARIO = """\
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 2, host_bw_mbps: 80}
levels: 4
policy: static
workload:
  coflows:
    - {id: hi, level: 0, flows: [{src: h11, dst: h21, bytes: 10000000}]}
    - {id: lo, level: 3, flows: [{src: h11, dst: h22, bytes: 10000000}]}
"""
