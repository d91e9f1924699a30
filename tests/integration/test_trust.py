"""What makes an emulated figure trustworthy (root, real Mininet/OVS/os-ken/tc): the
capacity check at bring-up, TCP settings and the segment cap in the host namespaces
(the head start of a flow on an idle link), and the emulated run against its own fluid
model on the shipped LLM scenario.

Run under the fabric lock: ``flock /tmp/coflowbed-fabric.lock .venv/bin/python -m pytest
tests/integration/test_trust.py``.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest
import yaml

from controller.client import ControllerClient
from controller.launcher import start_controller
from tests.cli import SCENARIOS, coflowbed, coflowbed_ok
from topo.hosttcp import GSO_MAX_BYTES, apply_host_gso, apply_host_sysctls, host_sysctls
from topo.net import endpoint_interfaces, start_fabric
from topo.plan import FabricPlan

pytestmark = [pytest.mark.root, pytest.mark.slow]

MB = 1_000_000


def one_coflow_scenario(tmp: Path, name: str, host_mbps: float) -> Path:
    """2 spines x 4 leaves x 1 host at ``host_mbps`` (uplinks twice that: ECMP hashing
    cannot make a spine link the bottleneck): one small coflow, each host to the next leaf."""
    data = {
        "name": name,
        "policy": "static",
        "timeout_s": 120,
        "fabric": {
            "spines": 2,
            "leaves": 4,
            "hosts_per_leaf": 1,
            "host_bw_mbps": host_mbps,
            "fabric_bw_mbps": 2 * host_mbps,
        },
        "workload": {
            "coflows": [
                {
                    "id": "c",
                    "level": 0,
                    "flows": [
                        {"src": f"h{lf}1", "dst": f"h{lf % 4 + 1}1", "bytes": MB}
                        for lf in range(1, 5)
                    ],
                }
            ]
        },
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_light_scenario_records_its_calibration_and_gets_no_warning(tmp_path):
    res = coflowbed_ok("run", one_coflow_scenario(tmp_path, "light", 20), "--out", tmp_path / "run")
    cal = json.loads((tmp_path / "run" / "summary.json").read_text())["calibration"]
    assert cal["pairs"] == 4 and cal["nominal_mbps"] == 80 and cal["peak_offered_mbps"] == 80
    assert 0.8 * 80 <= cal["measured_mbps"] <= 80  # 80 Mbit/s in all: well inside 2 cores
    assert cal["warning"] is None and "capacity:" not in res.stderr
    assert set(cal["per_host_mbps"]) == {"h11", "h21", "h31", "h41"}


def test_an_overloaded_scenario_warns_before_traffic_starts(tmp_path):
    """4 hosts at 5 Gbit/s each ask 20 Gbit/s of 2 cores: the warning comes first."""
    scen = one_coflow_scenario(tmp_path, "heavy", 5000)
    res = coflowbed("-v", "run", scen, "--out", tmp_path / "run")  # -v: each coflow's line
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stderr.splitlines()
    warn = [
        i for i, line in enumerate(lines) if "capacity: the scenario may offer 20000 Mbit/s" in line
    ]
    done = [i for i, line in enumerate(lines) if "coflow c" in line and "done" in line]
    assert len(warn) == 1 and done and warn[0] < done[0]
    assert "Mbit/s would fit" in lines[warn[0]]
    cal = json.loads((tmp_path / "run" / "summary.json").read_text())["calibration"]
    assert cal["warning"] and cal["measured_mbps"] < 0.8 * 20000


EP_FLOW_BYTES = 169_304  # an expert-parallel flow of the default scenario
IDLE_MBPS = 50
HEAD_START_MAX = 26_000  # bytes: 15.6-17.5 KB measured capped, 34-66 KB uncapped


def idle_link_scenario(tmp: Path) -> Path:
    """A 10 KB warm-up per host pair, then at 0.5 s one EP-sized flow on each of three
    idle same-leaf pairs (50 Mbit/s links, MTU 9000)."""
    pairs = [(f"h{lf}1", f"h{lf}2") for lf in (1, 2, 3)]
    flow = lambda src, dst, size: {"src": src, "dst": dst, "bytes": size}  # noqa: E731
    data = {
        "name": "idle-link",
        "policy": "static",
        "timeout_s": 120,
        "fabric": {
            "spines": 2,
            "leaves": 4,
            "hosts_per_leaf": 2,
            "host_bw_mbps": IDLE_MBPS,
            "fabric_bw_mbps": IDLE_MBPS,
            "mtu": 9000,
        },
        "workload": {
            "coflows": [
                {"id": "warm", "level": 0, "flows": [flow(s, d, 10_000) for s, d in pairs]},
            ]
            + [
                {"id": f"ep{i}", "arrival_s": 0.5, "level": 0, "flows": [flow(s, d, EP_FLOW_BYTES)]}
                for i, (s, d) in enumerate(pairs)
            ]
        },
    }
    path = tmp / "idle-link.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_flow_starting_on_an_idle_link_gets_no_more_than_a_small_head_start(tmp_path):
    """With the kernel's 64 KB GSO segments HTB let a 169 KB flow on an idle 50 Mbit/s
    link finish 34-66 KB ahead of the link rate (16.6-21.6 ms instead of 27.1 ms), which
    made the default scenario's EP coflows 16 % faster than the fluid model; host
    segments capped at two jumbo frames (``topo.hosttcp.GSO_MAX_BYTES``) leave
    15.6-17.5 KB of it (the ports' 2 ms burst and one segment).  A busier machine only
    makes flows slower, never faster."""
    coflowbed_ok("run", idle_link_scenario(tmp_path), "--out", tmp_path / "run")
    rows = list(csv.DictReader((tmp_path / "run" / "flows.csv").open()))
    ahead = {
        r["coflow_id"]: EP_FLOW_BYTES
        - (float(r["finish_s"]) - float(r["start_s"])) * IDLE_MBPS * 1e6 / 8
        for r in rows
        if r["coflow_id"].startswith("ep")
    }
    assert len(ahead) == 3 and max(ahead.values()) <= HEAD_START_MAX, ahead


def test_host_namespaces_keep_cwnd_after_idle_and_the_root_namespace_is_untouched(tmp_path):
    plan = FabricPlan(spines=1, leaves=2, hosts_per_leaf=1, host_bw_mbps=50, fabric_bw_mbps=50)
    (tmp_path / "plan.json").write_text(plan.to_json())
    wanted = host_sysctls()
    procs = {k: Path("/proc/sys", *k.split(".")) for k in wanted}
    before = {k: p.read_text() for k, p in procs.items()}
    ctl = start_controller(tmp_path / "plan.json", tmp_path)
    try:
        fab = start_fabric(plan, tmp_path, ctl.of_port)
        try:
            with ControllerClient(ctl.api_socket) as client:
                client.wait_ready(60)
            apply_host_sysctls(fab.host(h).pid for h in plan.host_names())
            apply_host_gso(fab.host_nics())
            nics = endpoint_interfaces(plan)
            for h in plan.host_names():
                for key, proc in procs.items():
                    assert fab.host(h).cmd("cat", str(proc)).strip() == wanted[key]
                shown = fab.host(h).cmd("ip", "-d", "link", "show", "dev", nics[h])
                assert f"gso_max_size {GSO_MAX_BYTES} " in shown, shown
            assert {k: p.read_text() for k, p in procs.items()} == before
        finally:
            fab.stop()
    finally:
        ctl.stop()


REPEATS = 3  # small-moe runs per policy, interleaved: the tests read their median


@pytest.fixture(scope="module")
def small_moe(tmp_path_factory) -> dict[str, list[dict]]:
    """small-moe under fair and hermod, REPEATS runs each interleaved in one compare
    (fair hermod fair hermod ...), summaries by policy in run order."""
    out = tmp_path_factory.mktemp("small-moe")
    coflowbed_ok(
        "compare",
        SCENARIOS / "small-moe.yaml",
        "--policies",
        "fair,hermod",
        "--repeat",
        str(REPEATS),
        "--out",
        out,
        timeout=900 * REPEATS,
    )
    return {
        p: [
            json.loads((out / p / f"r{i}" / "summary.json").read_text())
            for i in range(1, REPEATS + 1)
        ]
        for p in ("fair", "hermod")
    }


@pytest.mark.parametrize("policy", ["fair", "hermod"])
def test_small_moe_emulated_iteration_is_within_10_percent_of_the_fluid_model(small_moe, policy):
    """The emulator's own costs (forwarding on 2 cores, per-flow set-up, controller round
    trips) may lengthen an iteration by at most 10 %: measured 1.03-1.08 here at MTU 9000
    with connections set up before the iteration (1.14-1.23 before).  The median of the
    interleaved runs is held to it: on this shared 2-core machine one run in a few lands
    past it when another job takes a core (CI: hermod 1.144 once, at 0.78 of nominal
    capacity; 1.03-1.10 at load 2-6), which is the machine, not the emulator."""
    runs = small_moe[policy]
    for s in runs:
        fid = s["fidelity"]
        assert fid["coflows_compared"] == fid["coflows_total"] and not fid["partial"]
    ratios = [s["fidelity"]["iteration_ratio"] for s in runs]
    assert 0.9 <= statistics.median(ratios) <= 1.10, [_conditions(s) for s in runs]


def test_small_moe_hermod_speedup_matches_the_fluid_model_within_5_percent(small_moe):
    """The emulator must not bias the comparison it exists to make: Hermod's speed-up over
    fair, emulated (median iteration of each policy's runs), within 5 % of the same
    speed-up in the fluid model (the 2 runs' costs differed by policy before: 1.35x
    emulated vs 1.25x simulated)."""
    fair, hermod = small_moe["fair"], small_moe["hermod"]
    emu = _median(fair, "iteration_time_s") / _median(hermod, "iteration_time_s")
    sim = _median(fair, "sim_iteration_time_s") / _median(hermod, "sim_iteration_time_s")
    conditions = [_conditions(s) for s in fair + hermod]
    assert abs(emu / sim - 1) <= 0.05, (emu, sim, conditions)


@pytest.mark.parametrize("policy", ["fair", "hermod"])
@pytest.mark.parametrize("ctype", ["EP", "PP", "DP"])
def test_small_moe_each_kind_of_coflow_matches_the_model(small_moe, policy, ctype):
    """An iteration ratio near 1 can hide one kind running slow and another fast, so each
    kind is held on its own: the median over the runs of the summed measured / simulated
    CCT of the EP (all-to-all), PP (send/recv) and DP (reduce-scatter, all-gather)
    coflows within 15 %.  Measured 0.98-1.05 for EP and DP (2026-12-06, 3 + 3 runs); PP
    0.98-1.04 since every cross-leaf flow crosses the model's spine (ECMP slots;
    1.07-1.67 under Hermod before, when OVS hashed: docs/fabric.md, "One spine per flow
    in both")."""
    by_type = [s["fidelity"]["cct_sum_ratio_by_type"] for s in small_moe[policy]]
    assert all({"EP", "PP", "DP"} <= b.keys() for b in by_type), by_type
    median = statistics.median(b[ctype] for b in by_type)
    assert 0.85 <= median <= 1.15, (ctype, by_type, [_conditions(s) for s in small_moe[policy]])


@pytest.mark.parametrize("policy", ["fair", "hermod"])
def test_small_moe_spine_links_carry_the_bytes_the_model_places_on_them(small_moe, policy):
    """Switch counters against the model's ECMP placement (``coflowbed.analysis.placement``): on
    every leaf-spine link the model loads, the bytes its port sent / the payload the
    model puts there, in every run.  Headers on jumbo frames and the ACKs of flows the
    other way make it 1.005-1.03, a link's retransmissions a little more: measured
    1.005-1.090 (2026-12-06).  With OVS hashing the connections instead, links carried
    0.004-2.04x the model's bytes."""
    ranges = [s["fidelity"]["spine_link_ratio"] for s in small_moe[policy]]
    assert all(r is not None and 0.98 <= r[0] and r[1] <= 1.2 for r in ranges), ranges
    conns = [s["connections"] for s in small_moe[policy]]
    assert all(c["ecmp"].startswith("source-port slots") and c["steered_flows"] for c in conns)


def _median(runs: list[dict], key: str) -> float:
    """The median over runs of a summary figure (``sim_*``: of its fidelity block)."""
    return statistics.median(s["fidelity"][key] if key.startswith("sim_") else s[key] for s in runs)


def _conditions(summary: dict) -> str:
    """What a failed fidelity bound should be read with: the run's calibration (the
    machine's capacity at that moment) and what TCP had to send again."""
    cal = summary.get("calibration") or {}
    return (
        f"{summary['policy']}: iteration ratio {summary['fidelity']['iteration_ratio']:.3f}, "
        f"calibration {cal.get('fraction')} of nominal, "
        f"retransmitted {summary.get('retransmitted')}"
    )
