"""Rail-optimised fabric on the emulator (root, real Mininet/OVS/os-ken/tc): every
coflow completes and each NIC endpoint's traffic leaves on its own NIC, onto its own
rail's leaf, crossing a spine only between rails (switch port counters).

Fabric: 2 servers x 2 NICs (h1n0, h2n0 on leaf l1 ports 1-2; h1n1, h2n1 on l2), 2
spines (leaf port 3 -> s1, 4 -> s2), 50 Mbit/s NICs, 100 Mbit/s leaf-spine links.
Run it under the fabric lock: flock /tmp/coflowbed-fabric.lock pytest tests/integration/test_rail.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from coflowbed.results.files import read_coflows_csv, read_csv_rows
from tests.cli import coflowbed

pytestmark = [pytest.mark.root, pytest.mark.slow]

FABRIC = {
    "kind": "rail",
    "hosts": 2,
    "nics": 2,
    "spines": 2,
    "host_bw_mbps": 50,
    "fabric_bw_mbps": 100,
}
MB = 1_000_000
ETH_IP_TCP_HEADER = 14 + 20 + 32  # Ethernet + IPv4 + TCP with timestamps


def flow(src: str, dst: str, nbytes: int) -> dict:
    return {"src": src, "dst": dst, "bytes": nbytes}


@pytest.fixture(scope="module")
def rail_run(tmp_path_factory) -> dict:
    """same0 on rail 0, same1 on rail 1, cross from rail 0 (h1n0) to rail 1 (h2n1)."""
    tmp = tmp_path_factory.mktemp("rail")
    cfs = [
        {"id": "same0", "level": 0, "flows": [flow("h1n0", "h2n0", 5 * MB)]},
        {"id": "same1", "level": 0, "flows": [flow("h1n1", "h2n1", 5 * MB)]},
        {"id": "cross", "level": 0, "flows": [flow("h1n0", "h2n1", 2 * MB)]},
    ]
    data = {
        "name": "rail",
        "fabric": FABRIC,
        "policy": "static",
        "timeout_s": 90,
        "workload": {"coflows": cfs},
    }
    path = tmp / "rail.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp / "out"
    res = coflowbed("run", str(path), "--out", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    again = {r["coflow_id"]: r["retrans_bytes"] for r in read_csv_rows(out / "flows.csv")}
    return {
        "out": out,
        "counters": json.loads((out / "counters.json").read_text()),
        "again": again,
    }


def payload(counters: dict, switch: str, port: int, key: str) -> int:
    """Bytes of data through ``switch`` port ``port`` during the iteration (``ports``
    has bring-up and calibration taken off), headers taken off."""
    now = counters["ports"][switch][str(port)]
    return now[f"{key}_bytes"] - now[f"{key}_packets"] * ETH_IP_TCP_HEADER


def test_every_coflow_completes(rail_run):
    """The run is complete and all three coflows finished."""
    """A flow of a coflows workload."""
    summary = json.loads((rail_run["out"] / "summary.json").read_text())
    assert summary["partial"] is False
    rows = read_coflows_csv(rail_run["out"] / "coflows.csv")
    assert {r["coflow_id"] for r in rows if r["finish_s"] is not None} == {
        "same0",
        "same1",
        "cross",
    }


def test_each_nic_sends_its_own_flows_on_its_own_leaf(rail_run):
    """h1n0 (l1 port 1) sends same0 + cross = 7 MB; h1n1 (l2 port 1) same1's 5 MB; the
    receiving ports: h2n0 (l1 port 2) 5 MB, h2n1 (l2 port 2) 5 + 2 MB.  Upstream of a
    queue that drops (h2n1's, where same1 and cross meet at 50 Mbit/s), a port also
    carries what TCP sent again: the senders' own count of it (``retrans_bytes`` in
    flows.csv, from tcpi_bytes_retrans) is added there.  The receiving ports carry each
    byte once."""
    c, again = rail_run["counters"], rail_run["again"]
    assert payload(c, "l1", 1, "rx") == pytest.approx(
        7 * MB + again["same0"] + again["cross"], rel=0.02
    )
    assert payload(c, "l2", 1, "rx") == pytest.approx(5 * MB + again["same1"], rel=0.02)
    assert payload(c, "l1", 2, "tx") == pytest.approx(5 * MB, rel=0.02)
    assert payload(c, "l2", 2, "tx") == pytest.approx(7 * MB, rel=0.02)


def test_only_the_cross_rail_flow_crosses_a_spine(rail_run):
    """l1's spine ports (3, 4) carry just cross's 2 MB out, and l2's bring it in, each
    with what TCP sent again of cross (its drops are at h2n1's queue, after the spine)."""
    c, again = rail_run["counters"], rail_run["again"]
    up = sum(payload(c, "l1", p, "tx") for p in (3, 4))
    down = sum(payload(c, "l2", p, "rx") for p in (3, 4))
    crossed = 2 * MB + again["cross"]
    assert up == pytest.approx(crossed, rel=0.02) and down == pytest.approx(crossed, rel=0.02)


def test_llm_rail_scenario_keeps_pp_on_its_rail(tmp_path):
    """rail-small (Qwen-MoE-12L, a stage per server): every coflow completes, and PP
    GPU g -> GPU g stays on rail g mod 2: no data through any spine."""
    out = tmp_path / "out"
    scen = Path(__file__).resolve().parents[2] / "coflowbed" / "scenarios" / "rail-small.yaml"
    res = coflowbed("run", str(scen), "--out", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is False
    c = json.loads((out / "counters.json").read_text())
    spine = sum(
        max(0, payload(c, s, p, k)) for s in ("s1", "s2") for p in (1, 2) for k in ("rx", "tx")
    )
    leaf_in = sum(payload(c, lf, p, "rx") for lf in ("l1", "l2") for p in (1, 2, 3, 4))
    assert leaf_in > 1_000_000 and spine < 0.001 * leaf_in
