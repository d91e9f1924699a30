"""Per-run plots from samples/: utilisation of the busiest links, the bottleneck port."""

from __future__ import annotations

from coflowbed.analysis.plots.samples import bottleneck, busiest, utilisation_series


def test_utilisation_is_tx_bytes_per_interval_over_the_link_rate():
    rows = [
        {"t_s": 0.0, "dev": "a", "tx_bytes": 0},
        {"t_s": 0.5, "dev": "a", "tx_bytes": 3_125_000},  # 50 Mbit/s for 0.5 s
        {"t_s": 0.0, "dev": "b", "tx_bytes": 0},
        {"t_s": 0.5, "dev": "b", "tx_bytes": 625_000},
    ]
    series = utilisation_series(rows, {"a": 50.0, "b": 100.0})
    assert series["a"] == ([0.5], [1.0]) and series["b"] == ([0.5], [0.1])
    assert busiest(series, 1) == ["a"]


def test_the_bottleneck_is_the_port_with_the_largest_summed_backlog():
    rows = [
        {"t_s": 1.0, "dev": "a", "level": 0, "backlog_bytes": 600},
        {"t_s": 1.0, "dev": "b", "level": 0, "backlog_bytes": 500},
        {"t_s": 1.0, "dev": "b", "level": 3, "backlog_bytes": 500},
    ]
    assert bottleneck(rows) == "b"
    assert bottleneck([{**r, "backlog_bytes": 0} for r in rows]) is None
