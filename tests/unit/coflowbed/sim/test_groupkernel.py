"""Flow completions run compiled on path groups (``coflowbed.sim.groupkernel``, the
engine's default) against the per-flow event loop (``Simulator(fast=False)``, the
reference): same events and the same coflow completion times, on Facebook-trace
prefixes and on every LLM preset, under every policy; and the grouping itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from coflowbed.sim import BigSwitch, LeafSpine, Simulator, groupkernel, parse_fabric_spec
from coflowbed.sim.stepkernel import SAME_INSTANT
from controller import policies
from controller.policies import Decision
from controller.policies.dclas import DClas
from controller.policies.sincronia import Sincronia
from tests.data import FB_TRACE
from workload import fbtrace, generate
from workload.dag import Coflow, Dag, Flow
from workload.placement import generic_hosts
from workload.presets import load_preset, preset_names

MAX_MIN = ("fair", "fifo", "dclas", "sincronia")  # policies the compiled loop serves
REL = 1e-9  # rounding of per-group lines (virtual time) against per-flow subtraction


@pytest.fixture
def kernel_runs(monkeypatch) -> list[int]:
    """Counts the events each compiled run handled (wraps ``groupkernel.loop``)."""
    runs: list[int] = []
    real = groupkernel.loop

    def counted(*args):
        """The real run, its event count recorded."""
        out = real(*args)
        runs.append(int(out[2]))
        return out

    monkeypatch.setattr(groupkernel, "loop", counted)
    return runs


def both(dag: Dag, fabric, policy: str) -> tuple[Simulator, Simulator]:
    """The reference (per-flow) run and the compiled one of ``dag`` under ``policy``."""
    ref = Simulator(dag, fabric, policies.get(policy), None, fast=False).run()
    new = Simulator(dag, fabric, policies.get(policy), None).run()
    assert ref.stats.finished and new.stats.finished
    return ref, new


def assert_same(ref: Simulator, new: Simulator) -> None:
    """Same events, decisions and flow visits; coflow starts and CCTs within ``REL``."""
    assert (new.stats.events, new.stats.policy_calls) == (ref.stats.events, ref.stats.policy_calls)
    assert new.stats.flow_visits == ref.stats.flow_visits
    cct_ref = [o.finish_s - o.release_s for o in ref.outcomes]
    cct_new = [o.finish_s - o.release_s for o in new.outcomes]
    assert cct_new == pytest.approx(cct_ref, rel=REL, abs=1e-12)
    assert [o.start_s for o in new.outcomes] == pytest.approx(
        [o.start_s for o in ref.outcomes], rel=REL, abs=1e-12
    )
    assert_levels_up_to_ties(ref, new)


def assert_levels_up_to_ties(ref: Simulator, new: Simulator) -> None:
    """Same level per coflow, except where two coflows released together that end
    together (within ``REL``) swapped levels: a tie the policy broke on round-off."""
    key = [(o.release_s, o.finish_s) for o in ref.outcomes]
    lv_ref = {(k, o.level) for k, o in zip(key, ref.outcomes, strict=True)}
    for k, o_ref, o_new in zip(key, ref.outcomes, new.outcomes, strict=True):
        if o_new.level != o_ref.level:
            twins = {lv for (kk, lv) in lv_ref if kk == pytest.approx(k, rel=REL, abs=1e-12)}
            assert o_new.level in twins


def trace_prefix() -> tuple[Dag, BigSwitch]:
    """The first 45 Facebook coflows and the trace's big switch (150 ports at 1 Gbit/s)."""
    trace = fbtrace.read_trace(FB_TRACE)
    dag = fbtrace.to_dag(trace, None, limit=45)
    return dag, parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)


@pytest.mark.parametrize("policy", [*MAX_MIN, "sebf"])
def test_trace_prefix_same_as_per_flow_loop(policy, kernel_runs):
    """The first 45 Facebook coflows (150 ports at 1 Gbit/s): the compiled loop handles
    most events of the max-min policies (SEBF holds rates: never) and changes nothing."""
    dag, fabric = trace_prefix()
    kernel_runs.clear()
    ref, new = both(dag, fabric, policy)
    assert_same(ref, new)
    compiled = sum(kernel_runs)
    if policy in MAX_MIN:
        assert compiled > new.stats.events / 2
    else:
        assert compiled == 0


SMALL = ("tiny-moe", "small-moe", "gpt3-175b")  # presets run under every policy
CASES = [(pr, pol) for pr in preset_names() for pol in policies.names()]


@pytest.mark.parametrize(
    "preset,policy", [(pr, pol) for pr, pol in CASES if pr in SMALL or pol in MAX_MIN]
)
def test_llm_presets_same_as_per_flow_loop(preset, policy):
    """Every LLM preset under the max-min policies, three of them under every
    registered policy; one iteration on a big switch of the job's hosts at 400 Gbit/s:
    same run either way."""
    job = load_preset(preset, {"iterations": 1})
    hosts = generic_hosts(job.hosts_needed)
    ref, new = both(generate(job, hosts), BigSwitch(tuple(hosts), 400e9), policy)
    assert_same(ref, new)


@pytest.mark.parametrize("policy", MAX_MIN)
def test_leaf_spine_same_as_per_flow_loop(policy):
    """Leaf-spine paths (four links, ECMP over two spines) of the small MoE preset."""
    job = load_preset("small-moe")
    hosts = generic_hosts(job.hosts_needed)
    fabric = LeafSpine(tuple(hosts), 2, 2, 100e9, 100e9)
    ref, new = both(generate(job, hosts), fabric, policy)
    assert_same(ref, new)


def test_one_path_shares_one_rate_and_finishes_in_size_order():
    """Three flows of one coflow on one path (1, 2, 3 MB at 1 Gbit/s, max-min: a third
    each): the first ends when 3 x 1 MB are through, at 3 x 8e6 / 1e9 = 0.024 s; then
    two share: the second at 0.024 + 2 x 1 MB x 8 / 1e9 = 0.040 s; the third alone at
    0.040 + 8e6 / 1e9 = 0.048 s (total 6 MB in 0.048 s: the link never idles)."""
    flows = tuple(Flow(f"f{i}", "a", "b", (i + 1) * 1_000_000) for i in (2, 0, 1))
    dag = Dag(coflows=[Coflow("c", flows)])
    sim = Simulator(dag, BigSwitch(("a", "b"), 1e9), policies.get("fair"), None).run()
    assert sim.flows.finish_s.tolist() == pytest.approx([0.048, 0.024, 0.040], rel=1e-12)
    assert sim.stats.events == 3


LEVEL = np.array([1, 0, 1, 0, 1, -1], dtype=np.int64)  # positions 0-4 (5: retired)


def built() -> tuple:
    """Groups of positions 0-4 with levels ``LEVEL``, paths (A, A, A, B, A) and bytes
    left (30, 5, 10, 7, 20); position 5 is retired."""
    pid = np.array([0, 0, 0, 1, 0, 0], dtype=np.int64)
    paths = np.array([[0, 2], [0, 2], [0, 2], [1, 3], [0, 2], [0, 2]], dtype=np.int32)
    remaining = np.array([30.0, 5.0, 10.0, 7.0, 20.0, 0.0])
    active = np.arange(6, dtype=np.int64)
    cof = np.zeros(6, dtype=np.int32)
    rates = np.array([1.0, 2.0, 1.0, 3.0, 1.0, 0.0])
    return groupkernel.build(
        active, LEVEL, pid, cof, paths, remaining, rates, np.full(6, math.nan), False
    )


def test_build_groups_by_level_then_path():
    """Level 0 has groups {1} (path A) and {3} (path B), level 1 one group {0, 2, 4},
    its members by bytes left (30, 10, 20 -> 2, 4, 0); a retired position (level -1)
    belongs to none."""
    lv_bounds, m_start, m_pos, _rem0, g_paths, g_rate, weight = built()[:7]
    assert lv_bounds.tolist() == [0, 2, 3]
    groups = [m_pos[m_start[g] : m_start[g + 1]].tolist() for g in range(3)]
    assert groups == [[1], [3], [2, 4, 0]]
    assert weight.tolist() == [1, 1, 3] and g_rate.tolist() == [2.0, 3.0, 1.0]
    assert g_paths.tolist() == [[0, 2], [1, 3], [0, 2]]


def test_sync_carry_writes_back_and_renumbers_what_is_left_on_a_new_baseline():
    """``built()``'s groups after group 0 (position 1) and group 2's first member
    (position 2) finished, with 5, 3 and 10 bytes served per member: written back as
    ``sync`` does (bytes left, rates, retired levels, bytes sent per coflow); positions
    0, 3 and 4 are left, renumbered 0, 1, 2; group 0 stays, empty; group 1 is {1} with
    7 - 3 = 4 bytes left, group 2 {2, 0} with 20 - 10 = 10 and 30 - 10 = 20; every
    counter 0 and each first member's bytes left (5, 7, 20) less what was served."""
    grp = built()
    m_start, head, weight, served = grp[1], grp[9], grp[6], grp[10]
    head[0], head[2] = m_start[1], m_start[2] + 1
    weight[0], weight[2] = 0, 2
    served[:] = [5.0, 3.0, 10.0]
    clk = (np.zeros(3), np.array([5.0, 7.0, 20.0]), np.zeros(3), np.zeros(3), np.zeros(3))
    level = np.array([1, 0, 1, 0, 1, -1], dtype=np.int64)
    remaining, rates = np.zeros(106), np.full(6, 9.0)
    sent, moved, cof = np.zeros(6), np.zeros(6, dtype=np.bool_), np.arange(6, dtype=np.int32)
    engine = (np.arange(6, dtype=np.int64) + 100, cof, remaining, rates, level, sent)
    new, flows = groupkernel.sync_carry(grp, clk, *engine, moved, False)
    assert level.tolist() == [1, -1, -1, 0, 1, -1]
    assert remaining[[100, 103, 104]].tolist() == [20.0, 4.0, 10.0]
    assert rates.tolist() == [1.0, 0.0, 0.0, 3.0, 1.0, 9.0]
    assert sent.tolist() == [10.0, 5.0, 10.0, 3.0, 10.0, 0.0]  # finished (1, 2): all they had
    assert moved.tolist() == [True] * 5 + [False]
    lv_bounds, m_start, m_pos, rem, _paths, _rate, weight = new[:7]
    assert flows.tolist() == [100, 103, 104]
    assert [m_pos[m_start[g] : m_start[g + 1]].tolist() for g in range(3)] == [[], [1], [2, 0]]
    assert rem.tolist() == [20.0, 4.0, 10.0] and weight.tolist() == [0, 1, 2]
    assert new[9].tolist() == m_start[:-1].tolist() and new[10].tolist() == [0.0, 0.0, 0.0]
    assert clk[1].tolist() == [0.0, 4.0, 10.0] and lv_bounds.tolist() == [0, 2, 3]


@pytest.mark.parametrize(
    "levels,same",
    [
        ((1, 0, 1, 0, 1, -1), True),
        ((4, 2, 4, 2, 4, -1), True),  # a relabelling (a queue between left empty)
        ((0, 1, 0, 1, 0, -1), False),  # the levels swapped
        ((0, 0, 0, 0, 0, -1), False),  # merged: one level would group paths anew
        ((1, 0, 2, 0, 1, -1), False),  # a group's members apart
        ((1, 0, 1, 2, 1, -1), False),  # a level's groups apart
    ],
)
def test_same_levels_accepts_only_a_relabelling(levels, same):
    """``built()``'s groups (level 0: {1}, {3}; level 1: {0, 2, 4}) are kept only
    while each level's members share one value and the values keep their order."""
    assert groupkernel.same_levels(built(), np.array(levels, dtype=np.int64)) is same


@pytest.mark.parametrize("policy", ["fair", "dclas"])
def test_runs_after_a_completion_go_on_with_their_groups(policy, kernel_runs, monkeypatch):
    """On the first 45 Facebook coflows, a run stopped by a coflow completion that
    changed no level and released nothing goes on with its groups (fewer builds than
    runs), and the run is the per-flow loop's."""
    builds: list[int] = []
    real = groupkernel.build

    def counted(*args):
        """The real build, counted."""
        builds.append(1)
        return real(*args)

    monkeypatch.setattr(groupkernel, "build", counted)
    dag, fabric = trace_prefix()
    kernel_runs.clear()
    ref, new = both(dag, fabric, policy)
    assert_same(ref, new)
    assert 0 < len(builds) < len(kernel_runs) - 10


def test_runs_stopped_at_a_byte_threshold_go_on_with_their_groups(monkeypatch):
    """D-CLAS on the first 45 Facebook coflows: a compiled run takes a byte threshold
    itself (``AT_THRESHOLD``); when the policy's new levels keep the order (a relabelling),
    the next run goes on with the same groups, built no more; the run is the per-flow
    loop's all the same."""
    calls: list[str] = []
    real_build, real_loop = groupkernel.build, groupkernel.loop

    def build(*args):
        """The real build, noted."""
        calls.append("build")
        return real_build(*args)

    def loop(*args):
        """The real run, noted with how it stopped."""
        out = real_loop(*args)
        calls.append("threshold" if out[0] == groupkernel.AT_THRESHOLD else "run")
        return out

    monkeypatch.setattr(groupkernel, "build", build)
    monkeypatch.setattr(groupkernel, "loop", loop)
    dag, fabric = trace_prefix()
    ref, new = both(dag, fabric, "dclas")
    assert_same(ref, new)
    stops = [i for i, c in enumerate(calls) if c == "threshold"]
    kept = [i for i in stops if i + 1 < len(calls) and calls[i + 1] != "build"]
    assert stops and kept


def test_by_coflow_splits_a_path_between_coflows():
    """With byte thresholds a group is also one coflow's: two coflows' flows on one
    path and one level form two groups."""
    level = np.zeros(4, dtype=np.int64)
    pid = np.zeros(4, dtype=np.int64)
    paths = np.zeros((4, 2), dtype=np.int32)
    cof = np.array([0, 0, 1, 1], dtype=np.int32)
    args = (np.arange(4), level, pid, cof, paths, np.ones(4), np.ones(4), np.zeros(4))
    assert groupkernel.build(*args, False)[0].tolist() == [0, 1]
    assert groupkernel.build(*args, True)[0].tolist() == [0, 2]


def test_a_policy_on_bytes_sent_decides_inside_the_run(monkeypatch):
    """D-CLAS (decides on bytes sent alone) on the first 45 Facebook coflows: at a byte
    threshold or a coflow completion the policy decides without the groups being
    written back; a decision that keeps the order lets the run go on (``KEPT``), one
    that changes it is used as it is (``DECIDED``: the policy is not asked twice, as
    the same count of decisions as the per-flow loop shows)."""
    from coflowbed.sim import grouprun

    taken: list[int] = []
    real = grouprun._decided
    monkeypatch.setattr(grouprun, "_decided", lambda *a: taken.append(real(*a)) or taken[-1])
    dag, fabric = trace_prefix()
    ref, new = both(dag, fabric, "dclas")
    assert_same(ref, new)
    assert grouprun.KEPT in taken and grouprun.DECIDED in taken


class _CappedPastThreshold(DClas):
    """D-CLAS that also caps every flow of a coflow past its first byte threshold, at
    10, 20 or 30 Mbit/s by its index, below its fair share (a decision with caps, taken
    at a threshold inside a compiled run; caps given to the wrong flows change the run)."""

    name = "test-capped-dclas"

    def decide(self, states, fabric, now):
        """D-CLAS's ranks, with caps on the coflows past the first threshold."""
        out = super().decide(states, fabric, now)
        for s in states:
            if s.bytes_sent >= self.byte_thresholds[0]:
                caps = {f.flow_id: 1e7 * (1 + i % 3) for i, f in enumerate(s.coflow.flows)}
                out[s.coflow_id] = Decision(out[s.coflow_id].rank, caps)
        return out


def test_caps_decided_inside_the_run_reach_the_flows_they_name():
    """A decision with caps taken at a byte threshold inside a compiled run is kept per
    flow and given to the active flows once they are compacted: the run is the
    per-flow loop's."""
    dag, fabric = trace_prefix()
    ref = Simulator(dag, fabric, _CappedPastThreshold(), None, fast=False).run()
    new = Simulator(dag, fabric, _CappedPastThreshold(), None).run()
    assert ref.stats.finished and new.stats.finished
    assert_same(ref, new)


def test_same_coflow_levels_reads_the_members_left():
    """Two levels (coflows 0 and 1, coflow 2 finished in level 0's second group): a
    relabelling keeps the groups; the order swapped, or a level's coflows split,
    does not; a finished member's coflow is not looked at."""
    lv_bounds = np.array([0, 2, 3])
    m_start = np.array([0, 1, 3, 4])
    m_pos = np.array([0, 3, 1, 2])  # group 1: position 3 (finished) then 1
    head = np.array([0, 2, 3])  # first unfinished member of each group (into m_pos)
    grp = (lv_bounds, m_start, m_pos, None, None, None, None, None, None, head, None)
    cof = np.array([0, 0, 1, 2])
    check = groupkernel.same_coflow_levels
    assert check(grp, cof, np.array([3, 5, 0]))
    assert check(grp, cof, np.array([3, 5, 9]))  # coflow 2 finished: any level
    assert not check(grp, cof, np.array([5, 3, 0]))
    every = m_start[:-1]  # position 3 not finished: coflow 2 shares level 0
    grp_split = (lv_bounds, m_start, m_pos, None, None, None, None, None, None, every, None)
    assert not check(grp_split, cof, np.array([3, 5, 9]))


def test_live_rows_and_sent_now_read_the_groups_as_a_write_back_would():
    """Group 0 (positions 0 then 2, 0 finished, 3 bytes served each) and group 1
    (position 1, 4 served): the live rows are positions 1 and 2 with their bytes left
    (rem0 less served) and links; bytes sent add what each member delivered (all of a
    finished member's rem0)."""
    m_start, m_pos, head = np.array([0, 2, 3]), np.array([0, 2, 1]), np.array([1, 2])
    rem0, served = np.array([3.0, 9.0, 8.0]), np.array([3.0, 4.0])
    grp = (None, m_start, m_pos, rem0, None, np.zeros(2), None, None, None, head, served)
    cof = np.array([0, 1, 0])
    paths = np.array([[0, 5], [1, 6], [2, 7]], dtype=np.int32)
    at, row_cof, src, dst, bits = groupkernel.live_rows(grp, cof, paths)
    assert at.tolist() == [1, 2] and row_cof.tolist() == [1, 0]
    assert (src.tolist(), dst.tolist(), bits.tolist()) == ([1, 2], [6, 7], [5.0, 5.0])
    sent = groupkernel.sent_now(grp, cof, np.array([100.0, 0.0]))
    assert sent.tolist() == [100.0 + 3.0 + 3.0, 4.0]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("gap,events", [(SAME_INSTANT / 10, 2), (SAME_INSTANT * 10, 3)])
def test_a_completion_just_before_a_release_is_taken_with_it(fast, gap, events):
    """Coflow a (1 MB at 1 Gbit/s) ends at 8e6 / 1e9 = 0.008 s; coflow b, on other
    hosts, is released ``gap`` of the clock later.  Within round-off of it (a tenth of
    ``SAME_INSTANT``: two sums of one instant) both loops take them as one event at
    b's release, a finishing at its own instant: 2 events (that one, b's end); ten
    times ``SAME_INSTANT`` apart, they are two (3 events)."""
    t_end = 8e6 / 1e9
    release = t_end * (1 + gap)
    dag = Dag(
        coflows=[
            Coflow("a", (Flow("a0", "h0", "h1", 1_000_000),)),
            Coflow("b", (Flow("b0", "h2", "h3", 1_000_000),), release_s=release),
        ]
    )
    fabric = BigSwitch(("h0", "h1", "h2", "h3"), 1e9)
    sim = Simulator(dag, fabric, policies.get("fair"), None, fast=fast).run()
    assert sim.stats.events == events
    assert sim.flows.finish_s[0] == pytest.approx(t_end, rel=1e-15)
    assert sim.outcomes[0].finish_s == (release if events == 2 else sim.flows.finish_s[0])


class _SeesTable(Sincronia):
    """Sincronia noting the bits left of every table it is handed."""

    name = "test-sees-table"

    def __init__(self) -> None:
        """No table seen yet."""
        super().__init__()
        self.seen: list[np.ndarray] = []

    def decide_table(self, table, ids, seq, now):
        """Sincronia's decision; the table's bits noted."""
        self.seen.append(table.bits.copy())
        return super().decide_table(table, ids, seq, now)


@pytest.mark.parametrize("fast", [False, True])
def test_a_table_policy_sees_whole_bytes_as_decide_does(fast):
    """Three flows of 1,000,001 B on one path share 1 Gbit/s (a third each); a
    coflow of 333,334 B on other hosts ends first and the policy decides then, each of
    the three having received 333,334 / 3 B: 888,889.67 B left (and the round-off of
    either loop in it).  The table holds whole bytes, rounded up (888,890), as
    ``CoflowState.remaining`` does, so ties between equal coflows are broken alike in
    both loops."""
    big = tuple(Flow(f"a{i}", "h0", "h1", 1_000_001) for i in range(3))
    dag = Dag(coflows=[Coflow("a", big), Coflow("b", (Flow("b0", "h2", "h3", 333_334),))])
    policy = _SeesTable()
    Simulator(dag, BigSwitch(("h0", "h1", "h2", "h3"), 1e9), policy, None, fast=fast).run()
    assert (policy.seen[1] / 8.0).tolist() == [888_890.0] * 3  # at b's end
    assert all((bits / 8.0 == np.round(bits / 8.0)).all() for bits in policy.seen)
