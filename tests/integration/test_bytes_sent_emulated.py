"""A policy that ranks by ``bytes_sent`` sees it on the emulated fabric (root): the
examples' plugin ``pp-then-least-sent`` (declares ``reads_bytes_sent``) run emulated
and simulated on one scenario, through the command line.

Scenario (2 spines, 2 leaves, 2 hosts per leaf, 100 Mbit/s): 'big' (20 MB, h11 -> h21)
from 0 s; 'late' (10 MB, h12 -> h21) released at 1 s, when 'big' has sent about 12 MB.
Least sent first puts 'late' ahead of 'big' at h21's downlink, so 'late' finishes first
(simulated: at about 1.8 s, 'big' at 2.4 s).  An emulator that left ``bytes_sent`` at 0
ranks the two by arrival instead, and 'big' finishes first.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from coflowbed.results.files import read_coflows_csv
from tests.cli import coflowbed_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "examples" / "my_policy.py"
FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_bw_mbps": 100, "fabric_bw_mbps": 100}
MB = 1_000_000


def scenario(tmp: Path) -> Path:
    """The two-coflow scenario of the module docstring, scheduled by the plugin."""
    data = {
        "name": "least-sent",
        "fabric": FABRIC,
        "levels": 8,
        "plugins": [str(PLUGIN)],
        "policy": "pp-then-least-sent",
        "timeout_s": 90,
        "workload": {
            "coflows": [
                {
                    "id": "big",
                    "arrival_s": 0,
                    "flows": [{"src": "h11", "dst": "h21", "bytes": 20 * MB}],
                },
                {
                    "id": "late",
                    "arrival_s": 1,
                    "flows": [{"src": "h12", "dst": "h21", "bytes": 10 * MB}],
                },
            ]
        },
    }
    path = tmp / "least-sent.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def coflows(cmd: str, path: Path, out: Path) -> dict[str, dict]:
    """``coflowbed CMD`` (run or simulate) of ``path``; its coflows.csv rows by id."""
    coflowbed_ok(cmd, path, "--out", out, timeout=300)
    assert json.loads((out / "summary.json").read_text())["partial"] is False
    return {r["coflow_id"]: r for r in read_coflows_csv(out / "coflows.csv")}


def test_the_emulated_plugin_ranks_by_the_bytes_sent_as_the_model_does(tmp_path):
    path = scenario(tmp_path)
    sim = coflows("simulate", path, tmp_path / "sim")
    emu = coflows("run", path, tmp_path / "emu")
    assert sim["late"]["finish_s"] < sim["big"]["finish_s"], sim  # the model's order
    assert emu["late"]["finish_s"] < emu["big"]["finish_s"], emu
    # 'big''s last rank, (1, bytes sent, arrival): the counters' bytes (headers included)
    # as of the last poll before 'late' completed; 0 if the emulator never set them
    _, sent, _ = ast.literal_eval(emu["big"]["rank"])
    assert 5 * MB < sent <= 1.1 * 20 * MB, emu["big"]["rank"]
