"""Incremental re-sharing of path groups (``coflowbed.sim.groupalloc``,
``Simulator(incremental=True)``): the same runs as re-filling every level from the
first that changed, on Facebook-trace prefixes and LLM presets under every max-min
policy; and, by hand, that unchanged levels below are not filled again."""

from __future__ import annotations

import numpy as np
import pytest

from coflowbed.sim import (
    BigSwitch,
    Simulator,
    groupalloc,
    groupfill,
    kernel,
    parse_fabric_spec,
    roundfill,
)
from controller import policies
from tests.data import FB_TRACE
from workload import fbtrace, generate
from workload.placement import generic_hosts
from workload.presets import load_preset

MAX_MIN = ("fair", "fifo", "dclas", "sincronia")


def outcomes(sim: Simulator) -> list[tuple[float, float]]:
    """(start, finish) of every coflow."""
    return [(o.start_s, o.finish_s) for o in sim.outcomes]


def same_runs(dag, fabric, policy: str) -> None:
    """Both re-sharing modes give identical coflow times, events and decisions."""
    full = Simulator(dag, fabric, policies.get(policy), None).run()
    inc = Simulator(dag, fabric, policies.get(policy), None, incremental=True).run()
    assert full.stats.finished and inc.stats.finished
    assert (inc.stats.events, inc.stats.policy_calls) == (
        full.stats.events,
        full.stats.policy_calls,
    )
    assert np.array_equal(np.array(outcomes(inc)), np.array(outcomes(full)), equal_nan=True)


@pytest.mark.parametrize("policy", MAX_MIN)
def test_trace_prefix_same_as_full_refill(policy):
    """The first 60 Facebook coflows, 150 ports at 1 Gbit/s."""
    trace = fbtrace.read_trace(FB_TRACE)
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    same_runs(fbtrace.to_dag(trace, None, limit=60), fabric, policy)


@pytest.mark.parametrize("preset", ["tiny-moe", "small-moe", "gpt3-175b"])
@pytest.mark.parametrize("policy", MAX_MIN)
def test_llm_presets_same_as_full_refill(preset, policy):
    """One iteration of three presets on a big switch of the job's hosts at 400 Gbit/s."""
    job = load_preset(preset)
    hosts = generic_hosts(job.hosts_needed)
    same_runs(generate(job, hosts), BigSwitch(tuple(hosts), 400e9), policy)


def test_unchanged_levels_below_are_skipped():
    """Links of 10.  Level 0: 2 members on links 0-1 (5 each: both full); level 1: 1
    on links 2-3 (10); level 2: 1 on links 0-4 (blocked: link 0 full).  The first
    re-share fills all 3 levels.  Level 0 then loses a member: it is filled again (10),
    links 0 and 1 are full again, so level 1 gets the same capacity and level 2 stays
    blocked: 1 level filled, rates (10, 10, 0)."""
    g_paths = np.array([[0, 1], [2, 3], [0, 4]], dtype=np.int32)
    capacity = np.full(5, 10.0)
    weight = np.array([2, 1, 1], dtype=np.int64)
    lv_bounds = np.array([0, 1, 2, 3], dtype=np.int64)
    grp_lv = (
        lv_bounds,
        groupalloc.level_links(lv_bounds, g_paths, 5),
        groupfill.level_index(lv_bounds, g_paths, 5),
        roundfill.slots(lv_bounds, 5),
    )
    res_at = np.zeros((4, 5))
    res_at[0] = capacity
    state = (res_at, np.zeros(3, np.bool_), np.ones(3, np.bool_))
    fs = (
        np.zeros(3, np.bool_),
        np.zeros(5, np.int64),
        np.zeros(5, np.int64),
        np.zeros(5, np.bool_),
    )
    scratch = (np.empty(5, np.int64), np.empty(5), np.empty(5), fs)
    rates, eps = np.zeros(3), kernel.full_below(capacity)
    assert groupalloc.reshare(grp_lv, g_paths, weight, eps, rates, state, 0, scratch) == 3
    assert rates.tolist() == [5.0, 10.0, 0.0]
    weight[0], state[2][0] = 1, True
    assert groupalloc.reshare(grp_lv, g_paths, weight, eps, rates, state, 0, scratch) == 1
    assert rates.tolist() == [10.0, 10.0, 0.0]
