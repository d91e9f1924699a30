"""``benchmarks/bench_sim_revs.py``'s figures: per policy the revisions' medians, their
ratio to the first revision and, with ``--scale-to``, the medians scaled to the first
revision's time measured in another sitting."""

from __future__ import annotations

import pytest

from tests.scripts import load_script


def _bench():
    """``benchmarks/bench_sim_revs.py`` as a module."""
    return load_script("bench_sim_revs")


def test_medians_ratio_and_scaled_figure():
    """Old 58, 60, 62 s and new 6, 7, 8 s: medians 60 and 7 s, ratio 7/60 = 0.117; with
    the old revision measured at 120 s elsewhere, the new one scales to 7 × 120/60 = 14 s."""
    walls = {"old": [62.0, 58.0, 60.0], "new": [8.0, 6.0, 7.0]}
    line = _bench().medians_line("sincronia", walls, 120.0)
    assert line.startswith("sincronia: median over 3 runs, ratio to old; scaled to old = 120.00 s")
    assert "old 60.00 s (1.000) -> 120.00 s" in line
    assert "new 7.00 s (0.117) -> 14.00 s" in line


def test_medians_without_a_scale_print_no_scaled_figure():
    """Without ``--scale-to`` only the medians and ratios: 10 and 5 s, ratio 0.500."""
    line = _bench().medians_line("fair", {"a": [10.0], "b": [5.0]}, None)
    assert line == "fair: median over 1 runs, ratio to a: a 10.00 s (1.000), b 5.00 s (0.500)"


def test_scale_to_is_read_per_policy():
    """``fair=70.5,sincronia=106.5`` for the policies benchmarked: both, as floats."""
    scale = _bench().parse_scale("fair=70.5,sincronia=106.5", ["fair", "sincronia"])
    assert scale == {"fair": 70.5, "sincronia": 106.5}


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("fair", "'fair' is not policy=seconds"),
        ("dclas=10", "'dclas=10' is not policy=seconds for a policy of --policies"),
        ("fair=fast", "fair: 'fast' is not a positive number"),
        ("fair=0", "fair: '0' is not a positive number"),
        ("fair=nan", "fair: 'nan' is not a positive number"),
        ("fair=inf", "fair: 'inf' is not a positive number"),
    ],
)
def test_bad_scale_to_exits_naming_the_item(text, names):
    """A malformed item, a policy not benchmarked, or a time that is not a positive
    finite number: a one-line exit naming the flag and the item."""
    with pytest.raises(SystemExit) as err:
        _bench().parse_scale(text, ["fair"])
    assert str(err.value).startswith("--scale-to: ")
    assert names in str(err.value)


def test_a_paired_ratio_is_applied_to_the_first_revisions_time_elsewhere():
    """Median ratio new/old 0.125 and old measured at 96 s elsewhere: new there 12 s;
    nothing without ``--scale-to``."""
    bench = _bench()
    assert bench.scaled_pair("old", "new", 0.125, 96.0) == "; at old = 96.00 s: new 12.00 s"
    assert bench.scaled_pair("old", "new", 0.125, None) == ""


def test_a_repeated_revision_gets_its_own_name():
    """``HEAD,HEAD,HEAD``: HEAD, HEAD#2, HEAD#3; distinct revisions keep their names."""
    bench = _bench()
    assert bench.labels(["HEAD", "HEAD", "HEAD"]) == ["HEAD", "HEAD#2", "HEAD#3"]
    assert bench.labels(["c1d0b94^", "HEAD"]) == ["c1d0b94^", "HEAD"]
