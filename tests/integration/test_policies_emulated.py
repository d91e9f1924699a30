"""Policies compared on the emulated fabric (root): the same workload and seed under
each policy, through ``coflowbed compare``.

Thresholds and why:
- small-moe (16-layer MoE, PP4 x DP2, 8 hosts at 50 Mbit/s): the flow-level simulator
  predicts fair 12.7 s vs Hermod 10.2 s per iteration (1.25x); measured on the emulator
  1.28x.  We require Hermod to beat fair by 10 %, leaving room for run-to-run noise
  (about 5 % here).  PP-first and EP-first must be no worse than fair (+5 % noise).
- fb-slice-busy (30 overlapping coflows of the Facebook trace, 8 hosts): SEBF beats
  fair and FIFO, FIFO is worse than fair; figures in the tests.  (The trace's first 30
  coflows, fb-slice.yaml, cannot show an order's effect: one 94 MB coflow is 85 % of the
  summed CCTs and the simulator gives fair 0.174 s vs SEBF 0.169 s.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coflowbed.results.files import read_csv_rows
from tests.cli import SCENARIOS, coflowbed_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]


def compare(scenario: str, policies: str, out: Path, repeat: int = 1) -> dict[str, dict]:
    """Run ``coflowbed compare`` (``repeat`` interleaved runs per policy); rows by policy,
    each figure the mean over its runs (every run must be complete)."""
    args = ("--policies", policies, "--repeat", str(repeat), "--out", out)
    coflowbed_ok("-q", "compare", SCENARIOS / scenario, *args, timeout=1200 * repeat)
    rows = {r["policy"]: r for r in read_csv_rows(out / "compare.csv")}
    assert json.loads((out / "compare.json").read_text())["partial"] is False
    return rows


@pytest.fixture(scope="module")
def moe(tmp_path_factory) -> dict[str, dict]:
    return compare(
        "small-moe.yaml", "fair,hermod,pp-first,ep-first", tmp_path_factory.mktemp("moe")
    )


def test_hermod_shortens_the_iteration(moe):
    fair, hermod = moe["fair"]["iteration_time_s"], moe["hermod"]["iteration_time_s"]
    assert hermod < 0.9 * fair, (fair, hermod)


@pytest.mark.parametrize("policy", ["pp-first", "ep-first"])
def test_type_first_rules_are_no_worse_than_fair(moe, policy):
    assert moe[policy]["iteration_time_s"] <= 1.05 * moe["fair"]["iteration_time_s"]


@pytest.fixture(scope="module")
def fb_busy(tmp_path_factory) -> dict[str, dict]:
    """fb-slice-busy under fair, FIFO and SEBF, 3 interleaved runs each (means): one run
    of fair spreads by 10-15 % here (4.41-5.31 s measured), as much as FIFO's lead over
    it (a CI run on 2026-12-05 had fair 5.31 s against FIFO 5.01 s; the rerun 4.62
    against 5.28 s)."""
    return compare("fb-slice-busy.yaml", "fair,fifo,sebf", tmp_path_factory.mktemp("fbb"), 3)


def test_sebf_beats_fair_and_fifo_on_a_busy_trace_window(fb_busy):
    """Varys SEBF (MADD rates paced at the senders, re-rated on agent progress every
    0.5 s, work conservation by the strict-priority levels) gives a lower average CCT
    than fair sharing and FIFO.  Simulator (K=8): fair 3.08 s, FIFO 5.78 s, SEBF 1.96 s
    (36 % below fair).  Measured (2026-11-30): sebf 2.41-2.84 s in six runs vs fair
    4.41-4.92 s and FIFO 5.73-6.07 s in four: 36-49 % below the better of the two.  We
    require 15 % below it: run-to-run noise is ~10-15 % for SEBF here (one slow flow
    under a stale cap delays a 100 MB coflow until the next re-rate), more when other
    users load the 2 cores."""
    fair, fifo, sebf = (fb_busy[p]["avg_cct_s"] for p in ("fair", "fifo", "sebf"))
    assert sebf < 0.85 * min(fair, fifo), (fair, fifo, sebf)


def test_fifo_is_worse_than_fair_sharing_on_the_trace(fb_busy):
    """As the literature reports: FIFO 5.7-6.1 s vs fair 4.4-4.6 s measured (simulator
    5.78 vs 3.08 s)."""
    assert fb_busy["fifo"]["avg_cct_s"] > fb_busy["fair"]["avg_cct_s"]


def run_old_then_new(
    tmp_path: Path, policy: str, old_bytes: int, new_at_s: float, new_bytes: int = 5_000_000
) -> Path:
    """Run ``policy`` on 2 leaves x 2 hosts at 100 Mbit/s: 'old' (``old_bytes``, h11 ->
    h21) at 0 s, 'new' (``new_bytes``, h12 -> h21, the same downlink) at ``new_at_s``;
    the run folder."""
    import yaml

    flow = lambda src, n: [{"src": src, "dst": "h21", "bytes": n}]  # noqa: E731
    scen = {
        "name": policy,
        "policy": policy,
        "timeout_s": 120,
        "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_bw_mbps": 100},
        "workload": {
            "coflows": [
                {"id": "old", "arrival_s": 0, "flows": flow("h11", old_bytes)},
                {"id": "new", "arrival_s": new_at_s, "flows": flow("h12", new_bytes)},
            ]
        },
    }
    path = tmp_path / f"{policy}.yaml"
    path.write_text(yaml.safe_dump(scen))
    coflowbed_ok("run", path, "--out", tmp_path / "run", timeout=300)
    return tmp_path / "run"


def coflows_of(run: Path) -> dict[str, dict]:
    """The run's coflows.csv rows by coflow id."""
    from coflowbed.results.files import read_coflows_csv

    return {r["coflow_id"]: r for r in read_coflows_csv(run / "coflows.csv")}


def test_dclas_demotes_a_coflow_that_crossed_10_mib(tmp_path):
    """D-CLAS learns bytes sent from the leaves' tag counters: 'old' has sent ~20 MB when
    'new' (5 MB) arrives, so it sits in queue 1 and 'new' (queue 0) runs nearly as if
    alone: 0.4 s at 100 Mbit/s, allowed 0.6 s (TCP start-up, and 'old' keeps level 0 for
    the few ms until its re-ranked entry lands; one CI run measured 0.51 s).  Sharing the link
    would take 0.8 s, and FIFO would hold 'new' behind 'old' for about 2 s."""
    run = run_old_then_new(tmp_path, "dclas", 40_000_000, 2)
    cf = coflows_of(run)
    assert cf["old"]["rank"].startswith("(1,")  # demoted to queue 1 by its byte count
    assert cf["new"]["cct_s"] <= 1.5 * 5e6 * 8 / 100e6, cf["new"]
    assert cf["new"]["finish_s"] < cf["old"]["finish_s"]
    summary = json.loads((run / "summary.json").read_text())
    release = summary["release"]
    assert release["level_marked"] + release["writes_waited"] == 2, release  # both registered
    # 'old' moved down once, for 'new', and not up again when 'new' ended: moved up
    # mid-flow, its packets would overtake its own queued ones (compress.keep_levels)
    assert summary["level_moves"] == {"up": 0, "down": 1}, summary["level_moves"]


def test_sebf_flows_start_before_their_metered_entry_and_move_to_its_tag(tmp_path):
    """SEBF meters each pair (MADD), so neither release waits for its entry: both
    coflows start marked with their level's code, paced at their meters' rates, and move
    to their tag's DSCP once the entry is written.  The leaves' tag counters see each
    coflow's bytes only after that move (packets with a level's code pass the tag table
    uncounted): none without it.  The move comes with the next answer, which can be the
    next progress poll, 0.5 s on, so each coflow lasts longer than that: 'old' 40 MB,
    'new' 10 MB (0.8 s at 100 Mbit/s; with 5 MB, 0.4 s, one CI run of the whole suite saw
    'new' end before its move and counted none of it).  Each is then counted for at least
    what it sends after the first 0.5 s: 'new' 3.75 MB, 'old' 33 MB.  'new' arrives at 1 s
    with less left than 'old' (at most 12.5 MB of 40 sent) and goes first, allowed 1.5x
    its time alone as in the D-CLAS test above."""
    run = run_old_then_new(tmp_path, "sebf", 40_000_000, 1, new_bytes=10_000_000)
    release = json.loads((run / "summary.json").read_text())["release"]
    assert release["level_marked"] == 2 and release["writes_waited"] == 0, release
    tags = json.loads((run / "counters.json").read_text())["tags"]
    counted = sorted(t["bytes"] for t in tags.values() if t["bytes"])
    assert len(counted) == 2 and counted[0] > 2.5e6 and counted[1] > 25e6, counted
    cf = coflows_of(run)
    assert cf["new"]["cct_s"] <= 1.5 * 10e6 * 8 / 100e6, cf["new"]
    assert cf["new"]["finish_s"] < cf["old"]["finish_s"]
