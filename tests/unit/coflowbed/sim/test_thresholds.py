"""Byte thresholds (``coflowbed.sim.thresholds``): the next crossing, and a threshold
event putting the coflows that reached one exactly at it."""

from __future__ import annotations

import math

import numpy as np

from coflowbed.sim import BigSwitch, Simulator
from coflowbed.sim.thresholds import next_crossing, snap
from controller import policies
from workload.dag import Coflow, Dag, Flow


def test_next_crossing_is_the_nearest_over_coflows():
    """Thresholds 100 and 1,000 B; coflow 0 sent 40 B at 2 flows x 80 bit/s = 20 B/s:
    100 B in (100 - 40) / 20 = 3 s; coflow 1 sent 500 B at 8 bit/s = 1 B/s: 1,000 B in
    500 s; coflow 2 does not move.  Nearest: 3 s; with coflow 0 done, 500 s."""
    cof = np.array([0, 0, 1, 2])
    rates = np.array([80.0, 80.0, 8.0, 0.0])
    sent = np.array([40.0, 500.0, 0.0])
    thr = np.array([100.0, 1000.0])
    assert next_crossing(cof, rates, sent, np.array([0, 1, 2]), thr) == 3.0
    assert next_crossing(cof, rates, sent, np.array([1, 2]), thr) == 500.0
    assert math.isinf(next_crossing(cof, rates, sent, np.array([2]), thr))


def test_snap_moves_only_coflows_within_tolerance():
    """Thresholds 10^6 and 10^12 B: 10^12 - 0.6 (6 x 10^-13 relative) and 10^6 + 10^-4
    (10^-10) snap; 10^12 - 10^4 (10^-8) and 5 x 10^5 stay."""
    sent = np.array([1e12 - 0.6, 1e6 + 1e-4, 1e12 - 1e4, 5e5])
    snap(sent, np.arange(4), np.array([1e6, 1e12]))
    assert sent.tolist() == [1e12, 1e6, 1e12 - 1e4, 5e5]


def test_threshold_event_puts_coflows_at_the_threshold():
    """D-CLAS with its first threshold at 10^12 B (where a sum of per-event steps lands
    ~1 B off): at a threshold event a coflow 0.6 B short (6 x 10^-13 relative, within
    10^-9) is set to exactly 10^12 B, so the policy (whole bytes, searchsorted right)
    demotes it; one 10^4 B short (10^-8 relative) and one far past keep their bytes."""
    pol = policies.get("dclas", first_threshold_bytes=10**12)
    coflows = [Coflow(f"c{i}", (Flow(f"f{i}", "a", "b", 10**13),)) for i in range(3)]
    sim = Simulator(Dag(coflows=coflows), BigSwitch(("a", "b"), 1e9), pol, None)
    sim.dagstate.start()
    sim.settle()
    sim.sent[:] = [1e12 - 0.6, 1e12 - 1e4, 5e12]
    sim._advance(0.0, "threshold")
    assert sim.sent.tolist() == [1e12, 1e12 - 1e4, 5e12]
    assert pol.queue_of(int(round(sim.sent[0]))) == 1
