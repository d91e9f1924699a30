"""The ``coflowbed-dag`` JSON format (version 1): a readable, hand-editable, lossless
file form of ``workload.dag.Dag``.  The layout is documented in docs/workloads.md;
the loader checks every key and reports ``<file>: <key path>: <reason>``.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from workload import dagindex
from workload.dag import (
    DEFAULT_JOB,
    SETUP_ITERATION,
    Coflow,
    CoflowIdentity,
    CoflowType,
    Compute,
    Dag,
    Flow,
)
from workload.schema import Section, SpecError

FORMAT = "coflowbed-dag"
VERSION = 1
_IDENTITY_DEFAULTS = CoflowIdentity()


def to_dict(dag: Dag) -> dict:
    """The DAG as a JSON-ready dict (computes first, then coflows, in DAG order)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "meta": dag.meta,
        "computes": [
            {
                "id": c.node_id,
                "host": c.host,
                "duration_s": c.duration_s,
                "deps": list(c.deps),
                "label": c.label,
                "iteration": c.iteration,
                "job": c.job,
            }
            for c in dag.computes
        ],
        "coflows": [coflow_to_dict(cf) for cf in dag.coflows],
    }


def coflow_to_dict(cf: Coflow) -> dict:
    """One coflow as the format writes it (identity in full, flows as objects); also the
    wire form of a coflow in the controller's scheduling messages."""
    ident = {f.name: getattr(cf.identity, f.name) for f in fields(CoflowIdentity)}
    ident["ctype"] = cf.identity.ctype.value
    return {
        "id": cf.coflow_id,
        "identity": ident,
        "deps": list(cf.deps),
        "release_s": cf.release_s,
        "flows": [
            {"id": f.flow_id, "src": f.src, "dst": f.dst, "bytes": f.bytes} for f in cf.flows
        ],
    }


def dump(dag: Dag, path: str | Path) -> None:
    """Write ``dag`` to ``path`` as coflowbed-dag JSON (one node per line)."""
    d = to_dict(dag)
    head = json.dumps({k: d[k] for k in ("format", "version", "meta")}, indent=1)[:-2]
    parts = [head + ",\n"]
    for key in ("computes", "coflows"):
        rows = ",\n  ".join(json.dumps(n, separators=(",", ":")) for n in d[key])
        parts.append(f' "{key}": [\n  {rows}\n ]' + (",\n" if key == "computes" else "\n"))
    Path(path).write_text("".join(parts) + "}\n")


def load(path: str | Path) -> Dag:
    """Read and validate a coflowbed-dag JSON file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise SpecError(str(path), None, f"cannot read: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise SpecError(
            str(path), None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    return from_dict(data, str(path))


def from_dict(data: Any, source: str = "<dag>") -> Dag:
    """Validate a coflowbed-dag mapping into a Dag (ids unique, deps known, acyclic)."""
    top = Section(data, source)
    if top.raw("format") != FORMAT:
        raise top.error("format", f"must be {FORMAT!r}, got {top.data.get('format')!r}")
    if top.raw("version") != VERSION:
        raise top.error(
            "version",
            f"unsupported version {top.data.get('version')!r} (this coflowbed reads {VERSION})",
        )
    meta = top.raw("meta", {})
    if not isinstance(meta, dict):
        raise top.error("meta", "must be a mapping")
    coflows = [
        _coflow(Section(c, source, f"coflows[{i}]")) for i, c in enumerate(top.list("coflows", []))
    ]
    job = _sole_job(coflows)
    computes = [
        _compute(Section(c, source, f"computes[{i}]"), job)
        for i, c in enumerate(top.list("computes", []))
    ]
    top.done()
    dag = Dag(coflows, computes, meta)
    try:
        dagindex.validate(dag)
    except ValueError as exc:
        raise SpecError(source, None, str(exc)) from exc
    return dag


def _sole_job(coflows: list[Coflow]) -> str:
    """The job of a compute that names none: the coflows' job when they all share one
    (a single-job DAG, as files written before computes carried their job), else
    ``DEFAULT_JOB``."""
    jobs = {cf.identity.job for cf in coflows}
    return jobs.pop() if len(jobs) == 1 else DEFAULT_JOB


def _compute(s: Section, job: str) -> Compute:
    """One entry of ``computes`` (``job`` when it names none)."""
    node = Compute(
        s.str("id"),
        s.str("host"),
        s.float("duration_s", lo=0.0),
        _deps(s),
        s.raw("label", ""),
        s.int("iteration", 0, lo=SETUP_ITERATION),
        s.str("job", job),
    )
    if not isinstance(node.label, str):
        raise s.error("label", "must be a string")
    s.done()
    return node


def _deps(s: Section) -> tuple[str, ...]:
    """The ``deps`` list: node ids (strings)."""
    deps = s.list("deps", [])
    for i, d in enumerate(deps):
        if not isinstance(d, str) or not d:
            raise s.error(f"deps[{i}]", f"must be a node id string, got {d!r}")
    return tuple(deps)


def coflow_from_dict(data: Any, source: str, path: str = "") -> Coflow:
    """A coflow from its ``coflow_to_dict`` form; SpecError naming ``source`` and ``path``."""
    return _coflow(Section(data, source, path))


def _coflow(s: Section) -> Coflow:
    """One entry of ``coflows``; identity fields default as in CoflowIdentity."""
    cid = s.str("id")
    ident = _identity(s.section("identity", required=False))
    flows = tuple(
        _flow(Section(f, s.source, f"{s.path}.flows[{i}]")) for i, f in enumerate(s.list("flows"))
    )
    if not flows:
        raise s.error("flows", "a coflow needs at least one flow")
    cf = Coflow(cid, flows, ident, _deps(s), s.float("release_s", 0.0, lo=0.0))
    s.done()
    return cf


def _identity(s: Section | None) -> CoflowIdentity:
    """The optional ``identity`` mapping."""
    if s is None:
        return _IDENTITY_DEFAULTS
    d = _IDENTITY_DEFAULTS
    ctype = s.str("ctype", d.ctype.value, tuple(t.value for t in CoflowType))
    ident = CoflowIdentity(
        CoflowType(ctype),
        s.str("job", d.job),
        s.int("iteration", d.iteration, lo=0),
        s.int("mid", d.mid, lo=0),
        s.int("lid", d.lid, lo=0),
        _text(s, "collective"),
        s.int("step", d.step, lo=0),
        _text(s, "phase"),
        s.int("stage", d.stage, lo=-1),
    )
    s.done()
    return ident


def _text(s: Section, key: str) -> str:
    """A possibly empty string field."""
    v = s.raw(key, "")
    if not isinstance(v, str):
        raise s.error(key, f"must be a string, got {v!r}")
    return v


def _flow(s: Section) -> Flow:
    """One flow: id, src, dst (distinct hosts), bytes > 0."""
    fid, src, dst = s.str("id"), s.str("src"), s.str("dst")
    nbytes = s.int("bytes", lo=1)
    if src == dst:
        raise s.error("dst", f"equals src {src!r}; a flow joins two distinct hosts")
    s.done()
    return Flow(fid, src, dst, nbytes)
