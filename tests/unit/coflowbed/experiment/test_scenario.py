"""Scenario validation: the shipped default loads; every kind of bad input fails with
one line naming file, key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from coflowbed.core.errors import UserError
from coflowbed.experiment import folders as rundir
from coflowbed.experiment.scenario import load_scenario
from tests.data import MECHANISM_SCENARIO as MECHANISM


def write(tmp_path, data) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def base() -> dict:
    return yaml.safe_load(MECHANISM.read_text())


def test_default_scenario_loads():
    s = load_scenario(MECHANISM)
    assert (s.plan.spines, s.plan.leaves) == (2, 4)
    assert s.static_levels == {"bulk": 7, "urgent": 0, "metered": 3}
    assert s.static_rates_mbps == {"metered": 20.0}
    assert len(s.dag.coflows) == 3 and s.dag.coflows[1].release_s == 1.0


@pytest.mark.parametrize(
    "mutate, key, reason",
    [
        (lambda d: d.update(colour="red"), "colour", "unknown key"),
        (lambda d: d["fabric"].update(delay_ms=5), "fabric.delay_ms", "netem"),
        (lambda d: d["fabric"].update(loss_pct=1), "fabric.loss_pct", "netem"),
        (lambda d: d.update(levels=9), "levels", "must be <= 8"),
        (
            lambda d: d["workload"]["coflows"][2].update(rate_mbps=-5),
            "workload.coflows[2].rate_mbps",
            "> 0",
        ),
        (
            lambda d: d["workload"]["coflows"][0]["flows"][0].update(dst="h99"),
            "workload.coflows[0].flows[0].dst",
            "unknown host 'h99'",
        ),
        (lambda d: d["fabric"].update(spines=0), "fabric.spines", "must be >= 1"),
        (lambda d: d.update(switch="p4"), "switch", "one of ovs, bmv2"),
        (lambda d: d.update(policy_rates="shaping"), "policy_rates", "one of meters, pacing"),
        (lambda d: d.update(policy="nope"), "policy", "unknown policy 'nope'"),
        (
            lambda d: d["workload"]["coflows"][0].update(level=8),
            "workload.coflows[0].level",
            "<= 7",
        ),
        (
            lambda d: d["workload"]["coflows"][0]["flows"][0].update(bytes=0),
            "workload.coflows[0].flows[0].bytes",
            ">= 1",
        ),
        (lambda d: d["fabric"].pop("spines"), "fabric.spines", "missing"),
        (lambda d: d["fabric"].update(mtu=1499), "fabric.mtu", "must be >= 1500"),
        (lambda d: d["fabric"].update(mtu=9001), "fabric.mtu", "must be <= 9000"),
        (lambda d: d["fabric"].update(mtu=8000.5), "fabric.mtu", "must be an integer"),
        (lambda d: d["fabric"].update(ecmp_seed=-1), "fabric.ecmp_seed", "must be >= 0"),
        (lambda d: d["fabric"].update(ecmp_seed="a"), "fabric.ecmp_seed", "must be an integer"),
    ],
)
def test_bad_scenarios_fail_with_file_key_and_reason(tmp_path, mutate, key, reason):
    data = base()
    mutate(data)
    p = write(tmp_path, data)
    with pytest.raises(UserError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: {key}: ") and reason in msg and "\n" not in msg


def test_fabric_mtu_defaults_to_9000_and_is_kept_in_the_resolved_scenario(tmp_path):
    from coflowbed.experiment.folders import fabric_record, resolved_scenario

    assert load_scenario(MECHANISM).plan.mtu == 9000
    data = base()
    data["fabric"]["mtu"] = 1500
    scen = load_scenario(write(tmp_path, data))
    assert scen.plan.mtu == 1500
    resolved = resolved_scenario(scen)
    assert resolved["fabric"]["mtu"] == 1500
    assert load_scenario(write(tmp_path, resolved)).plan.mtu == 1500  # re-loadable
    assert fabric_record(scen)["mtu"] == 1500


def test_fabric_ecmp_seed_reaches_the_plan_the_model_and_the_run_folder(tmp_path):
    """``fabric.ecmp_seed`` picks the ECMP placement (0, the default: plain CRC-32): it
    is in the plan, the simulator's leaf-spine, the resolved scenario and fabric.json,
    and a plan read back from fabric.json keeps it."""
    from coflowbed.experiment.folders import fabric_record, resolved_scenario
    from coflowbed.sim.fabric import LeafSpine
    from topo.plan import FabricPlan

    assert load_scenario(MECHANISM).plan.ecmp_seed == 0
    data = base()
    data["fabric"]["ecmp_seed"] = 5
    scen = load_scenario(write(tmp_path, data))
    model = LeafSpine.from_plan(scen.plan)
    assert scen.plan.ecmp_seed == 5 and model.ecmp_seed == 5
    assert model.description.endswith(", ECMP seed 5")  # the fidelity block's ``model``
    resolved = resolved_scenario(scen)
    assert resolved["fabric"]["ecmp_seed"] == 5
    assert load_scenario(write(tmp_path, resolved)).plan.ecmp_seed == 5  # re-loadable
    assert FabricPlan.from_dict(fabric_record(scen)).ecmp_seed == 5
    assert "ecmp_seed" not in fabric_record(load_scenario(MECHANISM))


def test_fabric_json_and_versions_record_the_ovs_datapath(monkeypatch, request):
    monkeypatch.setattr(rundir, "detect_datapath", lambda: "system")
    rundir._versions.cache_clear()  # asked once per process: ask again under the patch
    request.addfinalizer(rundir._versions.cache_clear)  # and not keep the patched answer
    scen = load_scenario(MECHANISM)
    assert rundir.fabric_record(scen)["datapath"] == "system"
    assert rundir.versions()["ovs_datapath"] == "system"
    scen.switch = "bmv2"
    assert "datapath" not in rundir.fabric_record(scen)


def test_yaml_syntax_error_names_the_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("fabric:\n  spines: [1,\n")
    with pytest.raises(UserError, match=r"bad.yaml: line \d+: invalid YAML"):
        load_scenario(p)


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match=r"nope.yaml: no such file$"):
        load_scenario(tmp_path / "nope.yaml")


def test_cli_exits_2_with_one_line_and_starts_nothing(tmp_path, capsys):
    from coflowbed.cli.main import main

    data = base()
    data["levels"] = 12
    p = write(tmp_path, data)
    assert main(["run", str(p), "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "levels" in err
    assert not (tmp_path / "res").exists()


PLUGIN = '''
from controller.policies import register
from controller.policies.base import Decision, Policy


@register
class Reversed(Policy):
    """Last arrival first (a user's own policy)."""
    name = "test-reversed-N"

    def decide(self, states, fabric, now):
        return {s.coflow_id: Decision((-s.arrival_seq,)) for s in states}
'''


def test_plugin_policy_is_registered_and_selectable(tmp_path):
    (tmp_path / "mine.py").write_text(PLUGIN.replace("-N", "-1"))
    data = base()
    data.update(plugins=["mine.py"], policy="test-reversed-1")
    for cf in data["workload"]["coflows"]:
        cf.pop("level", None)
    s = load_scenario(write(tmp_path, data))
    assert s.policy == "test-reversed-1" and s.plugins == [str(tmp_path / "mine.py")]


def test_broken_plugin_is_reported_as_bad_input(tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('oops')\n")
    data = base()
    data["plugins"] = ["broken.py"]
    with pytest.raises(
        UserError, match=r"plugins\[0\]: cannot import .*broken.py: RuntimeError: oops"
    ):
        load_scenario(write(tmp_path, data))


RAIL = {"kind": "rail", "hosts": 4, "nics": 2, "spines": 2, "host_bw_mbps": 25}


def test_rail_fabric_places_a_job_on_its_servers_nics(tmp_path):
    """rail-small's shape: 4 servers x 2 NICs; Qwen-MoE-12L PP4 x DP8 with a stage per
    server: PP flows h<s>n<i> -> h<s+1>n<i> (GPU g on NIC g mod 2, same rail)."""
    data = {
        **base(),
        "fabric": RAIL,
        "policy": "fair",
        "workload": {
            "job": "qwen-moe-12l",
            "overrides": {"parallelism": {"pp": 4, "dp": 8, "ep": 8}, "placement.gpus_per_host": 8},
        },
    }
    scen = load_scenario(write(tmp_path, data))
    assert scen.plan.server_names() == ["h1", "h2", "h3", "h4"] and scen.plan.leaves == 2
    pairs = {(f.src, f.dst) for cf in scen.dag.coflows for f in cf.flows}
    assert ("h1n0", "h2n0") in pairs and ("h2n1", "h1n1") in pairs
    assert all(s[-1] == d[-1] for s, d in pairs)  # never across rails


@pytest.mark.parametrize(
    "change, key, reason",
    [
        ({"leaves": 2}, "fabric.leaves", "unknown key"),
        ({"nics": 1}, "fabric.nics", "must be >= 2"),
        ({"nics": None}, "fabric.nics", "missing required key"),
        ({"kind": "torus"}, "fabric.kind", "must be one of"),
    ],
)
def test_bad_rail_fabrics_fail_with_key_and_reason(tmp_path, change, key, reason):
    """Leaf-spine dimensions, one NIC, no NICs, an unknown kind: file, key and reason."""
    data = {**base(), "fabric": {k: v for k, v in {**RAIL, **change}.items() if v is not None}}
    with pytest.raises(UserError, match=rf"{key}: {reason}"):
        load_scenario(write(tmp_path, data))


def test_rail_fabric_on_bmv2_is_refused_before_anything_starts(tmp_path):
    """The BMv2 fabric builds one interface per host: a rail plan is bad input there."""
    data = {**base(), "fabric": RAIL, "switch": "bmv2"}
    with pytest.raises(UserError, match=r"switch: a rail fabric runs on ovs only"):
        load_scenario(write(tmp_path, data))
