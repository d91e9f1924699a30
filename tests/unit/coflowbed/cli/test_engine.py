"""``--engine packet`` on the command line and in the Python API: the scenario goes to
the ns-3 engine through the one simulate function (its summary says so), a missing
extra is one line naming it, and the flags are checked before anything is written."""

from __future__ import annotations

import json

import pytest

from coflowbed import api
from coflowbed.cli.main import main
from coflowbed.experiment import simulate as simulate_mod
from tests.data import MECHANISM_SCENARIO


def test_without_ns3_the_packet_engine_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(simulate_mod, "ns3_available", lambda: False)
    argv = ["simulate", str(MECHANISM_SCENARIO), "--engine", "packet", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "pip install 'coflowbed[packet]'" in err and "\n" not in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("scale", ["0", "1.5", "-1"])
def test_a_packet_scale_out_of_range_names_the_flag(tmp_path, capsys, scale):
    argv = ["simulate", str(MECHANISM_SCENARIO), "--engine", "packet", "--packet-scale", scale]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    assert "--packet-scale: must be in (0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_compare_takes_an_engine_only_with_sim(tmp_path, capsys):
    argv = ["compare", str(MECHANISM_SCENARIO), "--policies", "fair", "--engine", "packet"]
    assert main([*argv, "--out", str(tmp_path / "c")]) == 2
    assert "give --sim too" in capsys.readouterr().err and not (tmp_path / "c").exists()


@pytest.mark.packet
@pytest.mark.slow
def test_the_packet_engine_runs_a_scenario_from_the_cli_and_the_api(tmp_path):
    """The mechanism scenario on ns-3 at a tenth of its bytes and rates: every coflow
    finishes, the summary carries the packet block, and urgent (level 0, 20 MB at
    80 Mbit/s: 2 s alone) is within 25 % of the fluid model's CCT."""
    cli = tmp_path / "cli"
    argv = ["simulate", str(MECHANISM_SCENARIO), "--engine", "packet", "--packet-scale", "0.1"]
    assert main([*argv, "--out", str(cli)]) == 0
    summary = json.loads((cli / "summary.json").read_text())
    assert summary["packet"]["engine"] == "ns-3" and summary["packet"]["scale"] == 0.1
    assert summary["coflows"] == summary["coflows_total"] == 3
    fluid = api.simulate(MECHANISM_SCENARIO, out=tmp_path / "fluid")
    packet = api.simulate(
        MECHANISM_SCENARIO, out=tmp_path / "api", engine=api.Engine("packet", "tcp", 0.1)
    )
    ratio = packet.coflow("urgent").cct_s / fluid.coflow("urgent").cct_s
    assert 0.95 < ratio < 1.25


SWEEP = """name: pk
scenario: {scenario}
mode: packet
packet: {{transport: {transport}, scale: 0.1}}
policies: [fair]
"""


def test_a_packet_sweeps_settings_are_checked(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP.format(scenario=MECHANISM_SCENARIO, transport="quic"))
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "packet.transport" in err and "quic" in err and not (tmp_path / "o").exists()


@pytest.mark.packet
@pytest.mark.slow
def test_a_sweep_runs_on_the_packet_engine(tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP.format(scenario=MECHANISM_SCENARIO, transport="dctcp"))
    out = tmp_path / "o"
    assert main(["sweep", str(sweep), "--jobs", "1", "--out", str(out)]) == 0
    (run,) = (out / "runs").iterdir()
    packet = json.loads((run / "summary.json").read_text())["packet"]
    assert (packet["transport"], packet["scale"]) == ("dctcp", 0.1)
