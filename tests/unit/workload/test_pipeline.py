"""Pipeline schedules: 1F1B warm-up counts and forward-before-backward."""

from __future__ import annotations

import pytest

from workload.pipeline import gpipe, one_f_one_b, stage_ops


@pytest.mark.parametrize("p,m", [(4, 8), (4, 2), (2, 4), (1, 3), (8, 8)])
def test_one_f_one_b(p, m):
    for i in range(p):
        ops = one_f_one_b(p, m, i)
        assert sorted(ops) == sorted([("F", k) for k in range(m)] + [("B", k) for k in range(m)])
        warm = min(p - i - 1, m)
        assert ops[:warm] == [("F", k) for k in range(warm)]
        assert ops.index(("B", 0)) == warm + (1 if warm < m else 0)  # then one more F
        for k in range(m):
            assert ops.index(("F", k)) < ops.index(("B", k))
        # steady state alternates F and B after the warm-up
        steady = ops[min(p - i - 1, m) : min(p - i - 1, m) + 2 * (m - min(p - i - 1, m))]
        assert [k for k, _ in steady] == ["F", "B"] * (len(steady) // 2)


def test_gpipe_all_forwards_first():
    assert gpipe(3, 2, 1) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]


def test_unknown_schedule():
    with pytest.raises(ValueError, match="zigzag"):
        stage_ops("zigzag", 2, 2, 0)


@pytest.mark.parametrize("p,m,v", [(2, 4, 2), (4, 8, 2), (4, 4, 3), (3, 6, 2)])
def test_interleaved_1f1b(p, m, v):
    from workload.pipeline import interleaved_1f1b

    for i in range(p):
        ops = interleaved_1f1b(p, m, i, v)
        want = [(k, mb, c) for k in "FB" for mb in range(m) for c in range(v)]
        assert sorted(ops) == sorted(want)
        for mb in range(m):
            for c in range(v):
                assert ops.index(("F", mb, c)) < ops.index(("B", mb, c))
        warm = m * v if m == p else min((p - i - 1) * 2 + (v - 1) * p, m * v)
        assert all(k == "F" for k, _, _ in ops[:warm])
        assert warm == m * v or ops[warm + 1][0] == "B"
        # forwards visit chunks in groups of p microbatches: chunk 0 first, then 1, ...
        fwd = [(mb, c) for k, mb, c in ops if k == "F"]
        assert fwd[:p] == [(mb, 0) for mb in range(p)]
        assert fwd[p : 2 * p] == [(mb, 1) for mb in range(p)]


def test_interleaved_needs_multiple_of_p():
    from workload.pipeline import interleaved_1f1b

    with pytest.raises(ValueError, match="multiple of p"):
        interleaved_1f1b(4, 6, 0, 2)


def test_stage_ops_gives_virtual_stages():
    assert {vs for _, _, vs in stage_ops("interleaved-1f1b", 2, 4, 1, 2)} == {1, 3}
    assert {vs for _, _, vs in stage_ops("1f1b", 2, 4, 1)} == {1}
