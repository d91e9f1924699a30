"""Statistics of repeated runs (pure): the mean of a metric with its standard deviation
and t-distribution confidence interval, and the speed-up of one policy over a baseline
(ratio of means) with a delta-method confidence interval over paired repetitions.

Speed-up method: S = mean(base) / mean(new) over the repetitions where both runs are
complete (pairs (b_k, x_k), k = 1..n).  Linearised, S - S_true ~ mean(d) / mean(x) with
d_k = b_k - S x_k, so its standard error is se = sd(d) / (sqrt(n) mean(x)) (sd with n - 1
degrees of freedom) and the interval is S +- t(1 - alpha/2, n - 1) se.  Pairing by
repetition index lets the drift of a shared machine, which interleaving spreads over
both runs of a pair, cancel in d."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from scipy import stats as _scipy

CONFIDENCE = 0.95
SPEEDUP_METHOD = (
    "ratio of means over paired repetitions (both runs complete), 95 % CI by the delta "
    "method: se = sd(b_k - S x_k) / (sqrt(n) mean(x)), S +- t(0.975, n-1) se"
)


@dataclass(frozen=True)
class Estimate:
    """A metric over n runs: mean, sample standard deviation and confidence interval
    (std and interval None below two values; everything None without values)."""

    mean: float | None
    std: float | None
    n: int
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict:
        """The JSON object."""
        return asdict(self)


@dataclass(frozen=True)
class Speedup:
    """baseline / policy ratio of means over n paired repetitions, with its delta-method
    standard error and confidence interval (None below two pairs)."""

    value: float | None
    se: float | None
    n: int
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict:
        """The JSON object."""
        return asdict(self)


def t_quantile(n: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided t quantile for n values (n - 1 degrees of freedom)."""
    return float(_scipy.t.ppf(0.5 + confidence / 2, n - 1))


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 in the denominator); needs two values."""
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def estimate(values: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    """Mean, std and the t confidence interval of ``values``."""
    n = len(values)
    if n == 0:
        return Estimate(None, None, 0, None, None)
    m = sum(values) / n
    if n == 1:
        return Estimate(m, None, 1, None, None)
    sd = sample_std(values)
    half = t_quantile(n, confidence) * sd / math.sqrt(n)
    return Estimate(m, sd, n, m - half, m + half)


def speedup(base: Sequence[float], new: Sequence[float], confidence: float = CONFIDENCE) -> Speedup:
    """mean(base) / mean(new) over the pairs (base[k], new[k]), delta-method interval."""
    if len(base) != len(new):
        raise ValueError(f"speedup needs pairs: {len(base)} vs {len(new)} values")
    n = len(base)
    if n == 0 or sum(new) == 0:
        return Speedup(None, None, n, None, None)
    mb, mx = sum(base) / n, sum(new) / n
    s = mb / mx
    if n == 1:
        return Speedup(s, None, 1, None, None)
    se = sample_std([b - s * x for b, x in zip(base, new)]) / (math.sqrt(n) * mx)
    half = t_quantile(n, confidence) * se
    return Speedup(s, se, n, s - half, s + half)
