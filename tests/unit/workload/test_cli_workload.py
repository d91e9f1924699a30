"""``coflowbed workload``: writes the DAG JSON and prints the per-type table."""

from __future__ import annotations

import pytest

from coflowbed.cli.main import main
from workload import dagjson


def test_writes_dag_and_table(tmp_path, capsys):
    out = tmp_path / "dag.json"
    assert (
        main(
            ["workload", "tiny-moe", "-o", str(out), "--fabric", "2x4x2", "--line-rate-mbps", "100"]
        )
        == 0
    )
    text = capsys.readouterr().out
    dag = dagjson.load(out)
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[1:]}
    for t in ("EP", "PP", "DP"):
        n = [c for c in dag.coflows if c.ctype.value == t]
        assert rows[t] == [
            str(len(n)),
            str(sum(len(c.flows) for c in n)),
            str(sum(c.bytes for c in n)),
        ]
    assert "critical path at 100 Mbit/s" in text
    assert dag.hosts() <= {f"h{lf}{n}" for lf in range(1, 5) for n in (1, 2)}


def test_set_overrides(tmp_path, capsys):
    out = tmp_path / "dag.json"
    assert main(["workload", "tiny-moe", "-o", str(out), "--set", "iterations=2"]) == 0
    assert dagjson.load(out).iterations() == [0, 1]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["workload", "no-such-preset"], "no-such-preset: no such job file or preset"),
        (["workload", "tiny-moe", "--set", "model.layers=3"], "model.layers: 3 layers"),
        (["workload", "tiny-moe", "--set", "oops"], "--set: oops: expected KEY=VALUE"),
        (["workload", "tiny-moe", "--hosts", "a,b"], "job needs 8 hosts"),
    ],
)
def test_user_errors_exit_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert any(needle in line for line in err), err
