"""The fabric's MTU: validated and recorded by the plan, applied to both ends of every
link (OVS and BMv2 bring-up), and sizing the port schedulers (no root)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from topo import bmv2, net, qos
from topo.leafspine import intf_name
from topo.plan import DEFAULT_MTU, LEGACY_MTU, FabricPlan


def _plan(**kw) -> FabricPlan:
    return FabricPlan(
        spines=2, leaves=3, hosts_per_leaf=2, host_bw_mbps=50, fabric_bw_mbps=80, **kw
    )


class FakeNet:
    """Just enough of a Mininet object: hosts with a shell pid; records start()."""

    def __init__(self, plan: FabricPlan, calls: list) -> None:
        self.hosts = {h.name: SimpleNamespace(pid=1000 + i) for i, h in enumerate(plan.hosts)}
        self.calls = calls
        self.controllers = []

    def get(self, name: str):
        return self.hosts[name]

    def start(self) -> None:
        self.calls.append(("start",))
        raise RuntimeError("fake start")

    def stop(self) -> None:
        self.calls.append(("stop",))


@pytest.fixture
def ip_batches(monkeypatch):
    """Every ``ip -batch`` the fabric code would run: (lines, netns pid)."""
    calls = []
    monkeypatch.setattr(
        net, "run_ip_batch", lambda lines, what, netns_pid=None: calls.append((lines, netns_pid))
    )
    return calls


def test_default_mtu_is_jumbo_and_recorded():
    plan = _plan()
    assert plan.mtu == DEFAULT_MTU == 9000 and plan.frame_bytes == 9014
    d = json.loads(plan.to_json())
    assert d["mtu"] == 9000
    assert FabricPlan.from_dict(d) == plan
    assert FabricPlan.from_dict(_plan(mtu=1500).to_dict()).mtu == 1500


def test_a_plan_recorded_before_the_mtu_key_reads_as_1500():
    d = _plan().to_dict()
    del d["mtu"]
    assert FabricPlan.from_dict(d).mtu == LEGACY_MTU == 1500


@pytest.mark.parametrize("mtu", [1499, 9001, 0, 9000.0, "9000", True])
def test_plan_rejects_mtu_outside_1500_9000(mtu):
    with pytest.raises(ValueError, match=r"mtu must be an integer in 1500\.\.9000"):
        _plan(mtu=mtu)


@pytest.mark.parametrize("mtu", [1500, 9000])
def test_plan_accepts_the_bounds(mtu):
    assert _plan(mtu=mtu).mtu == mtu


@pytest.mark.parametrize("mtu", [1500, 4000, 9000])
def test_every_interface_gets_the_plan_mtu(ip_batches, mtu):
    plan = _plan(mtu=mtu)
    net.apply_mtu(FakeNet(plan, []), plan)
    root = [ln for lines, pid in ip_batches if pid is None for ln in lines]
    assert sorted(root) == sorted(
        f"link set dev {d} mtu {mtu}" for d in net.switch_interfaces(plan)
    )
    in_hosts = {pid: lines for lines, pid in ip_batches if pid is not None}
    fake = FakeNet(plan, [])
    assert in_hosts == {
        fake.get(h.name).pid: [f"link set dev {h.name}-eth0 mtu {mtu}"] for h in plan.hosts
    }
    # both ends of every link
    assert len(root) + len(in_hosts) == 2 * len(plan.links)


def test_port_schedulers_carry_the_plan_mtu():
    root, hosts = net.port_schedulers(_plan(mtu=4000), levels=2, queue_packets=10)
    assert {ps.mtu for ps in root} | {ps.mtu for ps in hosts.values()} == {4000}


@pytest.mark.parametrize(
    "mtu, packets, limit", [(1500, 77, 77 * 1514), (9000, 77, 77 * 1514), (9000, 2, 4 * 9014)]
)
def test_queues_hold_the_bytes_of_1500_byte_frames_but_at_least_four_of_the_mtu(
    mtu, packets, limit
):
    ps = qos.PortScheduler("l1-eth1", 100, 2, packets, mtu=mtu)
    fifos = [ln for ln in qos.tc_batch_lines(ps) if " bfifo " in ln]
    assert len(fifos) == 2 * qos.BUCKETS
    assert all(ln.endswith(f"bfifo limit {limit}") for ln in fifos)


def test_htb_burst_is_explicit_covers_a_frame_and_scales_with_rate():
    lines = qos.tc_batch_lines(qos.PortScheduler("x", 100, 2, 10, mtu=9000))
    classes = [ln for ln in lines if ln.startswith("class add")]
    burst = int(100e6 / 8 * qos.BURST_S)
    assert f"burst {burst} cburst {burst}" in classes[0]  # the link class 1:1
    assert all(f"cburst {burst}" in ln for ln in classes)
    assert all(" burst " not in ln for ln in classes[1:])  # tiny-rate tokens: tc default
    assert qos.PortScheduler("x", 1, 1, mtu=9000).burst_bytes == 9014  # floor: one frame
    assert qos.PortScheduler("x", 200, 1).burst_bytes == 2 * burst


def test_quantum_exceeds_a_frame_at_every_mtu():
    assert qos.QUANTUM_BYTES >= qos.PortScheduler("x", 10, 1, mtu=9000).frame_bytes


def test_scheduler_rejects_a_bad_mtu():
    with pytest.raises(ValueError, match="mtu"):
        qos.PortScheduler("x", 10, 1, mtu=9001)


class FakeBmv2Net(FakeNet):
    """FakeNet whose switches and hosts are nodes with a shell pid and interfaces (each
    BMv2 switch and host in a namespace of its own)."""

    def __init__(self, plan: FabricPlan, calls: list) -> None:
        super().__init__(plan, calls)
        ends: dict[str, list[str]] = {}
        for link in plan.links:
            for node, port in ((link.node1, link.port1), (link.node2, link.port2)):
                ends.setdefault(node, []).append(intf_name(node, port))
        names = [sw.name for sw in plan.switches] + [h.name for h in plan.hosts]
        self.nodes = {
            n: SimpleNamespace(
                name=n,
                pid=2000 + i,
                intfList=lambda n=n: (
                    [SimpleNamespace(name="lo")] + [SimpleNamespace(name=d) for d in ends[n]]
                ),
            )
            for i, n in enumerate(names)
        }
        self.switches = [self.nodes[sw.name] for sw in plan.switches]
        self.hosts = [self.nodes[h.name] for h in plan.hosts]


def test_bmv2_bring_up_sets_the_mtu_in_each_namespace_before_the_switches_start(
    monkeypatch, tmp_path
):
    plan, calls = _plan(), []
    fake = FakeBmv2Net(plan, calls)
    monkeypatch.setattr(bmv2, "bmv2_available", lambda: None)
    monkeypatch.setattr(bmv2, "_build_net", lambda *a: fake)
    monkeypatch.setattr(
        bmv2,
        "run_ip_batch",
        lambda lines, what, netns_pid=None: calls.append(("ip", lines, netns_pid)),
    )
    with pytest.raises(RuntimeError, match="fake start"):
        bmv2.start_bmv2_fabric(plan, tmp_path, {}, levels=2)
    first_start = calls.index(("start",))
    mtu_set = [c for c in calls[:first_start] if c[0] == "ip"]
    assert sum(len(lines) for _ip, lines, _pid in mtu_set) == 2 * len(plan.links)
    assert all(ln.endswith(" mtu 9000") for _ip, lines, _pid in mtu_set for ln in lines)
    pid_of = {node.name: node.pid for node in fake.nodes.values()}
    for _ip, lines, pid in mtu_set:  # every interface set in its own node's namespace
        assert all(pid_of[ln.split()[3].rsplit("-eth", 1)[0]] == pid for ln in lines), lines
    assert calls[-1] == ("stop",)


class FakeOvs:
    """Stands in for OvsService: records start/stop and the TSO setting."""

    def __init__(self, calls: list):
        self.calls = calls

    def __call__(self, run_dir, userspace_tso=True):
        self.calls.append(("ovs", userspace_tso))
        return self

    def start(self) -> None:
        self.calls.append(("ovs-start",))

    def stop(self) -> None:
        self.calls.append(("ovs-stop",))


def test_ovs_bring_up_records_mtu_and_datapath_and_sets_the_mtu_before_start(monkeypatch, tmp_path):
    plan, calls = _plan(mtu=4000), []
    monkeypatch.setattr(net, "detect_datapath", lambda: "netdev")
    monkeypatch.setattr(net, "OvsService", FakeOvs(calls))
    built = []
    monkeypatch.setattr(
        net, "_build_net", lambda p, port, dp: built.append(dp) or FakeNet(plan, calls)
    )
    monkeypatch.setattr(
        net, "run_ip_batch", lambda lines, what, netns_pid=None: calls.append(("ip", lines))
    )
    with pytest.raises(RuntimeError, match="fake start"):
        net.start_fabric(plan, tmp_path, controller_port=1, levels=2, userspace_tso=False)
    assert built == ["netdev"] and ("ovs", False) in calls
    first_start = calls.index(("start",))
    mtu_lines = [ln for c in calls[:first_start] if c[0] == "ip" for ln in c[1]]
    assert len(mtu_lines) == 2 * len(plan.links)
    assert all(ln.endswith(" mtu 4000") for ln in mtu_lines)
    assert calls[-2:] == [("stop",), ("ovs-stop",)]  # everything started is stopped
    rec = net.recorded_names(tmp_path)
    assert rec["datapath"] == "netdev" and rec["plan"]["mtu"] == 4000


def test_ipv6_is_switched_off_where_the_kernel_has_it(tmp_path):
    (tmp_path / "l1-eth1").mkdir()
    (tmp_path / "l1-eth1" / "disable_ipv6").write_text("0\n")
    assert net.disable_ipv6(["l1-eth1", "l1-eth2"], conf=tmp_path) == 1  # l1-eth2: no IPv6
    assert (tmp_path / "l1-eth1" / "disable_ipv6").read_text() == "1\n"
