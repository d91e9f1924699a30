"""Byte thresholds of the fluid model (policies with ``byte_thresholds``, e.g. D-CLAS):
when the next is crossed, and putting coflows at the one they reached."""

from __future__ import annotations

import math

import numpy as np

SNAP_TOL = 1e-9  # bytes sent within this fraction of a byte threshold count as at it


def next_crossing(
    cof: np.ndarray, rates: np.ndarray, sent: np.ndarray, cs: np.ndarray, thresholds: np.ndarray
) -> float:
    """Seconds until one of the coflows ``cs`` (bytes ``sent`` per coflow) reaches the
    next threshold at the rates of its flows (``cof``: coflow per flow; inf: none)."""
    agg = np.bincount(cof, weights=rates, minlength=sent.size) / 8.0
    cs = cs[agg[cs] > 0]
    if not cs.size:
        return math.inf
    now_sent = sent[cs]
    k = np.searchsorted(thresholds, now_sent * (1 + 1e-12) + 1e-6, side="right")
    ok = k < thresholds.size
    if not ok.any():
        return math.inf
    return float(((thresholds[k[ok]] - now_sent[ok]) / agg[cs[ok]]).min())


def snap(sent: np.ndarray, cs: np.ndarray, thresholds: np.ndarray) -> None:
    """Coflows of ``cs`` whose bytes sent are a threshold to round-off (the ones a
    threshold event was for) get exactly it, in place: else the policy, seeing whole
    bytes, keeps about half of them below it, depending on how the sum rounded."""
    now_sent = sent[cs]
    at = np.searchsorted(thresholds, now_sent)  # thresholds[at - 1] < sent <= thresholds[at]
    lo = thresholds[np.maximum(at - 1, 0)]
    hi = thresholds[np.minimum(at, thresholds.size - 1)]
    near = np.where(np.abs(hi - now_sent) < np.abs(now_sent - lo), hi, lo)
    hit = np.abs(near - now_sent) <= SNAP_TOL * near
    sent[cs[hit]] = near[hit]
