"""What the fault tests of both switch kinds share (tests/integration/test_faults.py for
OVS, tests/bmv2/test_bmv2_faults.py for BMv2): a scenario with faults and the ``cross``
coflow, a run through the CLI, and the reroute a leaf-spine link fault must cause."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml

from tests.cli import coflowbed

LEAVES = ("l1", "l2", "l3", "l4")
# Flows from every other leaf to l1's hosts and from l1 out, each on its own connection,
# so that some of them hash onto s1 on every leaf.
CROSS = [("h21", "h11"), ("h22", "h12"), ("h31", "h11"), ("h32", "h12"), ("h42", "h11")]
CROSS += [("h11", "h22"), ("h12", "h42")]


def scenario(
    base: Path,
    tmp: Path,
    name: str,
    faults: list[dict],
    policy: str | None,
    *,
    flow_bytes: int,
    timeout_s: float,
) -> Path:
    """``base`` plus the ``cross`` coflow (``flow_bytes`` per flow) and ``faults``."""
    data = yaml.safe_load(base.read_text())
    data["name"] = name
    if policy is not None:
        data["policy"] = policy
    data["timeout_s"] = timeout_s
    data["workload"]["coflows"].append(
        {
            "id": "cross",
            "arrival_s": 0.3,
            "level": 5,
            "flows": [{"src": s, "dst": d, "bytes": flow_bytes} for s, d in CROSS],
        }
    )
    data["faults"] = faults
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def run(path: Path, out: Path, check: bool = False) -> dict:
    """``coflowbed run`` (must exit 0): its summary, faults.csv rows and controller log."""
    res = coflowbed("run", str(path), "--out", str(out), *([] if check else ["--no-check"]))
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    rows = list(csv.DictReader((out / "faults.csv").open()))
    return {"summary": summary, "rows": rows, "log": (out / "controller.log").read_text()}


def check_reroute(f: dict, log: str) -> None:
    """The fault on l1-s1 went in, was detected, and every leaf confirmed new groups:
    l1 reaches every leaf over s2 only, the others reach l1 over s2 only."""
    assert f["kind"] == "link" and f["target"] == "l1-s1"
    assert f["injected_s"] is not None and f["injected_s"] >= f["at_s"]
    assert f["detected_s"] is not None and 0 <= f["detect_ms"] < 500
    assert f["rerouted_s"] >= f["detected_s"] and 0 <= f["reroute_ms"] < 500
    assert f["leaves_rerouted"] == " ".join(LEAVES), f
    for d in (2, 3, 4):
        assert f"l1: group {d} (to l{d}) over spines [2]" in log
    for leaf in ("l2", "l3", "l4"):
        assert f"{leaf}: group 1 (to l1) over spines [2]" in log


def check_leaf_restart(got: dict, leaf: str, resync_max_ms: float) -> None:
    """A run with one restart of ``leaf`` under SEBF: every coflow finished, the restart
    was detected within 500 ms and resynced within ``resync_max_ms``, the leaf's static
    pipeline is as before and nothing failed to install on it."""
    s = got["summary"]
    assert s["partial"] is False and s["coflows"] == s["coflows_total"] == 4
    (f,) = s["faults"]
    assert f["kind"] == "switch" and f["target"] == leaf and 0 <= f["detect_ms"] < 500
    assert f["resync_ms"] is not None and 0 < f["resync_ms"] < resync_max_ms
    assert f["tables_equal"] is True, f["detail"]
    assert f"{leaf} static pipeline equal to before the restart" in f["detail"]
    assert f"{leaf}: install failed" not in got["log"]
