"""Bad input on the command line, class by class: unknown keys (with "did you mean"
for a typo, also of a key that has a default), unknown scenario, sweep and preset
names (the known ones listed), numbers written ``1e15``, and errors in a scenario's
``overrides:`` or a ``--set``/``--policy`` blamed on where the user wrote them.  Each
is one line naming the file or flag, the key and the reason, exit 2, and nothing
written."""

from __future__ import annotations

from pathlib import Path

import pytest

from coflowbed.cli.main import main
from tests.data import REPO

TINY = (REPO / "coflowbed" / "scenarios" / "tiny-moe.yaml").read_text()
TINY_JOB = (REPO / "workload" / "presets" / "tiny-moe.yaml").read_text()
JOB_OVERRIDES = TINY.replace("  job: tiny-moe", "  job: tiny-moe\n  overrides: {OVERRIDES}")


def scenario(tmp_path: Path, old: str, new: str, text: str = TINY) -> str:
    """A copy of ``text`` with ``old`` replaced by ``new``, written as s.yaml."""
    assert old in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


def job(tmp_path: Path, old: str, new: str) -> str:
    """The tiny-moe job file with ``old`` replaced by ``new``, written as j.yaml."""
    assert old in TINY_JOB
    path = tmp_path / "j.yaml"
    path.write_text(TINY_JOB.replace(old, new))
    return str(path)


def simulate(*args: str) -> list[str]:
    return ["simulate", *args]


def overrides(tmp_path: Path, text: str) -> str:
    return scenario(tmp_path, "{OVERRIDES}", text, JOB_OVERRIDES)


# (argv given tmp_path, the message after "coflowbed: error: ", with {tmp} for tmp_path)
CASES = {
    # unknown keys, typos of required keys and of keys with a default
    "typo of a key with a default": (
        lambda t: simulate(scenario(t, "timeout_s: 300", "timout_s: 300")),
        "{tmp}/s.yaml: timout_s: unknown key (did you mean 'timeout_s'?)",
    ),
    "typo whose default then fails": (
        lambda t: simulate(scenario(t, "policy: hermod", "polcy: hermod")),
        "{tmp}/s.yaml: polcy: unknown key (did you mean 'policy'?)",
    ),
    "typo of a required key": (
        lambda t: simulate(scenario(t, "  host_bw_mbps: 100", "  host_bw_mpbs: 100")),
        "{tmp}/s.yaml: fabric.host_bw_mpbs: unknown key (did you mean 'host_bw_mbps'?)",
    ),
    "typo of a workload kind": (
        lambda t: simulate(scenario(t, "job: tiny-moe", "jobb: tiny-moe")),
        "{tmp}/s.yaml: workload.jobb: unknown key (did you mean 'job'?)",
    ),
    "unknown key far from any": (
        lambda t: simulate(scenario(t, "seed: 1", "seed: 1\ncolour: red")),
        "{tmp}/s.yaml: colour: unknown key (known: ",
    ),
    "job file typo of a key with a default": (
        lambda t: ["workload", job(t, "iterations: 1", "iteration: 1")],
        "{tmp}/j.yaml: iteration: unknown key (did you mean 'iterations'?)",
    ),
    "job file typo of a required key": (
        lambda t: ["workload", job(t, "microbatches: 4", "microbatch: 4")],
        "{tmp}/j.yaml: microbatch: unknown key (did you mean 'microbatches'?)",
    ),
    "job file nested typo": (
        lambda t: ["workload", job(t, "{gpus_per_host: 1}", "{gpus_per_hosts: 1}")],
        "{tmp}/j.yaml: placement.gpus_per_hosts: unknown key (did you mean 'gpus_per_host'?)",
    ),
    # overrides: a scenario's workload.overrides, --set on a scenario or a job, --policy
    "--set typo on a scenario": (
        lambda t: simulate("tiny-moe", "--set", "timout_s=3"),
        "--set: timout_s: unknown key (did you mean 'timeout_s'?)",
    ),
    "--set bad value on a scenario": (
        lambda t: simulate("tiny-moe", "--set", "fabric.spines=0"),
        "--set: fabric.spines: must be >= 1, got 0",
    ),
    "--set crossing a plain value": (
        lambda t: simulate("tiny-moe", "--set", "fabric.spines.x=3"),
        "--set: fabric.spines.x: fabric.spines is 2, not a mapping",
    ),
    "--policy unknown": (
        lambda t: simulate("tiny-moe", "--policy", "hermd"),
        "--policy: unknown policy 'hermd'; did you mean 'hermod'? (known: ",
    ),
    "--inter-job on a scenario of one job": (
        lambda t: simulate("tiny-moe", "--inter-job", "crux"),
        "--inter-job: workload.inter_job: unknown key (known: job, overrides)",
    ),
    "--set typo on a job": (
        lambda t: ["workload", "tiny-moe", "--set", "microbatch=3"],
        "--set: microbatch: unknown key (did you mean 'microbatches'?)",
    ),
    "--set nested typo on a job": (
        lambda t: ["workload", "tiny-moe", "--set", "model.hiden=3"],
        "--set: model.hiden: unknown key (did you mean 'hidden'?)",
    ),
    "scenario override typo": (
        lambda t: simulate(overrides(t, "{microbatch: 3}")),
        "{tmp}/s.yaml: workload.overrides.microbatch: unknown key (did you mean 'microbatches'?)",
    ),
    "scenario override bad value": (
        lambda t: simulate(overrides(t, "{microbatches: 0}")),
        "{tmp}/s.yaml: workload.overrides.microbatches: must be in [1, inf], got 0",
    ),
    "--set reaching a scenario's job override": (
        lambda t: simulate("tiny-moe", "--set", "workload.overrides.microbatches=0"),
        "--set: workload.overrides.microbatches: must be in [1, inf], got 0",
    ),
    # unknown names: scenarios, sweeps, presets
    "unknown scenario for run": (
        lambda t: ["run", "mechansim"],
        "mechansim: no such file or shipped scenario; did you mean 'mechanism'? "
        "(shipped: aicb-moe-16, default, ",
    ),
    "unknown scenario for simulate": (
        lambda t: simulate("nosuch"),
        "nosuch: no such file or shipped scenario (shipped: aicb-moe-16, default, ",
    ),
    "unknown scenario for compare": (
        lambda t: ["compare", "nosuch", "--policies", "fair"],
        "nosuch: no such file or shipped scenario (shipped: ",
    ),
    "unknown sweep": (
        lambda t: ["sweep", "nosuch"],
        "nosuch: no such file or shipped sweep (shipped: bandwidth, ",
    ),
    "unknown preset on the command line": (
        lambda t: ["workload", "tiny-mo"],
        "tiny-mo: no such job file or preset; did you mean 'tiny-moe'? (presets: gpt3-13b, ",
    ),
    "unknown preset in a scenario": (
        lambda t: simulate(scenario(t, "job: tiny-moe", "job: nosuch")),
        "{tmp}/s.yaml: workload.job: no such preset or job file 'nosuch' (presets: gpt3-13b, ",
    ),
    # numbers: 1e15 is a number; a fraction where an integer is needed says so
    "1e15 is a number, out of range": (
        lambda t: simulate(scenario(t, "  host_bw_mbps: 100", "  host_bw_mbps: 1e15")),
        "{tmp}/s.yaml: fabric.host_bw_mbps: must be <= 10000, got 1000000000000000.0",
    ),
    "an integer key given a fraction": (
        lambda t: ["workload", "tiny-moe", "--set", "microbatches=2.5e0"],
        "--set: microbatches: must be an integer, got 2.5",
    ),
    # --fabric: one grammar (spines x leaves x hosts per leaf, as the fabric keys)
    "--fabric in the older order": (
        lambda t: simulate("tiny-moe", "--fabric", "leafspine:4x2x2:100Mbps"),
        "--fabric: leafspine:4x2x2:100Mbps: the spines now come first, as in a scenario's "
        "fabric keys: write leafspine:2x4x2@100Mbps (spines x leaves x hosts per leaf)",
    ),
    "--fabric beyond the emulated fabric": (
        lambda t: simulate("tiny-moe", "--fabric", "9x4x2"),
        "--fabric: fabric.spines: must be <= 8, got 9",
    ),
    "--fabric unknown kind": (
        lambda t: simulate("tiny-moe", "--fabric", "torus"),
        "--fabric: torus: expected KIND, or [leafspine:]SxLxH[@RATE[/RATE]]",
    ),
    "--fabric a sized big switch for an emulated fabric": (
        lambda t: simulate("tiny-moe", "--fabric", "bigswitch:8@1Gbps"),
        "--fabric: bigswitch:8@1Gbps: a scenario without sim_fabric is a leafspine or rail; "
        "write bigswitch alone",
    ),
    "--fabric a sim_fabric without sizes": (
        lambda t: simulate("thesis-gpt3-13b", "--fabric", "leafspine"),
        "--fabric: leafspine: give the sim_fabric's sizes, e.g. leafspine:2x4x2@100Gbps",
    ),
    "--fabric of a trace without a rate": (
        lambda t: simulate(
            "--trace", str(REPO / "data" / "FB2010-1Hr-150-0.txt"), "--fabric", "bigswitch"
        ),
        "--fabric: bigswitch: give its size and rate, e.g. bigswitch:150@1Gbps",
    ),
    "workload --fabric of another kind": (
        lambda t: ["workload", "tiny-moe", "--fabric", "rail:4x2x2"],
        "--fabric: rail:4x2x2: expected a leaf-spine's SxLxH, e.g. 2x4x2",
    ),
    "check --fabric with sizes": (
        lambda t: ["check", str(t / "run"), "--fabric", "2x4x2"],
        "--fabric: 2x4x2: check simulates the run's own fabric: leafspine or bigswitch",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch, name):
    argv, message = CASES[name]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    extra = ["-o", str(out)] if argv(tmp_path)[0] == "workload" else ["--out", str(out)]
    before = set(tmp_path.iterdir())
    assert main([*argv(tmp_path), *extra]) == 2
    err = capsys.readouterr().err.strip()
    expected = "coflowbed: error: " + message.replace("{tmp}", str(tmp_path))
    assert err.startswith(expected) and "\n" not in err, err
    assert set(tmp_path.iterdir()) == before  # no output file or folder


@pytest.mark.parametrize(
    ("argv", "value"),
    [
        (simulate("tiny-moe", "--set", "fabric.host_bw_mbps=1e2"), 100.0),
        (simulate("tiny-moe", "--set", "timeout_s=3E2"), 300.0),
    ],
)
def test_numbers_written_with_an_exponent_are_numbers(tmp_path, argv, value):
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 0
    text = (out / "scenario.yaml").read_text()
    key = argv[-1].split("=")[0].split(".")[-1]
    assert f"{key}: {value}" in text
