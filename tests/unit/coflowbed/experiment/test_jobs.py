"""A scenario's ``workload.jobs`` (coflowbed.experiment.jobs): jobs placed on their hosts or
leaves, ids prefixed; every bad input one line naming file, key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from coflowbed.core.errors import UserError
from coflowbed.experiment.scenario import load_scenario
from tests.data import SCENARIOS

SIM_FABRIC = {"kind": "bigswitch", "host_gbps": 1}
SMALL = {"parallelism.dp": 2, "parallelism.ep": 2}  # tiny-moe on 4 hosts (PP2 x DP2)


def scenario(**workload) -> dict:
    """Two tiny-moe jobs (4 hosts each) on a 4-leaf x 2-host fabric: a on leaves 1-2,
    b on leaves 3-4; ``workload`` keys replace the default ones."""
    jobs = [
        {"job": "tiny-moe", "name": "a", "leaves": [1, 2], "overrides": dict(SMALL)},
        {"job": "tiny-moe", "name": "b", "leaves": [3, 4], "overrides": dict(SMALL)},
    ]
    fabric = {"spines": 2, "leaves": 4, "hosts_per_leaf": 2, "host_bw_mbps": 100}
    return {"fabric": fabric, "policy": "hermod", "workload": {"jobs": jobs, **workload}}


def write(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_two_jobs_load_with_prefixed_ids_on_their_own_hosts(tmp_path):
    scen = load_scenario(write(tmp_path, scenario()))
    ids = [cf.coflow_id for cf in scen.dag.coflows]
    assert len(ids) == len(set(ids)) and {i.split("/")[0] for i in ids} == {"a", "b"}
    hosts = {
        job: {f.src for cf in scen.dag.coflows if cf.identity.job == job for f in cf.flows}
        for job in "ab"
    }
    assert hosts == {"a": {"h11", "h12", "h21", "h22"}, "b": {"h31", "h32", "h41", "h42"}}
    assert scen.inter_job is not None and scen.inter_job.mode == "fair"
    assert [j.leaves for j in scen.inter_job.jobs] == [(1, 2), (3, 4)]


def test_shared_hosts_are_allowed_when_both_jobs_say_so(tmp_path):
    data = scenario()
    for j in data["workload"]["jobs"]:
        j.update(leaves=[1, 2], shared=True)
    scen = load_scenario(write(tmp_path, data))
    assert {f.src for cf in scen.dag.coflows for f in cf.flows} == {"h11", "h12", "h21", "h22"}


def test_the_job_name_defaults_to_the_jobs_own(tmp_path):
    data = scenario()
    del data["workload"]["jobs"][0]["name"]
    scen = load_scenario(write(tmp_path, data))
    assert {cf.identity.job for cf in scen.dag.coflows} == {"tiny-moe", "b"}


def job(i: int, **kv):
    """Mutator: update entry i of workload.jobs."""
    return lambda d: d["workload"]["jobs"][i].update(kv)


def drop(i: int, key: str):
    """Mutator: remove a key of entry i."""
    return lambda d: d["workload"]["jobs"][i].pop(key)


@pytest.mark.parametrize(
    "mutate, key, reason",
    [
        (lambda d: d["workload"].update(jobs=[]), "workload.jobs", "non-empty list"),
        (lambda d: d["workload"].update(inter_job="lottery"), "workload.inter_job", "one of"),
        (lambda d: d["workload"].update(job="tiny-moe"), "workload.jobs", "cannot be combined"),
        (job(1, hosts=["h31", "h99"], leaves=None), "workload.jobs[1].hosts", "'h99' is not on"),
        (job(1, hosts=["h31", "h31"], leaves=None), "workload.jobs[1].hosts", "twice"),
        (job(1, leaves=[3, 5]), "workload.jobs[1].leaves", "leaf 5 is not on the fabric"),
        (job(1, hosts=["h31"]), "workload.jobs[1].hosts", "exactly one of hosts"),
        (drop(1, "leaves"), "workload.jobs[1].hosts", "exactly one of hosts"),
        (job(1, leaves=[2, 3]), "workload.jobs[1].hosts", "h21, h22 are also job 'a'"),
        (job(1, leaves=[2, 3], shared=True), "workload.jobs[1].hosts", "shared: true on both"),
        (job(1, leaves=[3]), "workload.jobs[1].hosts", "needs 4 hosts, 2 given"),
        (job(1, name="a"), "workload.jobs[1].name", "already used by jobs[0]"),
        (job(0, colour="red"), "workload.jobs[0].colour", "unknown key"),
        (job(0, start_s=-1), "workload.jobs[0].start_s", ">= 0.0"),
        (job(0, priority=-1), "workload.jobs[0].priority", ">= 0"),
        (job(0, shared="yes"), "workload.jobs[0].shared", "true or false"),
        (job(0, overrides=[1]), "workload.jobs[0].overrides", "mapping"),
        (drop(0, "job"), "workload.jobs[0].job", "missing"),
        (lambda d: d.update(sim_fabric=SIM_FABRIC), "sim_fabric", "not supported with workload"),
    ],
)
def test_bad_jobs_fail_with_file_key_and_reason(tmp_path, mutate, key, reason):
    data = scenario()
    mutate(data)
    p = write(tmp_path, data)
    with pytest.raises(UserError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: {key}: ") and reason in msg and "\n" not in msg


def test_a_missing_job_file_is_named(tmp_path):
    data = scenario()
    data["workload"]["jobs"][0]["job"] = "nope.yaml"
    with pytest.raises(UserError, match=r"nope\.yaml"):
        load_scenario(write(tmp_path, data))


def test_the_shipped_two_job_scenario_loads_with_b_more_gpu_intense():
    """b computes twice as long per layer with the same traffic: twice a's intensity."""
    scen = load_scenario(SCENARIOS / "two-moe-shared.yaml")
    assert scen.inter_job is not None
    a, b = scen.inter_job.jobs
    assert b.intensity == pytest.approx(2 * a.intensity)
