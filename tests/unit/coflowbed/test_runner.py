"""counters.json counts the iteration's own traffic (coflowbed.runner.subtract_ports)."""
from __future__ import annotations

from coflowbed.runner import subtract_ports


def test_bring_up_and_calibration_traffic_is_subtracted_per_port():
    before = {"l1": {1: {"tx_bytes": 100, "tx_packets": 2}}}
    after = {"l1": {1: {"tx_bytes": 1100, "tx_packets": 12}, 2: {"tx_bytes": 5, "tx_packets": 1}}}
    assert subtract_ports(after, before) == {"l1": {1: {"tx_bytes": 1000, "tx_packets": 10},
                                                    2: {"tx_bytes": 5, "tx_packets": 1}}}
