"""Tiny TCP sink/source run inside Mininet hosts to check the fabric (integration tests,
benchmarks).  Not the workload agent: no coflows, no DAG, just bytes over time.

The sink counts bytes per connection and reports the bytes received inside a window
``[warmup, warmup + window]`` seconds after its first connection; a source sends zeros
with a given DSCP for a given time.  Both are ``python -c`` scripts started with
``host.popen`` (argument lists, no shell) and print one JSON line.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

SEND_BYTES = 65536  # bytes per send() of a source

SINK = r"""
import json, socket, sys, threading, time
port, n, warmup, window = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", port)); srv.listen(256)
print("LISTENING", flush=True)
counts, lock, first = {}, threading.Lock(), threading.Event()
def serve(c, peer):
    first.set()
    while True:
        b = c.recv(262144)
        if not b:
            return
        with lock:
            counts[peer] = counts.get(peer, 0) + len(b)
def accept():
    for _ in range(n):
        c, a = srv.accept()
        threading.Thread(target=serve, args=(c, "%s:%d" % a), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
first.wait(30)
t0 = time.monotonic()
time.sleep(warmup)  # measurement schedule, not synchronisation
with lock: a = dict(counts)
t1 = time.monotonic(); time.sleep(window)
with lock: b = dict(counts)
t2 = time.monotonic()
print(json.dumps({"window_s": t2 - t1, "bytes": {k: b[k] - a.get(k, 0) for k in b},
                  "total": b}), flush=True)
"""

SOURCE = r"""
import json, selectors, socket, sys, time
dst, port, tos = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
secs, nconn, size = float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
src_ports = [int(p) for p in sys.argv[7].split(",") if p]
socks = []
for i in range(nconn):
    s = socket.socket(); s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    if src_ports: s.bind(("0.0.0.0", src_ports[i]))
    s.connect((dst, port)); s.setblocking(False); socks.append(s)
buf, sent, end = b"\0" * size, 0, time.monotonic() + secs
sel = selectors.DefaultSelector()
for s in socks: sel.register(s, selectors.EVENT_WRITE)
while time.monotonic() < end:
    for key, _ in sel.select(0.2):
        try: sent += key.fileobj.send(buf)
        except (BlockingIOError, ConnectionError): pass
for s in socks: s.close()
print(json.dumps({"sent": sent}), flush=True)
"""


@dataclass
class Window:
    """What a sink measured."""

    window_s: float
    bytes: dict[str, int]  # peer "ip:port" -> bytes inside the window
    total: dict[str, int]  # peer -> all bytes

    def mbps(self, peer_ip: str | None = None) -> float:
        """Rate in Mbit/s inside the window (of one sender IP, or all)."""
        n = sum(v for k, v in self.bytes.items() if peer_ip is None or k.split(":")[0] == peer_ip)
        return n * 8 / self.window_s / 1e6


def start_sink(
    host, port: int, conns: int, warmup: float, window: float, timeout: float = 10.0
) -> subprocess.Popen:
    """Start a sink on ``host``; returns once it listens (its LISTENING line)."""
    proc = host.popen(
        [sys.executable, "-c", SINK, str(port), str(conns), str(warmup), str(window)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    ready = sel.select(timeout)
    sel.close()
    if not ready or proc.stdout.readline().strip() != "LISTENING":
        proc.kill()
        raise RuntimeError(f"sink on {host.name} did not start: {proc.stderr.read()}")
    return proc


def start_source(
    host,
    dst_ip: str,
    port: int,
    dscp: int,
    seconds: float,
    conns: int = 1,
    send_bytes: int = SEND_BYTES,
    src_ports: Sequence[int] = (),
) -> subprocess.Popen:
    """Start a source on ``host`` sending to dst_ip:port with ``dscp`` for ``seconds``,
    ``send_bytes`` per send() call; from ``src_ports`` (one connection each) if given."""
    if src_ports and len(src_ports) != conns:
        raise ValueError(f"{len(src_ports)} source ports for {conns} connections")
    return host.popen(
        [
            sys.executable,
            "-c",
            SOURCE,
            dst_ip,
            str(port),
            str(dscp << 2),
            str(seconds),
            str(conns),
            str(send_bytes),
            ",".join(str(p) for p in src_ports),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float) -> dict:
    """Wait for a probe and decode its JSON line (RuntimeError with its stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"probe did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0 or not out.strip():
        raise RuntimeError(f"probe failed (exit {proc.returncode}): {err.strip()}")
    return json.loads(out.strip().splitlines()[-1])


def sink_window(proc: subprocess.Popen, timeout: float) -> Window:
    """The sink's measurement."""
    d = finish(proc, timeout)
    return Window(d["window_s"], d["bytes"], d["total"])
