"""Scenario faults: what a good ``faults:`` list becomes, one-line errors for bad ones
(nothing started), and the records written to faults.csv / summary.json."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from coflowbed.core.errors import UserError
from coflowbed.experiment import faults
from coflowbed.experiment.scenario import load_scenario
from coflowbed.results.records import RunSummary, summarize
from tests.data import MECHANISM_SCENARIO as MECHANISM


def write(tmp_path: Path, fault_list, **top) -> Path:
    data = yaml.safe_load(MECHANISM.read_text())
    data["faults"] = fault_list
    data.update(top)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_the_issues_example_parses(tmp_path):
    scen = load_scenario(
        write(
            tmp_path,
            [
                {"at_s": 1.5, "link": ["l1", "s1"], "down_s": 2.0},
                {"at_s": 2.0, "switch": "s2", "down_s": 1.0},
                {"at_s": 3.0, "controller": "restart"},
                {"after": "bulk", "link": ["s2", "l3"]},  # either order; stays down
            ],
        )
    )
    f = scen.faults
    assert [x.kind for x in f] == ["link", "switch", "controller", "link"]
    assert (f[0].target, f[0].at_s, f[0].down_s, f[0].after) == ("l1-s1", 1.5, 2.0, None)
    assert f[0].links(scen.plan) == [(1, 1)]
    assert f[1].links(scen.plan) == [(lf, 2) for lf in range(1, 5)]
    assert (f[3].target, f[3].after, f[3].at_s, f[3].down_s) == ("l3-s2", "bulk", 0.0, None)
    assert load_scenario(MECHANISM).faults == ()


@pytest.mark.parametrize(
    "entry, key, reason",
    [
        ({"at_s": 1, "link": ["l1", "s9"], "down_s": 1}, "faults[0].link", "unknown switch 's9'"),
        ({"at_s": 1, "link": ["l1", "l2"], "down_s": 1}, "faults[0].link", "not a leaf-spine link"),
        ({"at_s": 1, "link": ["h11", "l1"]}, "faults[0].link", "h11 is a host"),
        ({"at_s": 1, "link": "l1-s1"}, "faults[0].link", "must be [leaf, spine]"),
        ({"at_s": 1, "switch": "x7", "down_s": 1}, "faults[0].switch", "unknown switch 'x7'"),
        ({"at_s": 1, "switch": "s1"}, "faults[0].down_s", "needs down_s"),
        ({"at_s": 1, "controller": "pause"}, "faults[0].controller", "must be one of restart"),
        ({"at_s": 1, "controller": "restart", "down_s": 1}, "faults[0].down_s", "not for"),
        ({"at_s": -1, "link": ["l1", "s1"]}, "faults[0].at_s", "must be >= 0"),
        ({"at_s": 200, "link": ["l1", "s1"]}, "faults[0].at_s", "timeout_s (120 s)"),
        ({"at_s": 100, "link": ["l1", "s1"], "down_s": 30}, "faults[0].down_s", "ends at 130 s"),
        ({"at_s": 1, "link": ["l1", "s1"], "down_s": 0}, "faults[0].down_s", "must be > 0"),
        ({"link": ["l1", "s1"]}, "faults[0].at_s", "needs at_s"),
        ({"after": "nope", "link": ["l1", "s1"]}, "faults[0].after", "unknown coflow 'nope'"),
        ({"at_s": 1, "link": ["l1", "s1"], "switch": "s1"}, "faults[0].switch", "exactly one"),
        ({"at_s": 1}, "faults[0].link", "exactly one"),
        ({"at_s": 1, "link": ["l1", "s1"], "colour": 1}, "faults[0].colour", "unknown key"),
    ],
)
def test_bad_fault_entries_fail_with_one_line(tmp_path, entry, key, reason):
    p = write(tmp_path, [entry])
    with pytest.raises(UserError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: {key}: ") and reason in msg and "\n" not in msg


@pytest.mark.parametrize(
    "entries, key, reason",
    [
        (  # the same link twice at once
            [{"at_s": 1, "link": ["l1", "s1"], "down_s": 2}, {"at_s": 2, "link": ["l1", "s1"]}],
            "faults[1]",
            "overlaps faults[0] on l1-s1",
        ),
        (  # a spine restart while one of its links is down
            [
                {"at_s": 1, "link": ["l2", "s1"], "down_s": 2},
                {"at_s": 2, "switch": "s1", "down_s": 1},
            ],
            "faults[1]",
            "overlaps faults[0]",
        ),
        (  # l1 only via s2, l2 only via s1, for good: cut apart
            [{"at_s": 1, "link": ["l1", "s1"]}, {"after": "bulk", "link": ["l2", "s2"]}],
            "faults[1]",
            "leaves l1 and l2 without a path for good",
        ),
    ],
)
def test_faults_together_must_not_overlap_or_cut_the_fabric(tmp_path, entries, key, reason):
    p = write(tmp_path, entries)
    with pytest.raises(UserError) as exc:
        load_scenario(p)
    assert str(exc.value).startswith(f"{p}: {key}: ") and reason in str(exc.value)


def test_one_spine_can_lose_a_link_for_a_while_only(tmp_path):
    data = yaml.safe_load(MECHANISM.read_text())
    data["fabric"]["spines"] = 1
    data["faults"] = [{"at_s": 1, "link": ["l1", "s1"], "down_s": 1}]
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    assert len(load_scenario(p).faults) == 1  # cut for 1 s: TCP retransmits after
    data["faults"] = [{"at_s": 1, "link": ["l1", "s1"]}]
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match=r"faults\[0\]: l1-s1 down to the end leaves l1 and l2"):
        load_scenario(p)


def test_same_element_at_different_times_and_resolved_scenario_reloads(tmp_path):
    from coflowbed.experiment.folders import resolved_scenario

    entries = [
        {"at_s": 1, "link": ["l1", "s1"], "down_s": 1},
        {"at_s": 2, "link": ["l1", "s1"], "down_s": 1},  # back-to-back is fine
        {"at_s": 1.5, "link": ["l2", "s1"], "down_s": 1},  # another link of s1 at once
    ]
    scen = load_scenario(write(tmp_path, entries))
    assert len(scen.faults) == 3
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(resolved_scenario(scen)))
    assert load_scenario(again).faults == scen.faults


def test_cli_rejects_a_bad_fault_and_starts_nothing(tmp_path, capsys):
    from coflowbed.cli.main import main

    p = write(tmp_path, [{"at_s": 1, "link": ["l1", "s7"], "down_s": 1}])
    assert main(["run", str(p), "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "faults[0].link" in err and "s7" in err
    assert not (tmp_path / "res").exists()


def test_records_go_to_faults_csv_and_summary(tmp_path):
    f = faults.Fault(0, "link", "l1-s1", 1.5, None, 2.0)
    rec = faults.FaultRecord.of(f)
    rec.injected_s, rec.detected_s, rec.rerouted_s, rec.reroute_ms = 1.5, 1.502, 1.51, 8.0
    rec.leaves_rerouted = "l1 l2 l3 l4"
    faults.write_csv(tmp_path, [rec])
    rows = list(csv.DictReader((tmp_path / "faults.csv").open()))
    assert rows[0]["target"] == "l1-s1" and rows[0]["reroute_ms"] == "8.0"
    assert rows[0]["restored_s"] == "" and rows[0]["leaves_rerouted"] == "l1 l2 l3 l4"
    summary = summarize([], [], False, {"faults": faults.summary_block([rec])})
    summary.write(tmp_path)
    back = RunSummary.read(tmp_path)
    assert back.faults is not None and back.faults[0]["reroute_ms"] == 8.0
    faults.write_csv(tmp_path / "none", [])  # no faults: no file (and no folder needed)
    assert faults.summary_block([]) is None
