"""Runs that meet what other runs left (root, real fabric, real processes): a SIGKILLed
run is cleaned by the next plain ``coflowbed run``; a second run is refused while one is
alive; a host agent killed mid-run ends the run partial, naming the host and its lost
flows; the sockets of a live fabric are bound where docs/architecture.md says.

Fabric: 2 spines, 2 leaves, 2 hosts per leaf, 100 Mbit/s links (as tests/integration/
test_run.py).  Every wait polls a condition (a log line, a process exit) with a deadline.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from coflowbed.emulation import runstate
from coflowbed.emulation.cleanup import netns_inodes
from tests.cli import coflowbed
from topo.net import interface_names
from topo.plan import FabricPlan
from workload.agent.proto import DATA_PORT

pytestmark = [pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_bw_mbps": 100, "fabric_bw_mbps": 100}
PLAN = FabricPlan(**FABRIC)
MB = 1_000_000
WMEM = Path("/proc/sys/net/core/wmem_default")
LOST_BOUND_S = 30.0  # a killed agent's run must have ended (cleaned up, results written) by then


def scenario(tmp: Path, name: str, coflows: list[dict]) -> Path:
    """A scenario file on the test fabric."""
    data = {
        "name": name,
        "fabric": FABRIC,
        "policy": "fair",
        "timeout_s": 120,
        "workload": {"coflows": coflows},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def coflow(cid: str, arrival: float, src: str, dst: str, nbytes: int) -> dict:
    return {"id": cid, "arrival_s": arrival, "flows": [{"src": src, "dst": dst, "bytes": nbytes}]}


def start_run(path: Path, out: Path) -> subprocess.Popen:
    """``coflowbed run`` in the background, its log on a pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "coflowbed", "-v", "run", str(path), "--out", str(out)],
        cwd=REPO,
        text=True,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float) -> list[str]:
    """Read ``proc``'s log (raw, so nothing hides in a reader's buffer) until a line
    contains ``needle``; returns the lines read."""
    assert proc.stderr is not None
    fd, buf, seen = proc.stderr.fileno(), b"", []
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and sel.select(left):
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, buf = (buf + chunk).split(b"\n")
        seen += [line.decode(errors="replace") for line in lines]
        if any(needle in line for line in seen):
            return seen
    raise AssertionError(f"{needle!r} not seen within {timeout} s; log tail: {seen[-5:]}")


def stop(proc: subprocess.Popen) -> None:
    """End a runner this test started (by its PID), if still running."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def assert_nothing_left(wmem_before: str, netns_before: set[int], pids: list[int] = ()) -> None:
    """No marked process, none of ``pids``, no interface of the plan, no state file or
    runtime folder (OVS database, sockets), the sysctl as before, no new namespace."""
    assert runstate.marked_pids() == []
    assert [p for p in pids if runstate.pid_alive(p)] == []
    assert not set(os.listdir("/sys/class/net")) & set(interface_names(PLAN))
    assert list(runstate.STATE_DIR.glob("*.json")) == []
    assert [p for p in runstate.STATE_DIR.iterdir() if p.is_dir()] == []
    assert WMEM.read_text() == wmem_before
    assert netns_inodes() <= netns_before


def the_run() -> runstate.RunState:
    """The one registered run."""
    states = runstate.load_states()
    assert len(states) == 1, states
    return states[0]


def agent_pid(run_id: str, host: str) -> int:
    """PID of ``host``'s agent in run ``run_id``."""
    for pid in runstate.marked_pids(run_id):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"workload.agent" in argv and argv[argv.index(b"--host") + 1] == host.encode():
            return pid
    raise AssertionError(f"no agent of {host} in run {run_id}")


def test_sigkilled_run_is_cleaned_by_the_next_plain_run(tmp_path):
    wmem, netns = WMEM.read_text(), netns_inodes()
    long_run = scenario(tmp_path, "killed", [coflow("long", 0, "h11", "h21", 200 * MB)])
    proc = start_run(long_run, tmp_path / "killed")
    try:
        wait_for_line(proc, "connections up", 120)  # controller, OVS, fabric, agents up
        killed = the_run()
        killed_pids = runstate.marked_pids(killed.run_id)
        assert killed_pids
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        stop(proc)
    assert killed.path.exists()  # left behind: the runner had no chance to clean up
    short = scenario(tmp_path, "after", [coflow("short", 0, "h12", "h22", 5 * MB)])
    res = coflowbed("run", str(short), "--out", str(tmp_path / "after"), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    said = [line for line in res.stderr.splitlines() if "stale run" in line]
    assert len(said) == 1 and killed.run_id in said[0] and "dead" in said[0], said
    summary = json.loads((tmp_path / "after" / "summary.json").read_text())
    assert summary["partial"] is False and summary["coflows"] == 1
    assert_nothing_left(wmem, netns, killed_pids)


def test_second_run_is_refused_while_one_is_alive(tmp_path):
    wmem, netns = WMEM.read_text(), netns_inodes()
    first = start_run(
        scenario(tmp_path, "first", [coflow("a", 0, "h11", "h21", 100 * MB)]), tmp_path / "first"
    )
    try:
        wait_for_line(first, "connections up", 120)
        live = the_run()
        t0 = time.monotonic()
        second = scenario(tmp_path, "second", [coflow("b", 0, "h12", "h22", MB)])
        res = coflowbed("run", str(second), "--out", str(tmp_path / "second"), timeout=60)
        assert time.monotonic() - t0 < 20  # refused at once, nothing started
        assert res.returncode == 2, res.stderr[-2000:]
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert f"pid {live.runner_pid}" in lines[0] and live.started in lines[0], lines[0]
        assert "coflowbed clean" in lines[0]
        assert not (tmp_path / "second").exists()
        assert [s.run_id for s in runstate.load_states()] == [live.run_id]  # untouched
        first.communicate(timeout=120)
    finally:
        stop(first)
    assert first.returncode == 0
    assert json.loads((tmp_path / "first" / "summary.json").read_text())["partial"] is False
    assert_nothing_left(wmem, netns)


def test_killed_agent_ends_the_run_partial_naming_host_and_flows(tmp_path):
    wmem, netns = WMEM.read_text(), netns_inodes()
    cfs = [
        coflow("short", 0, "h12", "h22", MB),
        coflow("long", 0, "h11", "h21", 200 * MB),  # ~16 s: in flight when h21 dies
        coflow("later", 60, "h21", "h12", MB),  # not released yet
    ]
    proc = start_run(scenario(tmp_path, "agent", cfs), tmp_path / "agent")
    try:
        wait_for_line(proc, "coflow short (", 120)  # the iteration runs; 'long' in flight
        run = the_run()
        run_pids = runstate.marked_pids(run.run_id)
        os.kill(agent_pid(run.run_id, "h21"), signal.SIGKILL)
        t_kill = time.monotonic()
        _, log = proc.communicate(timeout=LOST_BOUND_S + 30)
        elapsed = time.monotonic() - t_kill
    finally:
        stop(proc)
    assert proc.returncode == 1, log[-2000:]
    assert elapsed < LOST_BOUND_S, elapsed
    summary = json.loads((tmp_path / "agent" / "summary.json").read_text())
    assert summary["partial"] is True
    assert list(summary["lost"]["hosts"]) == ["h21"]
    assert summary["lost"]["flows"] == ["long.f0"]
    assert summary["lost"]["not_released"] == ["later.f0"]
    assert "h21" in summary["error"] and "long.f0" in summary["error"]
    assert any("agent lost: h21" in line and "long.f0" in line for line in log.splitlines())
    assert_nothing_left(wmem, netns, run_pids)


# -- sockets of a live fabric ----------------------------------------------------------


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets ``pid`` holds open."""
    found = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(int(target[8:-1]))
    except OSError:
        pass
    return found


def inet_table(pid: int, name: str) -> list[tuple[str, int, str, int]]:
    """(local address, port, state, inode) of ``/proc/<pid>/net/<name>`` (the view of
    ``pid``'s network namespace); IPv4 and IPv6 addresses as hex, decoded."""
    rows = []
    for line in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]:
        f = line.split()
        addr, port = f[1].split(":")
        rows.append((_ip(addr), int(port, 16), f[3], int(f[9])))
    return rows


def _ip(hexaddr: str) -> str:
    import ipaddress

    raw = bytes.fromhex(hexaddr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def unix_listeners(pid: int) -> list[tuple[str, int]]:
    """(path, inode) of the listening Unix sockets in ``pid``'s namespace view."""
    rows = []
    for line in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        if int(f[3], 16) & 0x10000 and len(f) > 7:  # __SO_ACCEPTCON, bound to a name
            rows.append((f[7], int(f[6])))
    return rows


def test_live_fabric_listens_only_where_documented(tmp_path):
    wmem, netns = WMEM.read_text(), netns_inodes()
    root_ns = os.stat("/proc/self/ns/net").st_ino
    proc = start_run(
        scenario(tmp_path, "sockets", [coflow("a", 0, "h11", "h21", 20 * MB)]), tmp_path / "run"
    )
    try:
        wait_for_line(proc, "connections up", 120)
        run = the_run()
        pids = [*runstate.marked_pids(run.run_id), run.runner_pid]
        tcp, unix = [], []
        for pid in pids:
            inodes = socket_inodes(pid)
            ns = os.stat(f"/proc/{pid}/ns/net").st_ino
            for table in ("tcp", "tcp6", "udp", "udp6"):
                for addr, port, state, inode in inet_table(pid, table):
                    listening = state == "0A" if table.startswith("tcp") else state == "07"
                    if inode in inodes and listening:
                        tcp.append((pid, ns == root_ns, table, addr, port))
            unix += [(pid, path) for path, inode in unix_listeners(pid) if inode in inodes]
        cmd = {p: Path(f"/proc/{p}/cmdline").read_bytes() for p, *_ in tcp}
        modes = {d: d.stat().st_mode & 0o777 for _, p in unix for d in _folders(Path(p))}
        assert proc.poll() is None  # all of it read while the run was alive
        proc.communicate(timeout=120)
    finally:
        stop(proc)
    assert proc.returncode == 0
    root = {(t, a, p) for pid, in_root, t, a, p in tcp if in_root}
    # the root namespace: OpenFlow of the controller on loopback, nothing else
    assert root and all(a in ("127.0.0.1", "::1") for _, a, _ in root), root
    assert all(b"controller.launcher" in cmd[pid] for pid, in_root, *_ in tcp if in_root)
    # host namespaces: every agent's data port on its host's address, TCP only
    hosted = {(a, p) for pid, in_root, t, a, p in tcp if not in_root}
    assert hosted == {(h.ip, DATA_PORT) for h in PLAN.hosts}, hosted
    assert all(t == "tcp" for _, in_root, t, *_ in tcp if not in_root)
    # Unix sockets: all in the run's runtime folder, every folder on the way 0700
    runtime = runstate.STATE_DIR / run.run_id
    paths = {Path(p) for _, p in unix}
    assert {runtime / "controller.sock", runtime / "ovs" / "db.sock"} <= paths, paths
    assert {runtime / "agents" / f"{h.name}.sock" for h in PLAN.hosts} <= paths, paths
    assert all(runtime in path.parents for path in paths), paths
    assert runstate.STATE_DIR in modes and runtime in modes
    assert {d: m for d, m in modes.items() if m != 0o700} == {}
    assert_nothing_left(wmem, netns)


def _folders(path: Path) -> list[Path]:
    """The folders from the registry folder down to ``path``'s own."""
    return [d for d in path.parents if d == runstate.STATE_DIR or runstate.STATE_DIR in d.parents]
