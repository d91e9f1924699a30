"""Scenario ``sim_fabric``: sizing to the job, oversubscription, placement order."""

from __future__ import annotations

import pytest
import yaml

from coflowbed.core.errors import UserError
from coflowbed.experiment.overrides import FlagOverrides
from coflowbed.experiment.scenario import load_scenario, scenario_from_raw
from coflowbed.experiment.simfabric import SimFabric, parse_fabric_flag
from tests.data import REPO

SHIPPED = REPO / "coflowbed" / "scenarios"
BASE = {
    "fabric": {"spines": 1, "leaves": 1, "hosts_per_leaf": 2, "host_bw_mbps": 10},
    "policy": "fair",
    "workload": {"job": "tiny-moe"},  # 8 hosts
}


def load(tmp_path, **sim):
    return scenario_from_raw({**BASE, "sim_fabric": sim}, tmp_path / "s.yaml")


def test_job_is_placed_on_the_sized_sim_fabric(tmp_path):
    scen = load(tmp_path, host_gbps=100, hosts_per_leaf=3, spines=2)
    assert scen.sim_fabric is not None and scen.sim_fabric.hosts == 9  # 8 -> 3 whole leaves
    used = {f.src for cf in scen.dag.coflows for f in cf.flows}
    assert used <= set(scen.sim_fabric.host_names()) and "h1_1" in used
    model = scen.sim_fabric.model()
    assert model.host_bps == 100e9 and model.fabric_bps == pytest.approx(150e9)


def test_sim_fabric_ecmp_seed_reaches_the_model(tmp_path):
    scen = load(tmp_path, host_gbps=100, hosts_per_leaf=4, spines=2, ecmp_seed=3)
    assert scen.sim_fabric is not None and scen.sim_fabric.model().ecmp_seed == 3
    rail = load(tmp_path, kind="rail", host_gbps=100, hosts=4, nics=2, slots=2, spines=2)
    assert rail.sim_fabric is not None and rail.sim_fabric.model().ecmp_seed == 0
    with pytest.raises(UserError, match=r"sim_fabric\.ecmp_seed: must be >= 0"):
        load(tmp_path, host_gbps=1, ecmp_seed=-2)


def test_oversubscription_divides_the_core():
    fab = SimFabric("leafspine", 100, 32, 16, 4, oversubscription=4)
    assert fab.core_gbps == pytest.approx(100) and fab.leaves == 2


def test_spread_placement_puts_neighbours_on_other_leaves():
    fab = SimFabric("leafspine", 1, 6, 3, 1, placement="spread")
    assert fab.job_hosts() == ["h1_1", "h2_1", "h1_2", "h2_2", "h1_3", "h2_3"]
    assert SimFabric("leafspine", 1, 6, 3, 1).job_hosts()[:2] == ["h1_1", "h1_2"]


def test_unknown_and_contradictory_keys(tmp_path):
    with pytest.raises(UserError, match=r"sim_fabric\.rails: unknown"):
        load(tmp_path, host_gbps=1, rails=8)
    with pytest.raises(UserError, match=r"sim_fabric\.oversubscription: give fabric_gbps"):
        load(tmp_path, host_gbps=1, fabric_gbps=1, oversubscription=2)


def test_emulated_run_refuses_a_sim_fabric(tmp_path):
    from coflowbed.emulation.precheck import check_can_run

    with pytest.raises(UserError, match="sim_fabric: simulator only"):
        check_can_run(load(tmp_path, host_gbps=1, kind="bigswitch"))


def test_rail_sim_fabric_slots_and_model(tmp_path):
    """tiny-moe needs 8 one-GPU hosts: 2 slots per server -> 4 servers; spread puts slot
    0 of every server first; the model is a rail of 4 servers x 2 NICs whose core
    defaults to 4 NICs x 10 Gbit/s over 2 spines = 20 Gbit/s."""
    scen = load(tmp_path, kind="rail", host_gbps=10, nics=2, slots=2, spines=2, placement="spread")
    fab = scen.sim_fabric
    assert (
        fab is not None
        and fab.hosts == 4
        and fab.job_hosts()[:5] == ["h1s0", "h2s0", "h3s0", "h4s0", "h1s1"]
    )
    model = fab.model()
    assert model.servers == ("h1", "h2", "h3", "h4") and model.fabric_bps == pytest.approx(20e9)
    used = {f.src for cf in scen.dag.coflows for f in cf.flows}
    assert used <= set(model.hosts)


def test_rail_keys_are_strict(tmp_path):
    """Leaf-spine keys on a rail, rail keys on a leaf-spine, and bad values: one line each."""
    with pytest.raises(UserError, match=r"sim_fabric\.hosts_per_leaf: not a key of a rail"):
        load(tmp_path, kind="rail", host_gbps=1, hosts_per_leaf=2)
    with pytest.raises(UserError, match=r"sim_fabric\.nics: not a key of a leafspine"):
        load(tmp_path, host_gbps=1, nics=2)
    with pytest.raises(UserError, match=r"sim_fabric\.nics: must be >= 1"):
        load(tmp_path, kind="rail", host_gbps=1, nics=0)


@pytest.mark.parametrize("name", ["thesis-qwen-moe-12l", "thesis-gpt3-13b"])
def test_thesis_scenarios_are_the_4x2_rail_testbed(name):
    """4 servers x 2 NICs at 100G, 200G core; a stage per server, so every flow is PP
    from server s to s+1 (or back) on one rail: h<s>n<i> <-> h<s±1>n<i>."""
    scen = load_scenario(SHIPPED / f"{name}.yaml")
    model = scen.sim_fabric.model()
    assert (model.servers, model.nics, model.spines) == (("h1", "h2", "h3", "h4"), 2, 2)
    assert (model.host_bps, model.fabric_bps) == (100e9, 200e9)
    flows = [f for cf in scen.dag.coflows for f in cf.flows]
    assert flows and all(f.src[-1] == f.dst[-1] for f in flows)
    assert all(abs(int(f.src[1]) - int(f.dst[1])) == 1 for f in flows)


# --fabric: one grammar for every command, parsed by parse_fabric_flag


@pytest.mark.parametrize(
    ("text", "kind", "dims", "host_bps", "core_bps"),
    [
        ("leafspine", "leafspine", (), None, None),
        ("bigswitch", "bigswitch", (), None, None),
        ("2x4x3", "leafspine", (2, 4, 3), None, None),
        ("2x4x3@100Mbps", "leafspine", (2, 4, 3), 100e6, None),
        ("leafspine:2x4x3@100Gbps/200Gbps", "leafspine", (2, 4, 3), 100e9, 200e9),
        ("rail:4x2x1@25Gbps", "rail", (4, 2, 1), 25e9, None),
        ("rail:4x2x1:25Gbps/50Gbps", "rail", (4, 2, 1), 25e9, 50e9),  # older spelling
        ("bigswitch:150@1Gbps", "bigswitch", (150,), 1e9, None),
        ("bigswitch:150x1Gbps", "bigswitch", (150,), 1e9, None),  # older spelling
        ("fattree:16@100Gbps", "fattree", (16,), 100e9, None),
    ],
)
def test_the_fabric_grammar(text, kind, dims, host_bps, core_bps):
    flag = parse_fabric_flag(text)
    assert (flag.kind, flag.dims, flag.host_bps, flag.core_bps) == (kind, dims, host_bps, core_bps)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "leafspine:4x2x2:100Mbps",
            "the spines now come first, as in a scenario's fabric keys: "
            "write leafspine:2x4x2@100Mbps",
        ),
        ("torus", "expected KIND, or [leafspine:]SxLxH[@RATE[/RATE]] (spines x leaves x hosts"),
        ("2x4", "expected leafspine:SxLxH, sizes >= 1"),
        ("rail:4x0x2@1Gbps", "expected rail:HxNxS, sizes >= 1"),
        ("bigswitch:8@fast", "rate 'fast' must look like"),
        ("bigswitch:8@1Gbps/2Gbps", "expected bigswitch:N@RATE"),
    ],
)
def test_a_bad_fabric_is_one_line_naming_the_flag(text, says):
    with pytest.raises(UserError) as info:
        parse_fabric_flag(text)
    assert str(info.value) == f"--fabric: {text}: {info.value.reason}" and says in str(info.value)


def test_sizes_follow_the_scenario_keys_order():
    leafspine = parse_fabric_flag("2x4x3@10Gbps").sim_fabric()
    assert (leafspine.spines, leafspine.leaves, leafspine.hosts_per_leaf) == (2, 4, 3)
    assert parse_fabric_flag("2x4x3@100Mbps").emulated_overrides() == {
        "fabric.kind": "leafspine",
        "fabric.spines": 2,
        "fabric.leaves": 4,
        "fabric.hosts_per_leaf": 3,
        "fabric.hosts": None,
        "fabric.nics": None,
        "fabric.host_bw_mbps": 100.0,
    }
    rail = parse_fabric_flag("rail:4x2x1@1Gbps").sim_fabric()
    assert (rail.hosts, rail.nics, rail.spines, rail.core_gbps) == (4, 2, 1, 1.0)


def test_a_flag_replaces_a_scenarios_sim_fabric(tmp_path):
    raw = {**BASE, "sim_fabric": {"kind": "rail", "host_gbps": 100, "nics": 2, "slots": 2}}
    flag = parse_fabric_flag("leafspine:2x2x4")  # no rate: the sim_fabric's
    scen = load_scenario(write_yaml(tmp_path, raw), FlagOverrides(flag.sim_overrides(), {}))
    fab = scen.sim_fabric
    assert fab is not None and (fab.kind, fab.spines, fab.hosts, fab.hosts_per_leaf) == (
        "leafspine",
        2,
        8,
        4,
    )
    assert fab.host_gbps == 100 and fab.slots == 1
    big = parse_fabric_flag("bigswitch").sim_overrides()  # sized to the job's 8 hosts
    fab = load_scenario(write_yaml(tmp_path, raw), FlagOverrides(big, {})).sim_fabric
    assert fab is not None and (fab.kind, fab.hosts) == ("bigswitch", 8)


def write_yaml(tmp_path, raw) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)
