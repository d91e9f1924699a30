"""Job spec validation: strict keys, bad values and cross-field rules, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from coflowbed.core.errors import UserError
from workload.jobspec import load_job, preset_path

TINY = yaml.safe_load(preset_path("tiny-moe").read_text())


def write(tmp_path: Path, data) -> Path:
    p = tmp_path / "job.yaml"
    p.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return p


def error_of(tmp_path, overrides=None, data=None) -> str:
    path = write(tmp_path, TINY if data is None else data)
    with pytest.raises(UserError) as info:
        load_job(path, overrides)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path))
    assert isinstance(info.value, ValueError)
    return msg


def test_tiny_preset_parses(tmp_path):
    job = load_job(write(tmp_path, TINY))
    assert (job.parallelism.pp, job.parallelism.dp, job.parallelism.ep) == (2, 4, 4)
    assert job.model.moe.layers == frozenset(range(4)) and job.byte_scale == 0.25
    assert job.hosts_needed == 8 and job.compute.fwd_layer_s == (0.01,) * 4


@pytest.mark.parametrize(
    "overrides,key,reason",
    [
        ({"model.heads": 8}, "model.heads", "unknown key"),
        ({"colectives": {}}, "colectives", "unknown key"),
        ({"model.layers": 0}, "model.layers", "must be in"),
        ({"model.hidden": "big"}, "model.hidden", "must be an integer"),
        ({"model.layers": 5}, "model.layers", "do not split evenly"),
        ({"byte_scale": 2}, "byte_scale", "must be in"),
        ({"byte_scale": 0}, "byte_scale", "must be in"),
        ({"schedule": "zigzag"}, "schedule", "must be one of"),
        ({"dp_mode": "zero3"}, "dp_mode", "must be one of"),
        ({"parallelism.ep": 3}, "parallelism.ep", "must divide dp"),
        ({"model.moe.top_k": 9}, "model.moe.top_k", "must be in"),
        ({"model.moe.layers": [0, 7]}, "model.moe.layers[1]", "must be in"),
        ({"model.moe.layers": "some"}, "model.moe.layers", "all, odd, even"),
        ({"placement.gpus_per_host": 3}, "placement.gpus_per_host", "must divide dp"),
        ({"parallelism.tp": 2}, "placement.gpus_per_host", "TP stays inside a host"),
        ({"compute.gpu_tflops": 100}, "compute.gpu_tflops", "exactly one of"),
        ({"compute.fwd_layer_s": [0.1, 0.1]}, "compute.fwd_layer_s", "one value per layer"),
        ({"ep_skew.skew": -1}, "ep_skew.skew", "must be in"),
        ({"ep_skew.sed": 3}, "ep_skew.sed", "unknown key"),
        ({"placement.stage_hosts": [["a", "b", "c", "d"]]}, "placement.stage_hosts", "2 rows"),
        (
            {"placement.stage_hosts": [["a", "b", "c", "d"], ["a", "e", "f", "g"]]},
            "placement.stage_hosts[1]",
            "appears twice",
        ),
        ({"microbatches": True}, "microbatches", "must be an integer"),
    ],
)
def test_bad_values_name_file_key_and_reason(tmp_path, overrides, key, reason):
    msg = error_of(tmp_path, overrides)
    assert f": {key}: " in msg and reason in msg


def test_missing_required_key(tmp_path):
    data = {k: v for k, v in TINY.items() if k != "microbatches"}
    assert ": microbatches: is required" in error_of(tmp_path, data=data)


def test_ep_without_moe(tmp_path):
    msg = error_of(tmp_path, {"model.moe": None})
    assert ": parallelism.ep: " in msg and "needs model.moe" in msg


def test_invalid_yaml_is_one_line(tmp_path):
    msg = error_of(tmp_path, data="model: [1, 2\nname: x\n")
    assert "invalid YAML at line" in msg


def test_not_a_mapping(tmp_path):
    assert "must be a mapping" in error_of(tmp_path, data="- 1\n- 2\n")


def test_overrides_make_big_variants():
    job = load_job(preset_path("gpt3-175b"), {"parallelism.dp": 16})
    assert job.world_gpus == 1024 and job.hosts_needed == 128


def test_missing_file():
    with pytest.raises(UserError, match="nope.yaml: cannot read"):
        load_job("/nonexistent/nope.yaml")


def test_preset_path_and_nested_overrides():
    assert preset_path("tiny-moe").name == "tiny-moe.yaml"
    assert preset_path("no-such") is None and preset_path("../jobspec") is None
    job = load_job(
        preset_path("tiny-moe"), {"parallelism": {"dp": 8, "ep": 8}, "model.moe.experts": 16}
    )
    assert (job.parallelism.pp, job.parallelism.dp, job.parallelism.ep) == (2, 8, 8)
    assert job.model.moe.top_k == 2 and job.model.moe.experts == 16


def test_collectives_algorithm_parses(tmp_path):
    job = load_job(
        write(tmp_path, TINY),
        {"dp_mode": "allreduce", "collectives": {"algorithm": "tree", "link_gbps": 400}},
    )
    assert (job.collectives.algorithm, job.collectives.link_gbps) == ("tree", 400.0)
    assert load_job(write(tmp_path, TINY)).collectives.algorithm == "ring"


@pytest.mark.parametrize(
    "overrides,key,reason",
    [
        ({"collectives.algorithm": "butterfly"}, "collectives.algorithm", "must be one of ring"),
        ({"collectives.link_gbps": 0}, "collectives.link_gbps", "must be in (0"),
        (
            {"collectives.algorithm": "tree"},
            "collectives.algorithm",
            "tree needs dp_mode allreduce",
        ),
    ],
)
def test_collectives_algorithm_errors(tmp_path, overrides, key, reason):
    msg = error_of(tmp_path, overrides)
    assert f": {key}: " in msg and reason in msg, msg


def test_description_is_optional(tmp_path):
    data = {k: v for k, v in TINY.items() if k != "description"}
    assert load_job(write(tmp_path, data)).description == ""
