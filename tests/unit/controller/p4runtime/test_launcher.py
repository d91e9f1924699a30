"""The P4Runtime launcher as a process: same control API as the OpenFlow one, driving
fake P4Runtime servers (real gRPC on 127.0.0.1) for every switch of a plan."""

from __future__ import annotations

import os
import subprocess

import pytest

from controller.client import ControllerClient, ControllerError
from controller.coflow_table import TagEntry
from controller.p4runtime.launcher import launcher_argv, parse_grpc_ports
from controller.stats import TagCount
from tests.p4runtime_fake import ART, FakeSwitch, entries_of
from tests.procs import first_line
from topo.plan import FabricPlan

REPO = ART.json.parents[2]


@pytest.fixture
def fabric(tmp_path):
    if not ART.exist():
        pytest.skip("p4src/compiled/ missing: p4c has not compiled the pipeline yet")
    plan = FabricPlan(spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)
    sws = {sw.name: FakeSwitch() for sw in plan.switches}
    plan_json = tmp_path / "plan.json"
    plan_json.write_text(plan.to_json())
    api = tmp_path / "c.sock"
    argv = launcher_argv(
        plan_json, api, tmp_path / "c.log", {n: s.port for n, s in sws.items()}, levels=4
    )
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO, env=dict(os.environ))
    yield plan, sws, proc, api, tmp_path
    if proc.poll() is None:
        proc.terminate()
        proc.wait(10)
    proc.stdout.close()
    for s in sws.values():
        s.stop()


@pytest.mark.processes
@pytest.mark.sockets
def test_launcher_serves_the_control_api_and_writes_the_switches(fabric):
    plan, sws, proc, api, tmp = fabric
    assert first_line(proc, 30) == "READY"
    with ControllerClient(api, timeout=10) as c:
        st = c.wait_ready(20)
        assert list(st.switches) == sorted(sw.name for sw in plan.switches)
        assert len(sws["s1"].fake.pipelines) == 1
        reply = c.set([TagEntry(12, 3, 5.0)])
        assert reply["written"] == 8  # 2 leaves x (2 host rules + 2 meters)
        for leaf in ("l1", "l2"):
            coflow = entries_of(sws[leaf].fake, "CoflowIngress.coflow")
            assert sorted(e.match[0].exact.value[1] for e in coflow) == [1, 2]
            assert all(e.action.action.params[0].value == b"\x03" for e in coflow)
        assert not entries_of(sws["s1"].fake, "CoflowIngress.coflow")
        with pytest.raises(ControllerError, match="level"):
            c.set([TagEntry(12, 4)])  # K = 4
        assert {m.tag for m in c.meter_stats()} == {12}
        assert c.tag_stats() == {12: TagCount(0, 0)}
        assert set(c.port_stats()) == {"l1", "l2", "s1", "s2"}
        c.clear([12])
        assert not entries_of(sws["l1"].fake, "CoflowIngress.coflow")
    proc.terminate()
    assert proc.wait(10) == 0
    assert not api.exists()
    assert "P4Runtime controller ready" in (tmp / "c.log").read_text()


@pytest.mark.processes
def test_launcher_rejects_ports_that_do_not_match_the_plan(tmp_path):
    if not ART.exist():
        pytest.skip("p4src/compiled/ missing")
    plan = FabricPlan(spines=1, leaves=1, hosts_per_leaf=1, host_bw_mbps=10, fabric_bw_mbps=10)
    plan_json = tmp_path / "plan.json"
    plan_json.write_text(plan.to_json())
    argv = launcher_argv(
        plan_json, tmp_path / "c.sock", tmp_path / "c.log", {"l1": 50001, "s9": 50002}
    )
    res = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == "--grpc-ports: switch 's1' has no port"


def test_parse_grpc_ports_rejects_bad_items():
    assert parse_grpc_ports(["l1=50001", "s1=unix:/run/x/s1.grpc"]) == {
        "l1": 50001,
        "s1": "unix:/run/x/s1.grpc",
    }
    for bad, msg in (
        (["l1"], "expected NAME=PORT"),
        (["l1=0"], "expected NAME=PORT"),
        (["l1=unix:rel.grpc"], "or NAME=unix:/PATH"),
        (["l1=1", "l1=2"], "given twice"),
    ):
        with pytest.raises(ValueError, match=msg):
            parse_grpc_ports(bad)
