"""The compiled allocation (``coflowbed.sim.kernel`` through ``alloc``: link-indexed
filling, the all-caps shortcut) against a plain reference implementation of strict
priority + progressive filling written out in this file, on random instances."""

from __future__ import annotations

import numpy as np
import pytest

from coflowbed.sim.alloc import allocate, waterfill

INF = np.inf


def ref_fill(paths: np.ndarray, residual: np.ndarray, caps: np.ndarray | None) -> np.ndarray:
    """Reference max-min by progressive filling, one flow at a time in the bookkeeping:
    raise all unfrozen flows by the smallest link share (or up to the smallest cap),
    freeze flows on full links or at their cap; consumes ``residual``."""
    n = paths.shape[0]
    rates, live = np.zeros(n), list(range(n))
    tol = 1e-9 * np.where(np.isfinite(residual), residual, 0.0)
    while live:
        count = np.zeros(residual.shape[0])
        for i in live:
            for link in paths[i]:
                count[link] += 1
        share = min(residual[k] / count[k] for k in range(len(count)) if count[k] > 0)
        if caps is not None:
            share = min(share, min(caps[i] - rates[i] for i in live))
        for i in live:
            rates[i] += share
        residual -= share * count
        full = {k for k in range(len(residual)) if residual[k] <= tol[k] + 1e-9}
        live = [
            i
            for i in live
            if not (set(paths[i]) & full) and not (caps is not None and rates[i] >= caps[i] - 1e-9)
        ]
    return rates


def ref_allocate(paths, levels, capacity, caps=None, hard_caps=False) -> np.ndarray:
    """Reference strict priority: levels in order, capped pass then (unless hard caps)
    an uncapped pass over what is left."""
    residual = capacity.astype(float).copy()
    rates = np.zeros(paths.shape[0])
    passes = [None] if caps is None else ([caps] if hard_caps else [caps, None])
    for cap in passes:
        for lv in sorted(set(levels.tolist())):
            g = np.flatnonzero(levels == lv)
            sub = None if cap is None else cap[g] - rates[g]
            rates[g] += ref_fill(paths[g], residual, sub)
    return rates


def random_case(rng: np.random.Generator, n: int, hosts: int):
    """Big-switch paths (uplink src, downlink hosts+dst) with repeated host pairs."""
    src = rng.integers(0, hosts, n)
    dst = (src + rng.integers(1, hosts, n)) % hosts
    paths = np.stack([src, dst + hosts], axis=1).astype(np.int32)
    capacity = np.append(rng.choice([1.0, 2.0, 5.0], 2 * hosts), INF)
    return paths, capacity


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [40, 700])
def test_waterfill_matches_reference_with_and_without_caps(seed, n):
    """The compiled filling gives the reference max-min rates and leaves the same
    residual capacity."""
    rng = np.random.default_rng(seed)
    paths, capacity = random_case(rng, n, 12)
    caps = np.where(rng.random(n) < 0.5, rng.random(n) * 0.3, INF)
    for c in (None, caps):
        got_res, ref_res = capacity.copy(), capacity.copy()
        got = waterfill(paths, got_res, c)
        ref = ref_fill(paths, ref_res, c)
        assert got == pytest.approx(ref, rel=1e-7, abs=1e-9)
        assert got_res[:-1] == pytest.approx(ref_res[:-1], abs=1e-7)
        assert np.ptp(got) > 0  # a non-trivial instance: rates differ between flows


@pytest.mark.parametrize("seed", range(6))
def test_allocate_matches_reference(seed):
    """Strict priority over few and many levels, with feasible, infeasible and hard caps."""
    rng = np.random.default_rng(seed)
    n = 600
    paths, capacity = random_case(rng, n, 8)
    levels = rng.integers(0, 3 if seed % 2 else 40, n)
    feasible = np.full(n, 1.0 / n)  # any link's sum <= 1 <= its capacity
    for caps in (None, feasible, rng.random(n) * 0.5):
        for hard in (False, True):
            got = allocate(paths, levels, capacity, caps, hard)
            ref = ref_allocate(paths, levels, capacity, caps, hard)
            assert got == pytest.approx(ref, rel=1e-7, abs=1e-9)


def test_leaf_spine_padding_and_zero_caps():
    """Rows padded with the infinite link (same-leaf flows) and flows capped at 0."""
    paths = np.array([[0, 4, 4, 2], [1, 4, 4, 3], [0, 5, 6, 3]], dtype=np.int32)
    capacity = np.array([10.0, 10.0, 10.0, 10.0, INF, 4.0, 4.0])
    got = allocate(paths, np.zeros(3, dtype=np.int64), capacity)
    # Flow 2 is held to 4 by the core links; flows 0 and 1 take what their host links keep.
    assert got.tolist() == pytest.approx([6.0, 6.0, 4.0])
    caps = np.array([0.0, INF, 1.0])
    assert allocate(
        paths, np.zeros(3, dtype=np.int64), capacity, caps, True
    ).tolist() == pytest.approx([0.0, 9.0, 1.0])  # flow 1 shares link 3 with flow 2


def test_a_flow_on_infinite_links_only_is_an_error():
    """No finite link bounds the rate: a clear error, not an infinite rate."""
    with pytest.raises(ValueError, match="no link of finite capacity"):
        allocate(
            np.array([[1, 1]], dtype=np.int32), np.zeros(1, dtype=np.int64), np.array([1.0, INF])
        )


def test_feasible_caps_are_granted_exactly_then_topped_up():
    """All caps fit: every flow gets its cap in pass 1; pass 2 fills what remains."""
    paths = np.array([[0, 2], [1, 3], [0, 3]], dtype=np.int32)
    capacity = np.array([10.0, 10.0, 10.0, 10.0, INF])
    caps = np.array([1.0, 2.0, 3.0])
    assert allocate(paths, np.array([0, 1, 2]), capacity, caps, True).tolist() == [1.0, 2.0, 3.0]
    # Work conserving, by level: flow 0 takes link 0's free 10-1-3 = 6 -> 7; flow 1
    # takes link 3's free 10-2-3 = 5 -> 7; flow 2's link 0 is then full -> stays 3.
    got = allocate(paths, np.array([0, 1, 2]), capacity, caps)
    assert got.tolist() == pytest.approx([7.0, 7.0, 3.0])


def test_sparse_levels_order_like_dense_ones():
    """Levels far apart and interleaved (runs of single flows) allocate like the same
    order packed densely, and equal levels share max-min fairly."""
    rng = np.random.default_rng(11)
    paths, capacity = random_case(rng, 500, 8)
    dense = rng.integers(0, 25, 500)
    sparse = dense * 100_003 + 7
    got = allocate(paths, sparse, capacity)
    assert got == pytest.approx(allocate(paths, dense, capacity), rel=1e-12)
    assert got == pytest.approx(ref_allocate(paths, dense, capacity), rel=1e-7, abs=1e-9)


def test_weighted_rows_equal_expanded_flows():
    """One row of weight k behaves as k identical flows."""
    rng = np.random.default_rng(3)
    paths, capacity = random_case(rng, 300, 10)
    uniq, inv, counts = np.unique(paths, axis=0, return_inverse=True, return_counts=True)
    flows = waterfill(paths, capacity.copy())
    rows = waterfill(uniq, capacity.copy(), weights=counts)
    assert rows[inv.ravel()] == pytest.approx(flows, rel=1e-9)
    with pytest.raises(ValueError, match="caps and weights"):
        waterfill(uniq, capacity.copy(), np.ones(len(uniq)), weights=counts)


@pytest.mark.parametrize("seed", range(4))
def test_filling_by_path_gives_the_per_flow_rates(seed):
    """With path ids, uncapped levels are filled one row per path: same rates as flow
    by flow and as the reference, for soft and hard caps too (capped passes per flow)."""
    rng = np.random.default_rng(seed)
    n = 900  # levels of ~300 flows on 6 hosts: many flows per path, above GROUP_MIN
    paths, capacity = random_case(rng, n, 6)
    path_id = np.unique(paths, axis=0, return_inverse=True)[1].ravel()
    levels = rng.integers(0, 3, n)
    for caps in (None, rng.random(n) * 0.5):
        for hard in (False, True):
            grouped = allocate(paths, levels, capacity, caps, hard, path_id)
            plain = allocate(paths, levels, capacity, caps, hard)
            assert grouped == pytest.approx(plain, rel=1e-9, abs=1e-12)
            ref = ref_allocate(paths, levels, capacity, caps, hard)
            assert grouped == pytest.approx(ref, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("top", [50, 2**31 - 1])  # packed keys / row-wise unique
def test_path_ids_are_equal_exactly_for_equal_paths(top):
    """The flow table's path ids (the allocator's grouping key) match equal rows only."""
    from coflowbed.sim.flowtable import _path_ids

    rng = np.random.default_rng(5)
    paths = rng.integers(0, 6, (400, 4)).astype(np.int32)
    paths[0, 3] = top
    ids = _path_ids(paths)
    same_id = ids[:, None] == ids[None, :]
    same_row = (paths[:, None, :] == paths[None, :, :]).all(axis=2)
    assert (same_id == same_row).all()
    assert ids.max() + 1 == len(np.unique(paths, axis=0))


def test_arrays_that_do_not_match_the_flows_are_refused():
    """The compiled kernel reads without bounds checks: the wrapper refuses short arrays."""
    paths = np.array([[0, 2], [1, 3]], dtype=np.int32)
    capacity = np.array([1.0, 1.0, 1.0, 1.0, INF])
    with pytest.raises(ValueError, match="2 flows but 1 levels"):
        allocate(paths, np.zeros(1, dtype=np.int64), capacity)
    with pytest.raises(ValueError, match="path ids"):
        allocate(paths, np.zeros(2, dtype=np.int64), capacity, path_id=np.zeros(3))
    with pytest.raises(ValueError, match="caps: 1 values for 2 flows"):
        allocate(paths, np.zeros(2, dtype=np.int64), capacity, np.ones(1))


def test_no_flows_get_no_rates():
    """An empty flow set is valid input (every flow finished) and gives empty rates."""
    capacity = np.array([1.0, 1.0, INF])
    empty = np.zeros((0, 2), dtype=np.int32)
    assert allocate(empty, np.zeros(0, dtype=np.int64), capacity).shape == (0,)
    assert allocate(empty, np.zeros(0, dtype=np.int64), capacity, np.zeros(0), True).shape == (0,)
    assert waterfill(empty, capacity.copy()).shape == (0,)
