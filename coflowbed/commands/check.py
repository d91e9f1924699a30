"""``coflowbed check RUN_DIR``: simulate the scenario of an emulated run with the levels
the run used and report measured / simulated CCT per coflow and on average."""
from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

from coflowbed.errors import UserError

NAME = "check"
HELP = "compare an emulated run's CCTs with the flow-level model of the same scenario"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``check``."""
    p.add_argument("run_dir", type=Path, help="results folder of an emulated run")
    p.add_argument("--out", type=Path, help="also write the per-coflow table as CSV here")
    p.add_argument("--fabric", choices=("leafspine", "bigswitch"), default="leafspine",
                   help="fabric model to simulate (default: the run's leaf-spine)")


def run(args: argparse.Namespace) -> int:
    """Simulate, compare, print the table and the mean ratio."""
    rows = compare_run(args.run_dir, args.fabric)
    _print(rows)
    if args.out:
        with args.out.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["coflow_id"])
            w.writeheader()
            w.writerows(rows)
    return 0


def compare_run(run_dir: Path, fabric_kind: str = "leafspine") -> list[dict]:
    """Per coflow: level, measured and simulated CCT (s) and their ratio."""
    from coflowbed.commands.simulate import scenario_fabric
    from coflowbed.results import read_coflows_csv
    from coflowbed.sim import StaticPolicy, simulate

    plan, levels, rates = _run_inputs(run_dir)
    dag = _run_dag(run_dir)
    measured = {r["coflow_id"]: r for r in read_coflows_csv(_need(run_dir / "coflows.csv"))}
    used = {cid: int(r["level"]) for cid, r in measured.items() if r.get("level") is not None}
    policy = StaticPolicy(used, levels - 1, rates)
    sim = simulate(dag, scenario_fabric(plan, fabric_kind), policy, levels)
    rows = []
    for rec in sim.coflow_records():
        m = measured.get(rec.coflow_id, {})
        cct_m, cct_s = m.get("cct_s"), rec.cct_s
        ratio = cct_m / cct_s if cct_m is not None and cct_s else None
        rows.append({"coflow_id": rec.coflow_id, "level": used.get(rec.coflow_id),
                     "measured_cct_s": cct_m, "simulated_cct_s": cct_s, "ratio": ratio})
    return rows


def _need(path: Path) -> Path:
    """``path`` if it exists, else UserError naming it."""
    if not path.exists():
        raise UserError(str(path), None, "missing: not an emulated run folder?")
    return path


def _run_inputs(run_dir: Path):
    """(FabricPlan, K, static rate caps in bit/s) from the run's resolved inputs."""
    from coflowbed.config import load_yaml
    from topo.plan import FabricPlan

    scen = load_yaml(_need(run_dir / "scenario.yaml"))
    if not isinstance(scen, dict):
        raise UserError(str(run_dir / "scenario.yaml"), None, "must be a mapping")
    try:
        fabric = json.loads((run_dir / "fabric.json").read_text()) if \
            (run_dir / "fabric.json").exists() else dict(scen["fabric"])
        fabric.setdefault("fabric_bw_mbps", fabric.get("host_bw_mbps"))  # loader's default
        plan = FabricPlan.from_dict(fabric)
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(str(run_dir / "scenario.yaml"), "fabric", f"unusable: {exc}") from None
    levels = scen.get("levels", 8)
    items = (scen.get("workload") or {}).get("coflows") or []
    rates = {str(c.get("id", f"c{i + 1}")): float(c["rate_mbps"]) * 1e6
             for i, c in enumerate(items) if isinstance(c, dict) and c.get("rate_mbps")}
    return plan, int(levels), rates


def _run_dag(run_dir: Path):
    """The coflows the run executed (dag.json)."""
    from workload import dagjson

    try:
        return dagjson.load(_need(run_dir / "dag.json"))
    except ValueError as exc:
        raise UserError(str(run_dir / "dag.json"), None, str(exc)) from None


def _print(rows: list[dict]) -> None:
    """The per-coflow table and the mean ratio."""
    print(f"{'coflow':<24} {'level':>5} {'measured_s':>11} {'simulated_s':>11} {'ratio':>7}")
    fmt = lambda x, p: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    for r in rows:
        print(f"{r['coflow_id']:<24} {fmt(r['level'], 0):>5} {fmt(r['measured_cct_s'], 4):>11} "
              f"{fmt(r['simulated_cct_s'], 4):>11} {fmt(r['ratio'], 3):>7}")
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None and math.isfinite(r["ratio"])]
    mean = sum(ratios) / len(ratios) if ratios else None
    print(f"mean measured/simulated CCT ratio over {len(ratios)} coflows: {fmt(mean, 3)}")
