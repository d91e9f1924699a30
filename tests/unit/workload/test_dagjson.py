"""coflowbed-dag JSON: lossless round trip and one-line errors naming the key path."""

from __future__ import annotations

import json

import pytest

from coflowbed.core.errors import UserError
from workload import dagjson, generate
from workload.dag import Coflow, CoflowIdentity, CoflowType, Compute, Dag, Flow
from workload.placement import generic_hosts
from workload.presets import load_preset


@pytest.mark.parametrize(
    "preset,overrides",
    [
        ("tiny-moe", {"iterations": 2}),
        ("tiny-moe", {"collectives.ep_matching": True}),
        ("gpt3-13b", {}),
    ],
)
def test_round_trip_is_lossless(tmp_path, preset, overrides):
    job = load_preset(preset, overrides)
    dag = generate(job, generic_hosts(job.hosts_needed))
    path = tmp_path / "dag.json"
    dagjson.dump(dag, path)
    back = dagjson.load(path)
    assert back.computes == dag.computes
    assert back.coflows == dag.coflows
    assert back.meta == dag.meta
    assert json.loads(path.read_text())["format"] == "coflowbed-dag"


def test_round_trip_keeps_every_field(tmp_path):
    ident = CoflowIdentity(CoflowType.OTHER, "fb", 3, 4, 5, "shuffle", 6, "bwd", 2)
    dag = Dag(
        [Coflow("x", (Flow("x:0", "a", "b", 10), Flow("x:1", "c", "b", 7)), ident, ("c0",), 2.5)],
        [Compute("c0", "a", 0.125, (), "warm", 3)],
        {"byte_scale": 1e-3, "n": [1]},
    )
    path = tmp_path / "dag.json"
    dagjson.dump(dag, path)
    back = dagjson.load(path)
    assert (back.coflows, back.computes, back.meta) == (dag.coflows, dag.computes, dag.meta)


def test_hand_written_minimal_dag(tmp_path):
    doc = {
        "format": "coflowbed-dag",
        "version": 1,
        "computes": [{"id": "c0", "host": "a", "duration_s": 0.5}],
        "coflows": [
            {
                "id": "x",
                "deps": ["c0"],
                "identity": {"ctype": "EP", "mid": 2},
                "flows": [{"id": "x:0", "src": "a", "dst": "b", "bytes": 10}],
            }
        ],
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    dag = dagjson.load(path)
    assert dag.computes == [Compute("c0", "a", 0.5)]
    assert dag.coflows == [
        Coflow("x", (Flow("x:0", "a", "b", 10),), CoflowIdentity(CoflowType.EP, mid=2), ("c0",))
    ]


@pytest.mark.parametrize("jobs, expected", [(["llm", "llm"], "llm"), (["a", "b"], "job0")])
def test_a_compute_without_a_job_takes_the_coflows_sole_job(tmp_path, jobs, expected):
    """A file written before computes carried their job: its computes join the one job
    its coflows name (else the default job), so an iteration stays one span."""
    doc = {
        "format": "coflowbed-dag",
        "version": 1,
        "computes": [{"id": "c0", "host": "a", "duration_s": 0.5}],
        "coflows": [
            {
                "id": f"x{i}",
                "deps": ["c0"],
                "identity": {"job": job},
                "flows": [{"id": f"x{i}:0", "src": "a", "dst": "b", "bytes": 10}],
            }
            for i, job in enumerate(jobs)
        ],
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    assert dagjson.load(path).computes[0].job == expected


def _base():
    dag = Dag(
        [Coflow("x", (Flow("x:0", "a", "b", 10),), CoflowIdentity(), ("c0",))],
        [Compute("c0", "a", 0.5)],
        {"job": "t"},
    )
    return dagjson.to_dict(dag)


def _edit(doc, path, value):
    node = doc
    for p in path[:-1]:
        node = node[p]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path,value,key,reason",
    [
        (["version"], 2, "version", "unsupported version"),
        (["format"], "other", "format", "must be 'coflowbed-dag'"),
        (["coflows", 0, "flows", 0, "bytes"], -5, "coflows[0].flows[0].bytes", "must be in"),
        (["coflows", 0, "flows", 0, "dst"], "a", "coflows[0].flows[0].dst", "equals src"),
        (["coflows", 0, "flows", 0, "size"], 3, "coflows[0].flows[0].size", "unknown key"),
        (["coflows", 0, "identity", "ctype"], "XX", "coflows[0].identity.ctype", "one of"),
        (["coflows", 0, "flows"], [], "coflows[0].flows", "at least one flow"),
        (["computes", 0, "duration_s"], "1s", "computes[0].duration_s", "finite number"),
        (["computes", 0, "host"], KeyError, "computes[0].host", "is required"),
        (["coflows", 0, "deps", 0], 7, "coflows[0].deps[0]", "node id string"),
    ],
)
def test_bad_dag_names_key(tmp_path, path, value, key, reason):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(_edit(_base(), path, value)))
    with pytest.raises(UserError) as info:
        dagjson.load(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: {key}: ") and reason in msg and "\n" not in msg


def test_unknown_dependency_and_cycle(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(_edit(_base(), ["coflows", 0, "deps"], ["nope"])))
    with pytest.raises(UserError, match="unknown node 'nope'"):
        dagjson.load(p)
    doc = _edit(_base(), ["computes", 0, "deps"], ["x"])
    p.write_text(json.dumps(doc))
    with pytest.raises(UserError, match="cycle"):
        dagjson.load(p)


def test_invalid_json_is_one_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"format": "coflowbed-dag",\n "version": 1,,}')
    with pytest.raises(UserError, match=r"bad.json: invalid JSON at line 2 column"):
        dagjson.load(p)
