"""Tiny UDP sender/receiver run inside Mininet hosts by the BMv2 fabric tests.

    python udp_tool.py recv PORT SECONDS          -> prints {"bytes": n, "packets": n}
    python udp_tool.py send IP PORT SECONDS TOS [SPORT]
    python udp_tool.py sweep IP PORT TOS FIRST_SPORT COUNT   (one datagram per sport)

The sender blasts 1400-byte datagrams; the host's tc HTB port scheduler paces them to
the link rate (excess is dropped there), so offered load = link rate per sender.
"""

from __future__ import annotations

import json
import socket
import sys
import time

PAYLOAD = b"x" * 1400


def recv(port: int, seconds: float) -> dict:
    """Count datagrams arriving on ``port`` for ``seconds`` (hard deadline)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    print(json.dumps({"ready": port}), flush=True)  # the test starts senders after this
    deadline, nbytes, packets = time.monotonic() + seconds, 0, 0
    while (left := deadline - time.monotonic()) > 0:
        s.settimeout(left)
        try:
            data = s.recv(65536)
        except TimeoutError:
            break
        nbytes, packets = nbytes + len(data), packets + 1
    return {"bytes": nbytes, "packets": packets}


def send(ip: str, port: int, seconds: float, tos: int, sport: int = 0) -> dict:
    """Send as fast as the socket takes for ``seconds``."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.bind(("0.0.0.0", sport))
    deadline, sent = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        try:
            sent += s.sendto(PAYLOAD, (ip, port))
        except OSError:  # ENOBUFS when the qdisc is full: keep offering load
            pass
    return {"sent": sent}


def sweep(ip: str, port: int, tos: int, first: int, count: int) -> dict:
    """One small datagram from each of ``count`` source ports (distinct 5-tuples; fewer
    than the host queue holds, so none is dropped before the fabric)."""
    for sp in range(first, first + count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        s.bind(("0.0.0.0", sp))
        s.sendto(PAYLOAD[:200], (ip, port))
        s.close()
    return {"flows": count}


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "recv":
        out = recv(int(args[0]), float(args[1]))
    elif cmd == "send":
        out = send(
            args[0],
            int(args[1]),
            float(args[2]),
            int(args[3]),
            int(args[4]) if len(args) > 4 else 0,
        )
    else:
        out = sweep(args[0], int(args[1]), int(args[2]), int(args[3]), int(args[4]))
    print(json.dumps(out), flush=True)
