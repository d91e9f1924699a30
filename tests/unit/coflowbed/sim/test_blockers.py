"""Blocked levels kept blocked (``coflowbed.sim.blockers``): one full link noted per
group, the next filling skipped while they all stay full.  Whole runs against the
per-flow loop are in ``test_sim_groupkernel.py``."""

from __future__ import annotations

import numpy as np

from coflowbed.sim import blockers, kernel

# Links 0..3 of capacity 10; groups 1..3 of a level (ids 1..3, lo = 1) cross (0, 2),
# (0, 3), (1, 3); group 0 belongs to the level above.
G_PATHS = np.array([[0, 1], [0, 2], [0, 3], [1, 3]], dtype=np.int32)
EPS = kernel.full_below(np.full(4, 10.0))


def test_one_full_link_per_group_is_noted():
    """Links 0 and 3 full: groups 1 and 2 are blocked by link 0 (noted once), group 3 by
    link 3 (its first full link; link 1 is free)."""
    blk = blockers.state(2, 4, 4)
    residual = np.array([0.0, 5.0, 5.0, 0.0])
    blockers.note(1, 1, 4, G_PATHS, np.ones(4, np.int64), residual, EPS, blk)
    assert blk[0][1] and blk[1][1] == 2 and sorted(blk[2][1:3].tolist()) == [0, 3]
    assert not blk[3].any()  # the per-link marks are cleared again


def test_still_blocked_only_while_every_blocker_stays_full():
    """Noted blockers 0 and 3: still blocked with link 1 or 2 freed, not once link 3 is
    (group 3 could grow); an empty group notes nothing; a level never noted or
    forgotten is not known blocked."""
    blk = blockers.state(2, 4, 4)
    weight = np.array([1, 1, 1, 0], dtype=np.int64)  # group 3 has no member left
    blockers.note(1, 1, 4, G_PATHS, weight, np.array([0.0, 5.0, 5.0, 0.0]), EPS, blk)
    assert blk[1][1] == 1 and blk[2][1] == 0
    weight[3] = 1
    blockers.note(1, 1, 4, G_PATHS, weight, np.array([0.0, 5.0, 5.0, 0.0]), EPS, blk)
    assert blockers.still(1, 1, np.array([0.0, 9.0, 9.0, 0.0]), EPS, blk)
    assert blockers.still(1, 1, np.array([1e-12, 9.0, 9.0, 0.0]), EPS, blk)  # within eps
    assert not blockers.still(1, 1, np.array([0.0, 0.0, 0.0, 4.0]), EPS, blk)
    assert not blockers.still(0, 0, np.zeros(4), EPS, blk)
    blockers.forget(1, blk)
    assert not blockers.still(1, 1, np.zeros(4), EPS, blk)
