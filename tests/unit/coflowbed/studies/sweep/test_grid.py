"""Grid expansion: points x policies x seeds, dotted keys set in the scenario."""

from __future__ import annotations

import yaml

from coflowbed.studies.sweep.grid import expand, resolved, run_id, set_key
from coflowbed.studies.sweep.spec import load_sweep
from tests.unit.coflowbed.studies.sweep.conftest import TINY, write


def test_expansion_is_the_product_in_file_order(tiny_sweep, tmp_path):
    runs = expand(load_sweep(tiny_sweep), tmp_path)
    assert len(runs) == 2 * 2 * 2
    first = runs[0]
    assert first.point == (("fabric.host_bw_mbps", 40), ("levels", 2)) and first.policy == "fair"
    assert [r.point[1][1] for r in runs[:4]] == [2, 2, 4, 4]  # last key fastest, then policy
    raw = yaml.safe_load(runs[3].scenario_yaml)
    assert raw["fabric"]["host_bw_mbps"] == 40 and raw["levels"] == 4
    assert raw["policy"] == "hermod" and raw["seed"] == 1
    assert runs[3].out_dir == tmp_path / "runs" / "host_bw_mbps-40_levels-4_hermod_s1"
    assert len({r.run_id for r in runs}) == len(runs)


def test_seeds_multiply_runs_and_seed_the_job(tmp_path):
    spec = load_sweep(write(tmp_path, TINY + "seeds: [1, 2, 3]\n"))
    runs = expand(spec, tmp_path)
    assert len(runs) == 24
    raw = yaml.safe_load(runs[2].scenario_yaml)
    assert raw["seed"] == 3 and raw["workload"]["overrides"]["ep_skew.seed"] == 3


def test_overrides_key_is_one_job_override_applied_last():
    base = {"workload": {"job": "x", "overrides": {"parallelism.dp": 4, "byte_scale": 1}}}
    set_key(base, "workload.overrides.parallelism.dp", 8)
    assert list(base["workload"]["overrides"].items()) == [("byte_scale", 1), ("parallelism.dp", 8)]


def test_nested_keys_are_created_and_the_base_is_untouched():
    base = {"fabric": {"spines": 1}}
    raw = resolved(base, (("sim_fabric.host_gbps", 40), ("fabric.spines", 2)), "fair", 5)
    assert raw["sim_fabric"] == {"host_gbps": 40} and raw["fabric"]["spines"] == 2
    assert base == {"fabric": {"spines": 1}}


def test_run_id_falls_back_to_a_hash_when_key_names_clash():
    rid = run_id((("fabric.spines", 2), ("sim_fabric.spines", 4)), "fair", 1)
    assert rid.startswith("p") and rid.endswith("_fair_s1")
    assert rid != run_id((("fabric.spines", 2), ("sim_fabric.spines", 8)), "fair", 1)
