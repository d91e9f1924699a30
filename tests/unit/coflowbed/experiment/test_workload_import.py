"""``coflowbed workload import FILE --format ...`` and a scenario's
``workload: {import: FILE, format: ...}``: DAG written / built, one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from coflowbed.cli.main import main
from coflowbed.core.errors import UserError
from coflowbed.experiment.scenario import load_scenario
from tests.data import MECHANISM_SCENARIO as MECHANISM, REPO
from workload import dagjson

EXAMPLES = REPO / "workload" / "examples"
AICB = str(EXAMPLES / "aicb-moe-16.txt")
ASTRA = str(EXAMPLES / "astrasim-transformer.txt")
DATA = str(EXAMPLES / "astrasim-data.txt")


def test_cli_import_writes_dag_and_table(tmp_path, capsys):
    out = tmp_path / "dag.json"
    argv = ["workload", "import", AICB, "--format", "aicb", "--fabric", "2x4x4", "-o", str(out)]
    assert main([*argv, "--byte-scale", "0.5"]) == 0
    dag = dagjson.load(out)
    rows = {ln.split()[0]: ln.split()[1:] for ln in capsys.readouterr().out.splitlines()[2:]}
    for t in ("TP", "EP", "PP", "DP"):
        mine = [c for c in dag.coflows if c.ctype.value == t]
        assert rows[t] == [str(len(mine)), str(sum(len(c.flows) for c in mine)),
                           str(sum(c.bytes for c in mine))]  # fmt: skip
    # the example's DP bytes (272 MiB, tests/unit/workload/imports/test_build.py) halved
    assert rows["DP"][2] == str(136 * 2**20)
    assert dag.hosts() <= {f"h{lf}{n}" for lf in range(1, 5) for n in range(1, 5)}


def test_cli_astrasim_takes_npus_from_the_fabric(tmp_path, capsys):
    assert main(["workload", "import", ASTRA, "--format", "astrasim", "--fabric", "2x4x2"]) == 0
    assert "'tp': 2, 'dp': 4" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["workload", "import", AICB], "needs FILE and --format"),
        (["workload", "import", AICB, "--format", "aicb", "--byte-scale", "0"],
         "--byte-scale: 0.0: must be > 0"),
        (["workload", "import", AICB, "--format", "aicb", "--gpus-per-host", "0"],
         "--gpus-per-host: 0: must be >= 1"),
        (["workload", "import", ASTRA, "--format", "astrasim"], "--npus: needed"),
        (["workload", "import", DATA, "--format", "aicb"], "line 1: unsupported parallelism"),
        (["workload", "import", AICB, "--format", "aicb", "--fabric", "2x4x2"],
         "16 ranks need 16 hosts"),
        (["workload", "tiny-moe", AICB], "unexpected argument"),
        (["workload", "tiny-moe", "--byte-scale", "0.5"], "--byte-scale: only with 'workload"),
        (["workload", "import", AICB, "--format", "aicb", "--set", "a=1"], "--set: only for job"),
        (["workload", "import", ASTRA, "--format", "astrasim", "--npus", "8", "--cycle-ns", "0"],
         "--cycle-ns: 0.0: must be > 0"),
    ],
)  # fmt: skip
def test_cli_errors_exit_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def scenario(tmp_path, workload: dict) -> Path:
    """The mechanism scenario with ``workload`` replaced (example copied beside it)."""
    shutil.copy(ASTRA, tmp_path / "w.txt")
    data = yaml.safe_load(MECHANISM.read_text())
    data["workload"] = workload
    data["policy"] = "fair" if data.get("policy") == "static" else data.get("policy", "fair")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_scenario_import(tmp_path):
    # 2 spines x 4 leaves x 2 hosts = 8 hosts -> 8 NPUs (tp 2, dp 4): 5 coflows as in
    # tests/unit/workload/imports/test_build.py; with tree, each of the 4 all-reduces
    # becomes up + down: 9.
    s = load_scenario(scenario(tmp_path, {"import": "w.txt", "format": "astrasim"}))
    assert len(s.dag.coflows) == 5 and s.dag.meta["format"] == "astrasim"
    tree = {"import": "w.txt", "format": "astrasim", "algorithm": "tree", "byte_scale": 0.01}
    s = load_scenario(scenario(tmp_path, tree))
    assert len(s.dag.coflows) == 9 and s.byte_scale == 0.01


@pytest.mark.parametrize(
    "workload,key,reason",
    [
        ({"import": "w.txt"}, "workload.format", "missing required key"),
        ({"import": "w.txt", "format": "chakra"}, "workload.format", "must be one of aicb"),
        ({"import": "w.txt", "format": "astrasim", "colour": 1}, "workload.colour", "unknown key"),
        ({"import": "w.txt", "format": "astrasim", "npus": 5}, None, "does not divide the 5"),
        (
            {"import": "w.txt", "format": "astrasim", "trace": {"path": "x"}},
            "workload",
            "exactly one of",
        ),
    ],
)
def test_scenario_import_errors(tmp_path, workload, key, reason):
    with pytest.raises(UserError) as info:
        load_scenario(scenario(tmp_path, workload))
    msg = str(info.value)
    assert "\n" not in msg and reason in msg and (key is None or f": {key}: " in msg), msg


def test_shipped_import_scenario_loads():
    # coflowbed/scenarios/aicb-moe-16.yaml: the AICB example on 2x4x4 hosts, bytes x 0.025:
    # the example's 66 coflows (test_build) and its 496 MiB unscaled -> 496 MiB x 0.025,
    # each flow rounded, so within one byte per flow (304 flows).
    s = load_scenario(MECHANISM.parent / "aicb-moe-16.yaml")
    assert len(s.dag.coflows) == 66 and s.byte_scale == 0.025
    total = sum(c.bytes for c in s.dag.coflows)
    assert abs(total - 496 * 2**20 * 0.025) <= 304
