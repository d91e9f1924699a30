"""What a run folder records of where and how it ran (``summary.json``: mode, switch,
fabric, calibration, TCP retransmissions, level moves; ``versions.json``), as (what,
value) rows: one run's, and a comparison's, where what every run shares is said once
and what differs is said per run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from coflowbed.analysis.report.markup import sig3

PER_RUN = (
    "policy",
    "calibration fraction of nominal",
    "calibration measured / nominal Mbit/s",
    "sent again by TCP",
)  # a comparison shows them in its runs table


def environment(run_dir: Path, s: dict) -> list[tuple[str, str]]:
    """(what, value) rows: switch, MTU, fabric, calibration, TCP retransmissions, ECMP
    placement, machine, versions."""
    raw = s.get("fabric")
    fabric: dict = raw if isinstance(raw, dict) else {}
    cal = s.get("calibration") or {}
    rows: list[tuple[str, object]] = [
        ("mode", s.get("mode") or "emulated"),
        ("switch", s.get("switch")),
        ("MTU", fabric.get("mtu")),
        ("fabric", fabric or s.get("fabric")),
        ("levels", s.get("levels")),
        ("policy", s.get("policy")),
        ("calibration fraction of nominal", cal.get("fraction")),
        (
            "calibration measured / nominal Mbit/s",
            f"{cal['measured_mbps']} / {cal['nominal_mbps']}" if cal else None,
        ),
        ("calibration warning", cal.get("warning")),
        ("sent again by TCP", _retransmitted(s.get("retransmitted"))),
        ("levels moved while running (up / down)", _moves(s.get("level_moves"))),
        ("machine", s.get("machine", "not recorded")),
        ("sampling", s.get("sampling", "off")),
        ("ECMP placement", (s.get("connections") or {}).get("ecmp")),
    ]
    vpath = run_dir / "versions.json"
    if vpath.is_file():
        rows += [(f"version: {k}", v) for k, v in json.loads(vpath.read_text()).items()]
    return [(k, json.dumps(v) if isinstance(v, dict) else sig3(v)) for k, v in rows]


def _retransmitted(block: dict | None) -> str | None:
    """summary.json's ``retransmitted`` in words (None: not measured)."""
    if not block:
        return None
    return (
        f"{block['bytes']} B ({block['share'] * 100:.2f} % of the bytes) by "
        f"{block['flows']} of {block['flows_measured']} flows"
    )


def _moves(block: dict | None) -> str | None:
    """summary.json's ``level_moves`` as "up / down" (None: static levels, or a
    simulation)."""
    return None if not block else f"{block['up']} / {block['down']}"


def run_environment(run_dir: Path) -> list[tuple[str, str]]:
    """``environment`` of a run folder ([] without summary.json)."""
    path = run_dir / "summary.json"
    return environment(run_dir, json.loads(path.read_text())) if path.is_file() else []


def merged(runs: Sequence[tuple[str, Path]]) -> list[tuple[str, str]]:
    """The environment of several runs ((name, folder) pairs), leaving out ``PER_RUN``:
    a value every run shares once, others as ``value (runs)`` per distinct value."""
    seen: dict[str, dict[str, list[str]]] = {}
    for name, folder in runs:
        for what, value in run_environment(folder):
            if what not in PER_RUN:
                seen.setdefault(what, {}).setdefault(value, []).append(name)
    return [(what, _values(by_value, len(runs))) for what, by_value in seen.items()]


def _values(by_value: dict[str, list[str]], runs: int) -> str:
    """One value when all ``runs`` share it, else each value with the runs that had it."""
    if len(by_value) == 1 and len(next(iter(by_value.values()))) == runs:
        return next(iter(by_value))
    return "; ".join(f"{v} ({', '.join(names)})" for v, names in by_value.items())
