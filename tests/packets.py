"""Packet-level checks of the coflow pipelines, as PTF tests do for P4 programs (shared
test helper for ``tests/integration/test_pipeline_packets.py``, which runs them on Open
vSwitch and on BMv2).

A crafted frame (scapy: Ether/IPv4/UDP or TCP, the tag as DSCP, a marker payload) is sent
from a host's namespace with ``sendp`` on a packet socket opened in that namespace, and
captured with ``sniff`` on the switch-side veths in the root namespace, egress only: the
ingress leaf's uplinks (after the coflow table) and the receiving leaf's port towards the
destination host.  A captured frame must equal, byte for byte, the frame sent with only
the DSCP changed (to ``56 + level`` for a tag with an entry, not at all otherwise) and the
IPv4 header checksum recomputed: no other field may change.  The HTB class counters of
those egress ports (``tc -s class show``) must grow in exactly the class of the expected
level, by the packets and bytes sent.  For metered tags the meter's counters
(``ControllerClient.meter_stats``) must account for every frame that did not reach the
wire.

Every wait below polls a condition (frames captured, counters moved) until a deadline.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import select
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from scapy.config import conf
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from scapy.sendrecv import sendp, sniff
from scapy.supersocket import SimpleSocket, SuperSocket

from controller.client import ControllerClient
from controller.coflow_table import DEFAULT_BURST_S, TagEntry, meter_spec
from tests.procs import first_line
from topo import qos
from topo.leafspine import intf_name
from topo.plan import FabricPlan, HostPlan
from workload.marking import LEVEL_CODE_BASE, TAG_MAX, TAG_MIN, level_dscp, tos_byte

conf.verb = 0

REPO = Path(__file__).resolve().parent.parent
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4  # sockaddr_ll.sll_pkttype of a frame the interface transmits
CLONE_NEWNET = 0x40000000
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
CAPTURE_BUFFER = 8 << 20  # bytes: a burst never overflows the capture socket
WAIT_S = 5.0  # deadline of every poll below (they end in milliseconds when all is well)
POLL_S = 0.02
DPORT = 7777  # nothing listens there: receivers answer UDP with ICMP, TCP with a RST
_seq = itertools.count(1)

_libc = ctypes.CDLL(None, use_errno=True)


# --- sockets ---------------------------------------------------------------------------


def netns_packet_socket(pid: int, dev: str, protocol: int = 0) -> socket.socket:
    """An AF_PACKET socket bound to ``dev`` in the network namespace of process ``pid``
    (a Mininet host's shell, or a BMv2 switch's), for sending only by default (protocol
    0: it receives nothing).  It is opened by a short-lived thread that joins that
    namespace (setns affects only the calling thread); a socket keeps the namespace it
    was created in."""
    out: dict = {}

    def opener() -> None:
        try:
            with open(f"/proc/{pid}/ns/net") as ns:
                if _libc.setns(ns.fileno(), CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into the netns of pid {pid}: {os.strerror(err)}")
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, protocol)
            try:
                if protocol:
                    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, CAPTURE_BUFFER)
                sock.bind((dev, socket.ntohs(protocol)))
            except BaseException:
                sock.close()
                raise
            out["sock"] = sock
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            out["error"] = e

    t = threading.Thread(target=opener, name=f"netns-{pid}-{dev}", daemon=True)
    t.start()
    t.join(WAIT_S)
    if "error" in out:
        raise out["error"]
    if "sock" not in out:
        raise TimeoutError(f"opening a packet socket on {dev} (pid {pid}) took > {WAIT_S} s")
    return out["sock"]


class EgressCapture(SuperSocket):
    """scapy socket for ``sniff(opened_socket=...)``: the frames ``dev`` (root namespace,
    or that of process ``netns_pid``: a BMv2 switch's) transmits, as Ether packets;
    received frames are skipped.  Open it before sending: frames wait in its (large)
    buffer until read."""

    desc = "frames transmitted by one interface (AF_PACKET, PACKET_OUTGOING only)"

    def __init__(self, dev: str, netns_pid: int | None = None) -> None:
        self.iface, self.promisc, self.outs = dev, False, None
        if netns_pid is not None:
            self.ins = netns_packet_socket(netns_pid, dev, socket.htons(ETH_P_ALL))
            return
        self.ins = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            self.ins.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, CAPTURE_BUFFER)
            self.ins.bind((dev, ETH_P_ALL))
        except BaseException:
            self.ins.close()
            raise
        self.outs = None

    def recv_raw(self, x: int = 65535):
        """(Ether, frame, time) for a transmitted frame, (None, None, None) otherwise."""
        data, addr = self.ins.recvfrom(x)
        if addr[2] != PACKET_OUTGOING:
            return None, None, None
        return Ether, data, time.time()


# --- frames ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """Frames of one send: ``frames[i]`` carries the marker ``token`` and sequence i."""

    token: bytes
    frames: tuple[Packet, ...]

    def matches(self, pkt: Packet) -> bool:
        """Is ``pkt`` one of ours (by the marker at the start of its payload)?"""
        return Raw in pkt and pkt[Raw].load.startswith(self.token)

    def seq_of(self, pkt: Packet) -> int:
        """Sequence number of our frame ``pkt``."""
        return int(pkt[Raw].load[len(self.token) : len(self.token) + 5])

    @property
    def nbytes(self) -> int:
        """Bytes of all frames (what a tc class counts for them)."""
        return sum(len(f) for f in self.frames)


def make_probe(
    src: HostPlan, dst: HostPlan, dscp: int, proto: str, count: int, size: int = 200
) -> Probe:
    """``count`` frames of ``size`` bytes from ``src`` to ``dst`` with ``dscp``; ``proto``
    "udp" or "tcp" (a PSH/ACK segment).  Checksums are fixed here (the frames are
    re-dissected), so a frame on the wire can be compared byte for byte."""
    if proto not in ("udp", "tcp"):
        raise ValueError(f"proto must be udp or tcp, got {proto!r}")
    token = b"cfbpkt-" + uuid.uuid4().hex[:10].encode() + b":"
    sport = 20000 + next(_seq) % 20000
    frames = []
    for i in range(count):
        l4 = (
            UDP(sport=sport, dport=DPORT)
            if proto == "udp"
            else TCP(sport=sport, dport=DPORT, flags="PA", seq=1000 + 100 * i, ack=1)
        )
        head = (
            Ether(src=src.mac, dst=dst.mac)
            / IP(src=src.ip, dst=dst.ip, tos=tos_byte(dscp), ttl=64, id=i + 1)
            / l4
        )
        load = token + b"%05d:" % i
        load += b"x" * max(0, size - len(head) - len(load))
        frames.append(Ether(bytes(head / Raw(load))))
    return Probe(token, tuple(frames))


def with_dscp(frame: Packet, dscp: int) -> bytes:
    """``frame`` as a switch that only rewrites its DSCP (ECN kept) must emit it: the
    IPv4 header checksum recomputed, nothing else changed."""
    p = frame.copy()
    p[IP].tos = tos_byte(dscp) | (p[IP].tos & 0x3)
    del p[IP].chksum
    return bytes(p)


def dscp_of(pkt: Packet) -> int:
    """DSCP of a captured frame."""
    return pkt[IP].tos >> 2


def ip_checksum_ok(pkt: Packet) -> bool:
    """Is the IPv4 header checksum of captured ``pkt`` correct?"""
    p = pkt.copy()
    del p[IP].chksum
    return Ether(bytes(p))[IP].chksum == pkt[IP].chksum


def send_probe(pid: int, dev: str, probe: Probe) -> float:
    """``sendp`` the probe's frames out of ``dev`` in the namespace of ``pid``; returns
    the monotonic time just before the first frame left."""
    sock = netns_packet_socket(pid, dev)
    try:
        t0 = time.monotonic()
        sendp(list(probe.frames), socket=SimpleSocket(sock), verbose=False)
        return t0
    finally:
        sock.close()


# --- waiting ---------------------------------------------------------------------------


def poll(read: Callable[[], object], done: Callable[[object], bool], timeout: float = WAIT_S):
    """Call ``read`` until ``done(value)`` or ``timeout`` s passed; the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value) or time.monotonic() >= deadline:
            return value
        time.sleep(POLL_S)  # poll interval of a deadline-bounded wait


def tc_level(frame: Packet, levels: int) -> int:
    """The level class the port schedulers' filters put ``frame`` in (an oracle written
    from docs/fabric.md, independent of topo/qos.py): a level code 56+L -> L, DSCP 0 ->
    0, any other IPv4 -> the lowest level, anything else (IPv6, ARP) -> HTB's default,
    a bucket of level 0."""
    if IP not in frame:
        return 0
    dscp = dscp_of(frame)
    if dscp == 0:
        return 0
    if 0 <= dscp - LEVEL_CODE_BASE < levels:
        return dscp - LEVEL_CODE_BASE
    return levels - 1


class Stage:
    """One stage of the path: a set of egress interfaces (e.g. a leaf's uplinks), their
    capture sockets (opened on entry, before anything is sent) and tc class counters
    (read on entry).  Frames of the probe are kept in ``seen``; every other frame the
    interfaces transmit meanwhile (none is expected: IPv6 is off on the switch ports) in
    ``others``, so the class counters can be held
    to what really crossed the port."""

    def __init__(
        self, name: str, devs: Sequence[str], levels: int, netns_pid: int | None = None
    ) -> None:
        self.name, self.devs, self.levels = name, list(devs), levels
        self.netns_pid = netns_pid  # the switch's namespace when it has one (BMv2)
        self.socks: list[EgressCapture] = []
        self.seen: list[Packet] = []
        self.others: list[Packet] = []
        self.before: dict[int, tuple[int, int]] = {}
        self._probe: Probe | None = None

    def __enter__(self) -> Stage:
        try:
            self.socks = [EgressCapture(d, self.netns_pid) for d in self.devs]
            self.before = tc_reading(self.devs, self.levels, self.netns_pid)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every capture socket."""
        for s in self.socks:
            s.close()
        self.socks = []

    def collect(
        self, probe: Probe, until: Callable[[list[Packet]], bool], timeout: float = WAIT_S
    ) -> list[Packet]:
        """Sniff until ``until(frames of probe seen so far)`` or ``timeout`` s, then take
        whatever else is already buffered; all frames of ``probe`` seen."""
        self._probe = probe
        deadline = time.monotonic() + timeout
        while not until(self.seen) and (left := deadline - time.monotonic()) > 0:
            self._sort(sniff(opened_socket=self.socks, timeout=min(left, 0.05), store=True))
        self._drain()  # duplicates or extra frames already here count too
        return self.seen

    def _sort(self, frames) -> None:
        for p in frames:
            (self.seen if self._probe.matches(p) else self.others).append(p)

    def _drain(self) -> None:
        """Read every frame already buffered, without waiting (``sniff(timeout=0)``
        returns before reading anything)."""
        while ready := select.select(self.socks, [], [], 0)[0]:
            self._sort(p for p in (s.recv() for s in ready) if p is not None)

    def class_moves(self, level: int) -> tuple[dict, dict]:
        """(moved, want): how the level classes' (packets, bytes) moved since entry, and
        how they must have moved: the probe's frames seen in ``level``'s class, every
        other frame in the class :func:`tc_level` gives it.  Polled until they agree
        (tc counts a frame at dequeue, just before the capture sees it)."""

        def read():
            moved = class_deltas(self.before, tc_reading(self.devs, self.levels, self.netns_pid))
            self._drain()
            want = {lv: [0, 0] for lv in range(self.levels)}
            for lv, frames in [(level, self.seen)] + [(None, [f]) for f in self.others]:
                for f in frames:
                    k = tc_level(f, self.levels) if lv is None else lv
                    want[k][0] += 1
                    want[k][1] += len(f)
            return moved, {lv: tuple(v) for lv, v in want.items()}

        return poll(read, lambda mw: mw[0] == mw[1])

    def assert_class(self, level: int) -> None:
        """The probe's frames went through ``level``'s class and nothing unexplained
        moved any class (see :meth:`class_moves`)."""
        moved, want = self.class_moves(level)
        assert moved == want, (
            f"{self.name} {self.devs}: tc classes moved {moved}, expected "
            f"{want} (our frames at level {level}, "
            f"{len(self.others)} other frames)"
        )


def class_deltas(before: dict, after: dict) -> dict[int, tuple[int, int]]:
    """Per level (packets, bytes) that moved between two summed class_stats readings."""
    return {lv: (after[lv][0] - before[lv][0], after[lv][1] - before[lv][1]) for lv in after}


def tc_reading(
    devs: Sequence[str], levels: int, netns_pid: int | None = None
) -> dict[int, tuple[int, int]]:
    """Per level (packets, bytes) of the HTB level classes, summed over ``devs`` (in the
    namespace of ``netns_pid``, else the root one)."""
    total = {lv: [0, 0] for lv in range(levels)}
    for dev in devs:
        for lv, st in qos.class_stats(dev, netns_pid, levels=levels).items():
            total[lv][0] += st.packets
            total[lv][1] += st.bytes
    return {lv: (p, b) for lv, (p, b) in total.items()}


# --- the bench -------------------------------------------------------------------------


@dataclass
class Bench:
    """A running fabric with its controller, as the packet tests use it."""

    fab: object  # topo.net.Fabric or topo.bmv2's fabric: .plan, .host(name)
    client: ControllerClient
    plan: FabricPlan
    levels: int

    def uplinks(self, leaf: int) -> list[str]:
        """Egress interfaces of leaf ``leaf`` towards the spines."""
        return [
            intf_name(f"l{leaf}", self.plan.uplink_port(s)) for s in range(1, self.plan.spines + 1)
        ]

    def leaf_ns(self, leaf: int) -> int | None:
        """PID whose network namespace holds leaf ``leaf``'s ports: its shell's when the
        switch has a namespace of its own (BMv2), else None (the root namespace)."""
        node = self.fab.net.get(f"l{leaf}")  # type: ignore[attr-defined]
        return node.pid if getattr(node, "inNamespace", False) else None

    def to_host(self, host: HostPlan) -> list[str]:
        """Egress interface of ``host``'s leaf towards it."""
        return [intf_name(f"l{host.leaf}", host.leaf_port)]

    def send(self, src: HostPlan, probe: Probe) -> float:
        """Send ``probe`` from host ``src``'s NIC; monotonic time of the first frame."""
        return send_probe(self.fab.host(src.name).pid, intf_name(src.name, 0), probe)


def pick_hosts(plan: FabricPlan, sender: str | None = None) -> tuple[HostPlan, HostPlan]:
    """A sender (``sender`` or the first host of leaf 1) and a receiver on another leaf."""
    src = plan.host(sender) if sender else plan.hosts[0]
    dst = next(h for h in plan.hosts if h.leaf != src.leaf)
    return src, dst


def describe(probe: Probe, seen: list[Packet]) -> str:
    """Short account of captured frames for assertion messages."""
    return ", ".join(f"#{probe.seq_of(p)} dscp {dscp_of(p)}" for p in seen) or "nothing"


def check_forwarding(
    bench: Bench,
    src: HostPlan,
    dst: HostPlan,
    dscp_sent: int,
    dscp_wire: int,
    level: int,
    proto: str,
    count: int = 5,
) -> None:
    """Send ``count`` frames with ``dscp_sent`` from ``src`` to ``dst``; on the ingress
    leaf's uplinks and on the receiving leaf's port to ``dst`` every frame must appear
    exactly once, equal to the sent frame with DSCP ``dscp_wire`` (checksum recomputed,
    nothing else changed), and on both the HTB class of ``level`` must have grown by the
    frames' packets and bytes (no other class by them: see :meth:`Stage.class_moves`)."""
    probe = make_probe(src, dst, dscp_sent, proto, count)
    expected = {i: with_dscp(f, dscp_wire) for i, f in enumerate(probe.frames)}
    with contextlib.ExitStack() as stack:
        stages = [
            stack.enter_context(Stage(name, devs, bench.levels, bench.leaf_ns(leaf)))
            for name, devs, leaf in (
                ("uplink", bench.uplinks(src.leaf), src.leaf),
                ("to-host", bench.to_host(dst), dst.leaf),
            )
        ]
        bench.send(src, probe)
        for st in stages:
            seen = st.collect(probe, lambda s: len(s) >= count)
            got = sorted(probe.seq_of(p) for p in seen)
            assert got == list(range(count)), (
                f"{st.name} {st.devs}: frames {got} of {count} ({describe(probe, seen)})"
            )
            for p in seen:
                i = probe.seq_of(p)
                assert dscp_of(p) == dscp_wire, (
                    f"{st.name}: frame #{i} has DSCP {dscp_of(p)}, expected {dscp_wire}"
                )
                assert ip_checksum_ok(p), f"{st.name}: frame #{i} has a bad IPv4 checksum"
                assert bytes(p) == expected[i], (
                    f"{st.name}: frame #{i} differs from the sent one beyond its DSCP"
                )
        for st in stages:
            st.assert_class(level)


@dataclass(frozen=True)
class MeterVerdict:
    """What a metered burst did: frames sent, seen on the uplinks, the meter's counters."""

    sent: int
    passed: list[Packet]
    packets_in: int
    drop_packets: int
    elapsed_s: float


def meter_counters(client: ControllerClient, leaf: str, tag: int, src: str) -> tuple[int, int]:
    """(packets_in, drop_packets) of the one installed meter of (tag, src) on ``leaf``
    (meter_stats also lists meters removed by earlier clears, with ``retired: true``)."""
    ms = [
        m
        for m in client.meter_stats()
        if m.switch == leaf and m.tag == tag and m.src == src and m.dst is None and not m.retired
    ]
    assert len(ms) == 1, f"meters of tag {tag} from {src} on {leaf}: {ms}"
    return ms[0].packets_in, ms[0].drop_packets


def send_burst(
    bench: Bench,
    src: HostPlan,
    dst: HostPlan,
    tag: int,
    level: int,
    count: int,
    size: int,
    metered: bool,
) -> tuple[Probe, MeterVerdict, tuple]:
    """A burst of ``count`` frames of ``size`` B with ``tag`` from ``src``; waits until
    every frame is accounted for: seen on the uplinks, or (``metered``) dropped by the
    meter.  Returns the probe, the verdict and the uplinks' class moves for ``level``
    (:meth:`Stage.class_moves`: (moved, want))."""
    probe = make_probe(src, dst, tag, "udp", count, size)
    leaf = f"l{src.leaf}"
    with Stage("uplink", bench.uplinks(src.leaf), bench.levels, bench.leaf_ns(src.leaf)) as st:
        t0 = bench.send(src, probe)
        counters = (0, 0)

        def accounted(seen: list[Packet]) -> bool:
            nonlocal counters
            if metered:
                counters = meter_counters(bench.client, leaf, tag, src.name)
            return len(seen) + counters[1] >= count

        seen = st.collect(probe, accounted)
        elapsed = time.monotonic() - t0
        if metered:
            counters = meter_counters(bench.client, leaf, tag, src.name)
        moves = st.class_moves(level)
    return probe, MeterVerdict(count, list(seen), counters[0], counters[1], elapsed), moves


def check_meter(
    bench: Bench,
    src: HostPlan,
    dst: HostPlan,
    tag: int,
    level: int,
    rate_mbps: float,
    count: int = 60,
    size: int = 1000,
    burst_s: float = DEFAULT_BURST_S,
) -> MeterVerdict:
    """A tag metered at ``rate_mbps`` (its meter's burst: ``burst_s`` of the rate) and a
    back-to-back burst of ``count`` x ``size`` B, many times that burst: part of it passes
    and part is dropped; the meter saw every frame, its drop counter and the frames on the
    wire add up to the frames sent, what passed is the bucket (it starts full) plus what
    the rate refilled while the burst lasted, within a frame, and every frame that
    passed carries the level code and went through that level's tc class."""
    spec = meter_spec(("host", tag, src.name), rate_mbps, burst_s)
    bucket, refill = spec.burst_kbit * 125, spec.rate_kbps * 125  # bytes, bytes/s
    assert count * size > 4 * bucket, "the burst must be well over the meter's burst"
    bench.client.set([TagEntry(tag, level, rate_mbps, senders=frozenset({src.name}))])
    try:
        probe, v, (moved, want) = send_burst(bench, src, dst, tag, level, count, size, metered=True)
    finally:
        bench.client.clear([tag])
    passed = len(v.passed)
    assert v.packets_in == count, f"the meter saw {v.packets_in} of {count} frames"
    assert passed + v.drop_packets == count, (
        f"{passed} frames on the wire + {v.drop_packets} dropped != {count} sent"
    )
    assert 0 < passed < count, f"{passed} of {count} frames passed the meter"
    high = bucket + refill * v.elapsed_s + size
    assert bucket - size <= passed * size <= high, (
        f"{passed * size} B passed; the bucket holds {bucket} B and refilled "
        f"{refill * v.elapsed_s:.0f} B in {v.elapsed_s * 1000:.0f} ms"
    )
    assert sorted({dscp_of(p) for p in v.passed}) == [level_dscp(level)], describe(probe, v.passed)
    assert moved == want, f"uplink tc classes moved {moved}, expected {want}"
    return v


def check_unmetered_burst(
    bench: Bench,
    src: HostPlan,
    dst: HostPlan,
    tag: int,
    level: int,
    count: int = 60,
    size: int = 1000,
) -> None:
    """The same burst as :func:`check_meter` with a tag that has no meter: every frame
    reaches the uplinks, at the tag's level, through that level's tc class."""
    bench.client.set([TagEntry(tag, level, senders=frozenset({src.name}))])
    try:
        probe, v, (moved, want) = send_burst(
            bench, src, dst, tag, level, count, size, metered=False
        )
        meters = [m for m in bench.client.meter_stats() if m.tag == tag and not m.retired]
    finally:
        bench.client.clear([tag])
    got = sorted(probe.seq_of(p) for p in v.passed)
    assert got == list(range(count)), f"{len(got)} of {count} frames passed: {got}"
    assert {dscp_of(p) for p in v.passed} == {level_dscp(level)}, describe(probe, v.passed)
    assert meters == [], f"an unmetered tag has meters: {meters}"
    assert moved == want, f"uplink tc classes moved {moved}, expected {want}"


# --- fabric bring-up -------------------------------------------------------------------


@contextlib.contextmanager
def ovs_bench(plan: FabricPlan, run_dir: Path, levels: int) -> Iterator[Bench]:
    """Controller (os-ken, OpenFlow 1.3) + OVS fabric of ``plan``, as the OVS fabric
    tests bring them up; both stopped on exit."""
    from controller.launcher import start_controller
    from topo.net import start_fabric

    plan_json = run_dir / "plan.json"
    plan_json.write_text(plan.to_json())
    ctl = start_controller(plan_json, run_dir, levels=levels)
    try:
        fab = start_fabric(plan, run_dir, ctl.of_port, levels=levels)
        try:
            with ControllerClient(ctl.api_socket, timeout=20) as client:
                client.wait_ready(60)
                yield Bench(fab, client, plan, levels)
        finally:
            fab.stop()
    finally:
        ctl.stop()


@contextlib.contextmanager
def bmv2_bench(plan: FabricPlan, run_dir: Path, levels: int) -> Iterator[Bench]:
    """P4Runtime controller + BMv2 fabric of ``plan``, as ``tests/bmv2`` brings them up;
    both stopped on exit."""
    from controller.p4runtime.launcher import launcher_argv
    from topo.bmv2 import grpc_addresses, start_bmv2_fabric

    ports = grpc_addresses(plan, run_dir)
    (run_dir / "plan.json").write_text(plan.to_json())
    api = run_dir / "controller.sock"
    proc = subprocess.Popen(
        launcher_argv(run_dir / "plan.json", api, run_dir / "controller.log", ports, levels=levels),
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
    )
    fab = None
    try:
        line = first_line(proc, 60)
        assert line == "READY", f"P4Runtime launcher said {line!r}"
        fab = start_bmv2_fabric(plan, run_dir, ports, levels=levels, ready_timeout=90)
        with ControllerClient(api, timeout=30) as client:
            client.wait_ready(90)
            yield Bench(fab, client, plan, levels)
    finally:
        if fab is not None:
            fab.stop()
        proc.terminate()
        proc.wait(15)
        proc.stdout.close()


def level_tags(levels: int) -> dict[int, int]:
    """tag -> level, one tag per level, spread over the tag range with the levels
    permuted (tag order is not level order: level (3 i) mod K for the i-th tag, a
    permutation when 3 does not divide K), so a pipeline that wrote another level than
    the entry's would put a frame in the wrong class."""
    if levels % 3 == 0:
        raise ValueError(f"level_tags needs a level count not divisible by 3, got {levels}")
    return {TAG_MIN + 9 + 5 * i: (3 * i) % levels for i in range(levels)}


UNMAPPED_TAG = TAG_MAX - 2  # a tag the packet tests never install
