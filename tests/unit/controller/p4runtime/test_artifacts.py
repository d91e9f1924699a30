"""The committed BMv2 JSON + P4Info are compiled from the current p4src/coflowbed.p4:
the recorded source digest must match (works without p4c), and where p4c exists a
fresh compile must produce the same bytes."""

from __future__ import annotations

import json

import pytest

from controller.p4runtime import artifacts

ART = artifacts.committed()
needs_artifacts = pytest.mark.skipif(
    not ART.exist(),
    reason="p4src/compiled/ missing: p4c has not compiled the pipeline yet (make p4)",
)


@needs_artifacts
def test_recorded_digest_matches_the_source():
    assert artifacts.recorded_digest() == artifacts.source_digest(), (
        "p4src/coflowbed.p4 changed: run `make p4` and commit p4src/compiled/"
    )


@needs_artifacts
def test_bmv2_json_is_a_v1model_program_with_our_tables():
    prog = json.loads(ART.json.read_text())
    tables = {t["name"] for p in prog["pipelines"] for t in p["tables"]}
    assert {"CoflowIngress.coflow", "CoflowIngress.route", "CoflowIngress.ecmp"} <= tables
    assert any(m["name"] == "CoflowIngress.tag_meter" for m in prog["meter_arrays"])


def test_staleness_reports_a_source_edit(tmp_path, monkeypatch):
    src = tmp_path / "p4src" / "coflowbed.p4"
    src.parent.mkdir()
    src.write_text("// edited\n")
    compiled = tmp_path / "p4src" / "compiled"
    compiled.mkdir()
    for name in (artifacts.JSON_NAME, artifacts.P4INFO_NAME):
        (compiled / name).write_text("x")
    (compiled / artifacts.DIGEST_NAME).write_text("0" * 64 + "  p4src/coflowbed.p4\n")
    monkeypatch.setattr(artifacts, "REPO", tmp_path)
    monkeypatch.setattr(artifacts, "COMPILED_DIR", compiled)
    monkeypatch.setattr(artifacts, "find_p4c", lambda: None)
    assert artifacts.staleness() == ["p4src/coflowbed.p4 changed since the last `make p4`"]
    (compiled / artifacts.DIGEST_NAME).write_text(artifacts.source_digest(src) + "  x\n")
    assert artifacts.staleness() == []


@pytest.mark.slow
@needs_artifacts
@pytest.mark.skipif(artifacts.find_p4c() is None, reason="p4c-bm2-ss not installed")
def test_fresh_compile_equals_the_committed_artifacts():
    assert artifacts.staleness() == []
