"""Lower bound on a DAG's completion time: the longest dependency path, where a compute
takes its duration and a coflow takes the time its busiest host port needs alone
(max over hosts of max(bytes sent, bytes received) / line rate).  Nothing can finish
earlier on a fabric whose host ports run at ``line_rate_bps``.
"""

from __future__ import annotations

from collections import defaultdict

from workload.dag import Coflow, Compute, Dag, node_id, topological_order


def coflow_port_time(cf: Coflow, line_rate_bps: float) -> float:
    """Seconds the coflow's busiest host port (either direction) needs at line rate."""
    tx: dict[str, int] = defaultdict(int)
    rx: dict[str, int] = defaultdict(int)
    for f in cf.flows:
        tx[f.src] += f.bytes
        rx[f.dst] += f.bytes
    busiest = max(max(tx.values(), default=0), max(rx.values(), default=0))
    return 8.0 * busiest / line_rate_bps


def finish_times(dag: Dag, line_rate_bps: float) -> dict[str, float]:
    """Earliest finish time of every node in the contention-free lower-bound schedule."""
    if not line_rate_bps > 0:
        raise ValueError(f"line_rate_bps must be > 0, got {line_rate_bps}")
    nodes = {node_id(n): n for n in dag.nodes()}
    finish: dict[str, float] = {}
    for nid in topological_order(dag):
        n = nodes[nid]
        start = max((finish[d] for d in n.deps), default=0.0)
        if isinstance(n, Compute):
            finish[nid] = start + n.duration_s
        else:
            finish[nid] = max(start, n.release_s) + coflow_port_time(n, line_rate_bps)
    return finish


def critical_path(dag: Dag, line_rate_bps: float) -> float:
    """Lower bound (seconds) on the time to run the whole DAG."""
    return max(finish_times(dag, line_rate_bps).values(), default=0.0)


def iteration_bounds(dag: Dag, line_rate_bps: float) -> dict[int, float]:
    """Per iteration: lower bound on the time its last node finishes (from t = 0)."""
    finish = finish_times(dag, line_rate_bps)
    out: dict[int, float] = {}
    for n in dag.nodes():
        it = n.iteration if isinstance(n, Compute) else n.identity.iteration
        out[it] = max(out.get(it, 0.0), finish[node_id(n)])
    return out
