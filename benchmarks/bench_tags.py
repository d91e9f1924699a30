"""What each way of telling more than 55 coflows apart costs, on a scenario's coflows
all active at once (docs/policies.md, "More than 55 coflows at once").

Prints, per design: whether it fits, coflow-table rules on the leaves, and (for the
built one) the controller's CPU time per decision: the scheduler's decision, the leaf
diffs and the OpenFlow 1.3 encoding of every write (os-ken, no switch), per arrival of
1..N coflows.  Designs:

- global DSCP: one DSCP tag 1..55 per coflow in the fabric (before);
- per-sender DSCP (built): tag ids whose DSCP is unique on each sending host;
- per-sender DSCP map (not built): a DSCP chosen per (coflow, sending host), fits
  whenever no host sends more than 55 coflows at once;
- per-pair DSCP: a DSCP unique per (sender, receiver) pair, rules match ipv4_dst too;
- per-flow 5-tuple: one rule per flow (source ports known to the controller);
- tag per level: coflows of one level share its tag (no per-coflow counters or meters).

With ``--scan N``: every window of N consecutive coflows of the scenario's trace (step
5), mapped onto its hosts, all active at once: how many each design fits.

    .venv/bin/python benchmarks/bench_tags.py [coflowbed/scenarios/fb-many.yaml]
        [--copies K] [--policy fifo] [--scan N]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from os_ken.ofproto import (
    ofproto_v1_3 as ofp,  # noqa: E402
    ofproto_v1_3_parser as ofparser,  # noqa: E402
)

import controller.policies as policies  # noqa: E402
from coflowbed.experiment.scenario import load_scenario  # noqa: E402
from controller.coflow_table import LeafTable, leaf_state  # noqa: E402
from controller.policies import FabricView  # noqa: E402
from controller.scheduler import LiveScheduler, TagPool  # noqa: E402
from controller.southbound import of_messages as ofm  # noqa: E402
from topo.plan import FabricPlan  # noqa: E402
from workload.dag import Coflow  # noqa: E402
from workload.marking import WIRE_TAGS  # noqa: E402

DP = SimpleNamespace(ofproto=ofp, ofproto_parser=ofparser, id=1)


@dataclass(frozen=True)
class Cost:
    """One design on one workload: does it fit, how many leaf rules, why not."""

    design: str
    fits: bool
    rules: int
    note: str


def _senders(cf: Coflow) -> set[str]:
    """Hosts sending flows of ``cf``."""
    return {f.src for f in cf.flows}


def _pairs(cf: Coflow) -> set[tuple[str, str]]:
    """(src, dst) pairs of ``cf``."""
    return {(f.src, f.dst) for f in cf.flows}


def _max_per(keys_of, coflows: list[Coflow]) -> int:
    """Most coflows sharing one key (host or pair)."""
    count: dict = {}
    for cf in coflows:
        for k in keys_of(cf):
            count[k] = count.get(k, 0) + 1
    return max(count.values(), default=0)


def _pool_fits(coflows: list[Coflow]) -> tuple[bool, str]:
    """Whether ``TagPool`` gives every coflow a tag at once; the largest id or the error."""
    pool = TagPool()
    try:
        tags = [pool.take(_senders(cf)) for cf in coflows]
    except RuntimeError as exc:
        return False, str(exc)
    return True, f"tag ids 1..{max(t or 0 for t in tags)}"


def costs(coflows: list[Coflow], plan: FabricPlan, levels: int) -> list[Cost]:
    """Every design's cost for ``coflows`` all active at once."""
    n = len(coflows)
    per_host = sum(len(_senders(cf)) for cf in coflows)
    host_max, pair_max = _max_per(_senders, coflows), _max_per(_pairs, coflows)
    fits, note = _pool_fits(coflows)
    return [
        Cost("global DSCP", n <= WIRE_TAGS, per_host, f"{n} coflows, 55 tags"),
        Cost("per-sender DSCP", fits, per_host, f"{host_max} at most on a host; {note}"),
        Cost(
            "per-pair DSCP",
            pair_max <= WIRE_TAGS,
            sum(len(_pairs(cf)) for cf in coflows),
            f"{pair_max} at most on a pair",
        ),
        Cost("per-flow 5-tuple", True, sum(len(cf.flows) for cf in coflows), "ports known"),
        Cost("tag per level", True, levels * len(plan.hosts), "no per-coflow counters/meters"),
    ]


def _encode(diffs) -> int:
    """Serialise every OpenFlow message of ``diffs``; how many."""
    n = 0
    for d in diffs:
        for m in ofm.diff_msgs(DP, d):
            m.set_xid(1)
            m.serialize()
            n += 1
    return n


def decision_times(coflows: list[Coflow], plan: FabricPlan, levels: int, policy: str):
    """Per arrival: (active coflows, ms of decide + diff + encode, writes)."""
    sched = LiveScheduler(policies.get(policy), FabricView.uniform(plan.host_names(), 1e8), levels)
    tables = {sw.index: LeafTable() for sw in plan.switches if sw.role == "leaf"}
    entries, epochs, out = {}, {}, []
    for i, cf in enumerate(coflows):
        t0 = time.perf_counter()
        ch = sched.arrive(replace(cf, release_s=0.0), 0.0)
        for t in ch.clear_tags:
            entries.pop(t, None)
        for e in ch.entries:
            entries[e.tag] = e
            epochs.setdefault(e.tag, i + 1)
        diffs = []
        for leaf, table in tables.items():
            rules, meters = leaf_state(plan, leaf, entries.values(), epochs)
            d, ids = table.diff(rules, meters)
            table.commit(rules, meters, ids)
            diffs.append(d)
        writes = _encode(diffs)
        out.append((len(sched.states), (time.perf_counter() - t0) * 1e3, writes))
    return out


def _copies(coflows: list[Coflow], k: int) -> list[Coflow]:
    """``k`` copies of the workload (ids suffixed), as k jobs at once."""
    return [
        replace(
            cf,
            coflow_id=f"{cf.coflow_id}.{j}",
            flows=tuple(replace(f, flow_id=f"{f.flow_id}.{j}") for f in cf.flows),
        )
        for j in range(k)
        for cf in coflows
    ]


def scan(scen, limit: int, hosts_per_leaf: int | None) -> None:
    """Per design, how many trace windows of ``limit`` coflows fit all at once (on
    ``hosts_per_leaf`` hosts a leaf if given, else the scenario's fabric)."""
    from coflowbed.experiment.scenario import merge_pair_flows
    from workload import fbtrace

    ts = scen.raw["workload"]["trace"]
    trace = fbtrace.read_trace(Path(scen.source).parent / ts["path"])
    plan = (
        scen.plan if hosts_per_leaf is None else replace(scen.plan, hosts_per_leaf=hosts_per_leaf)
    )
    hosts = plan.host_names()
    fits: dict[str, int] = {}
    windows = range(0, len(trace) - limit + 1, 5)
    for skip in windows:
        dag = fbtrace.to_dag(trace, hosts, limit=limit, skip=skip)
        coflows = [merge_pair_flows(cf) for cf in dag.coflows]
        for c in costs(coflows, plan, scen.levels):
            fits[c.design] = fits.get(c.design, 0) + c.fits
    print(f"windows of {limit} trace coflows on {len(hosts)} hosts, all active at once:")
    for design, n in fits.items():
        print(f"  {design:18} fits {n} of {len(windows)}")


def main() -> None:
    """Print the cost table and the decision times."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="coflowbed/scenarios/fb-many.yaml")
    ap.add_argument("--copies", type=int, default=1, help="the workload this many times at once")
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--scan", type=int, default=0, help="scan trace windows of this many coflows")
    ap.add_argument("--hosts-per-leaf", type=int, default=None, help="--scan: on this fabric")
    a = ap.parse_args()
    scen = load_scenario(a.scenario)
    if a.scan:
        scan(scen, a.scan, a.hosts_per_leaf)
        return
    coflows = _copies(list(scen.dag.coflows), a.copies)
    print(f"{scen.name} x{a.copies}: {len(coflows)} coflows at once, {len(scen.plan.hosts)} hosts")
    print(f"{'design':18} {'fits':5} {'rules':>6}  note")
    table = costs(coflows, scen.plan, scen.levels)
    for c in table:
        print(f"{c.design:18} {'yes' if c.fits else 'no':5} {c.rules:6d}  {c.note}")
    if not table[1].fits:
        return
    times = decision_times(coflows, scen.plan, scen.levels, a.policy)
    for lo, hi in ((1, 55), (56, len(coflows))):
        sel = [t for t in times if lo <= t[0] <= hi]
        if sel:
            ms = sorted(t[1] for t in sel)
            print(
                f"{a.policy} arrivals with {lo}..{hi} active: decide+diff+encode median "
                f"{ms[len(ms) // 2]:.2f} ms, max {ms[-1]:.2f} ms, "
                f"writes/arrival {sum(t[2] for t in sel) / len(sel):.1f}"
            )


if __name__ == "__main__":
    main()
