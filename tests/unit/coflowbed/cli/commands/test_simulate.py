"""``coflowbed simulate`` and ``coflowbed check`` end to end on tiny inputs."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from coflowbed.analysis.fidelity import check_run
from coflowbed.cli.main import main
from coflowbed.results.files import read_coflows_csv, write_results
from coflowbed.results.records import CoflowRecord
from tests.data import HI_LO_SCENARIO
from workload import dagjson
from workload.dag import Coflow, Dag, Flow

# hi (level 0) and lo (level 3) both leave h11: hi alone 1e7 B -> 1 s; lo waits, ends at 2 s.
SCENARIO = "name: tiny\n" + HI_LO_SCENARIO


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    return p


def test_simulate_scenario_writes_run_files(scenario, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["simulate", str(scenario), "--out", str(out)]) == 0
    rows = {r["coflow_id"]: r for r in read_coflows_csv(out / "coflows.csv")}
    assert rows["hi"]["cct_s"] == pytest.approx(1.0) and rows["lo"]["cct_s"] == pytest.approx(2.0)
    assert (rows["hi"]["level"], rows["lo"]["level"]) == (0, 3)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["avg_cct_s"] == pytest.approx(1.5) and summary["mode"] == "simulated"
    assert summary["iteration_time_s"] == pytest.approx(2.0)
    assert (out / "flows.csv").exists() and (out / "iterations.csv").exists()
    assert "complete: 2/2 coflows" in capsys.readouterr().out


def test_simulate_policy_override_and_one_level(scenario, tmp_path):
    # fair on one level: both flows share h11's uplink, 2e7 B at 1e7 B/s -> both end at 2.
    out = tmp_path / "fair"
    assert (
        main(["simulate", str(scenario), "--policy", "fair", "--levels", "1", "--out", str(out)])
        == 0
    )
    rows = read_coflows_csv(out / "coflows.csv")
    assert [r["cct_s"] for r in rows] == [pytest.approx(2.0)] * 2


def test_simulate_trace_prefix(tmp_path):
    trace = tmp_path / "t.txt"
    # 2 ports at 1 Gbps = 2^30 bit/s: 128 MB from port 0 to 1 takes exactly 1 s.
    trace.write_text("2 1\n1 0 1 0 1 1:128.0\n")
    out = tmp_path / "tr"
    assert main(["simulate", "--trace", str(trace), "--policy", "fifo", "--out", str(out)]) == 0
    assert read_coflows_csv(out / "coflows.csv")[0]["cct_s"] == pytest.approx(1.0)


def test_simulate_fabric_sizes_replace_the_scenarios_fabric(scenario, tmp_path):
    # 1 spine, 2 leaves of 2 hosts at 160 Mbit/s (spines first, as the fabric keys):
    # hi alone 1e7 B at 2e7 B/s -> 0.5 s, lo waits for it -> 1 s.
    out = tmp_path / "out"
    assert main(["simulate", str(scenario), "--fabric", "1x2x2@160Mbps", "--out", str(out)]) == 0
    rows = {r["coflow_id"]: r for r in read_coflows_csv(out / "coflows.csv")}
    assert (rows["hi"]["cct_s"], rows["lo"]["cct_s"]) == (pytest.approx(0.5), pytest.approx(1.0))
    fabric = yaml.safe_load((out / "scenario.yaml").read_text())["fabric"]
    assert (fabric["spines"], fabric["leaves"], fabric["host_bw_mbps"]) == (1, 2, 160.0)


@pytest.mark.parametrize("spec", ["bigswitch:2@1Gbps", "bigswitch:2x1Gbps"])
def test_simulate_trace_fabric_new_and_older_spelling(tmp_path, spec):
    trace = tmp_path / "t.txt"
    trace.write_text("2 1\n1 0 1 0 1 1:128.0\n")  # 128 MB at 2^30 bit/s: 1 s
    out = tmp_path / "tr"
    argv = ["simulate", "--trace", str(trace), "--fabric", spec, "--out", str(out)]
    assert main([*argv, "--policy", "fifo"]) == 0
    assert read_coflows_csv(out / "coflows.csv")[0]["cct_s"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--levels", "9"], "levels must be 1..8 or 'exact'"),
        (["--policy", "nope"], "unknown"),
        (["--fabric", "torus"], "--fabric: torus: expected KIND, or [leafspine:]SxLxH"),
        (["--fabric", "rail"], "with a scenario use 'leafspine' or 'bigswitch'"),
    ],
)
def test_simulate_bad_flags_are_one_line_errors(scenario, tmp_path, capsys, argv, msg):
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err


def test_check_reports_measured_over_simulated(tmp_path, capsys):
    # A fake emulated run of the tiny scenario whose measured CCTs are 1.2 s and 3.0 s;
    # the model gives 1 s and 2 s -> ratios 1.2 and 1.5, summed (1.2 + 3.0) / 3 = 1.4.
    run = tmp_path / "run"
    run.mkdir()
    (run / "scenario.yaml").write_text(SCENARIO)
    dag = Dag(
        [
            Coflow("hi", (Flow("hi.f0", "h11", "h21", 10_000_000),)),
            Coflow("lo", (Flow("lo.f0", "h11", "h22", 10_000_000),)),
        ]
    )
    dagjson.dump(dag, run / "dag.json")
    recs = []
    for cf, level, end in ((dag.coflows[0], 0, 1.2), (dag.coflows[1], 3, 3.0)):
        r = CoflowRecord.of(cf)
        r.arrival_s, r.finish_s, r.level = 0.0, end, level
        recs.append(r)
    write_results(run, [], recs, [], False)
    rows = {r.coflow_id: asdict(r) for r in check_run(run)}
    assert rows["hi"]["ratio"] == pytest.approx(1.2) and rows["lo"]["ratio"] == pytest.approx(1.5)
    assert rows["hi"]["ctype"] == "OTHER"
    capsys.readouterr()
    assert main(["check", str(run)]) == 0
    assert "summed measured/simulated CCT per coflow type: OTHER 1.400" in capsys.readouterr().out


def test_check_missing_files_is_a_user_error(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert "scenario.yaml: missing" in capsys.readouterr().err


def test_simulate_inter_job_flag_picks_the_rule_and_a_bad_one_is_one_line(tmp_path, capsys):
    """--inter-job crux on the shipped two-job scenario: the policy is hermod+crux and
    summary.json has both jobs; --inter-job lottery: exit 2, one line naming the key."""
    from tests.data import SCENARIOS

    shared, out = str(SCENARIOS / "two-moe-shared.yaml"), tmp_path / "out"
    assert main(["simulate", shared, "--inter-job", "crux", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "hermod+crux" and sorted(summary["jobs"]) == ["a", "b"]
    capsys.readouterr()
    assert main(["simulate", shared, "--inter-job", "lottery"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("coflowbed: error: --inter-job: must be one of")
        and "lottery" in err
        and "\n" not in err
    )
