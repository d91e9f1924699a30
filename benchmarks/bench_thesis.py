"""Hermod at the thesis's simulated conditions (docs/reproduction.md): steady-state tables
of the thesis sweeps, and Hermod's gain under each correction measured separately.

    .venv/bin/python benchmarks/bench_thesis.py table results/<time>-sweep-thesis-bandwidth/
    .venv/bin/python benchmarks/bench_thesis.py corrections [--job qwen-moe-24l] [--gbps 100]
    .venv/bin/python benchmarks/bench_thesis.py bound [--jobs ...] [--gbps ...] [--dp ...]

``table`` reads a sweep folder run with ``results: full``: per run, the first iteration's
span and the steady-state iteration (start of the last iteration minus start of the one
before: the pipeline's period once it repeats), tokens/s over the steady iteration, and
each policy's speed-up over fair on both.  ``corrections`` simulates one point (1,024
GPUs on the fat-tree) with the flow-level simulator, each run through ``coflowbed
simulate``: fair and Hermod with and without an iteration barrier, Hermod with the MID*
rule and with the 6-bit DSCP packing, and the earlier sweeps' job (qwen-moe-12l, PP4 x
EP64, one iteration, leaf-spine) at the same GPU count and rate.  Prints the table and
each run's wall time.  ``bound`` prints the contention-free lower bound on the first and
the steady iteration (every coflow alone at line rate on its busiest host port), which
caps what any scheduler can gain over fair.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workload import generate  # noqa: E402
from workload.critpath import iteration_bounds  # noqa: E402
from workload.placement import generic_hosts  # noqa: E402
from workload.presets import load_preset  # noqa: E402

JOB_KEY, DP_KEY, GBPS_KEY = (
    "workload.job",
    "workload.overrides.parallelism.dp",
    "sim_fabric.host_gbps",
)


@dataclass(frozen=True)
class Iters:
    """The iteration figures of one run."""

    first_s: float  # span of iteration 0 (first node start to last node end)
    steady_s: float  # start of the last iteration minus start of the one before
    count: int


def read_iters(run: Path) -> Iters:
    """``Iters`` from a run folder's iterations.csv (steady = first with one iteration)."""
    with (run / "iterations.csv").open() as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["iteration"]))
    starts = [float(r["start_s"]) for r in rows]
    first = float(rows[0]["time_s"])
    steady = starts[-1] - starts[-2] if len(rows) > 1 else first
    return Iters(first, steady, len(rows))


def tokens(job: str, overrides: dict) -> int:
    """Tokens one iteration of ``job`` (with its dotted-key ``overrides``) trains."""
    spec = load_preset(job, overrides)
    return spec.parallelism.dp * spec.microbatches * spec.model.micro_batch * spec.model.seq_len


def _job_of(sweep: dict, grid: dict) -> tuple[str, dict]:
    """The job and its overrides at one grid point of a sweep file's scenario."""
    wl = sweep["scenario"]["workload"]
    over = dict(wl.get("overrides") or {})
    pre = "workload.overrides."
    over.update({k[len(pre) :]: v for k, v in grid.items() if k.startswith(pre)})
    return grid.get(JOB_KEY, wl["job"]), over


def table(folder: Path) -> None:
    """Print the steady-state table of a sweep folder."""
    data = json.loads((folder / "sweep.json").read_text())
    sweep = yaml.safe_load(Path(data["source"]).read_text())
    rows = [r for r in data["rows"] if not r.get("error") and r.get("run")]
    keys = list(data["keys"])
    figs: dict[tuple, dict[str, Iters]] = {}
    for r in rows:
        point = tuple(r[k] for k in keys)
        figs.setdefault(point, {})[r["policy"]] = read_iters(folder / r["run"])
    wall = {(tuple(r[k] for k in keys), r["policy"]): r.get("wall_s") for r in rows}
    pols = [p for p in data["policies"] if p != "fair"]
    head = [*keys, "fair steady (s)", "fair first (s)", "fair tokens/s"]
    head += [f"{p} {m}" for p in pols for m in ("steady x", "first x")] + ["wall (s)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for point, by in figs.items():
        fair = by.get("fair")
        if fair is None:
            continue
        grid = dict(zip(keys, point))
        tok = tokens(*_job_of(sweep, grid))
        cells = [*map(str, point), f"{fair.steady_s:.3f}", f"{fair.first_s:.3f}"]
        cells.append(f"{tok / fair.steady_s:,.0f}")
        for p in pols:
            it = by.get(p)
            cells += (
                [f"{fair.steady_s / it.steady_s:.3f}", f"{fair.first_s / it.first_s:.3f}"]
                if it
                else ["", ""]
            )
        walls = [w for (pt, _), w in wall.items() if pt == point and w is not None]
        cells.append(f"{min(walls):.0f}-{max(walls):.0f}" if walls else "")
        print("| " + " | ".join(cells) + " |")


def _scenario(job: str, gbps: float, policy, overrides: dict, fabric: dict) -> dict:
    """A simulator scenario of ``job`` on ``fabric`` under ``policy``."""
    return {
        "name": "bench-thesis",
        "fabric": {"spines": 1, "leaves": 1, "hosts_per_leaf": 2, "host_bw_mbps": 100},
        "sim_fabric": {**fabric, "host_gbps": gbps},
        "levels": 8,
        "policy": policy,
        "workload": {"job": job, "overrides": overrides},
    }


def simulate(scen: dict, out: Path) -> tuple[Iters, float]:
    """Run ``coflowbed simulate`` on ``scen`` into ``out``; its Iters and wall time."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scenario.yaml"
    path.write_text(yaml.safe_dump(scen, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "coflowbed", "simulate", str(path), "--out", str(out / "run")]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    return read_iters(out / "run"), time.perf_counter() - t0


def corrections(job: str, gbps: float, out: Path) -> None:
    """Print Hermod's gain over fair under each correction, measured separately."""
    fat = {"kind": "fattree"}
    layers = load_preset(job).model.layers
    hermod = "hermod"
    variants = [
        ("thesis model, no barrier", "fair", {}, fat, job),
        ("thesis model, no barrier", hermod, {}, fat, job),
        (
            "thesis model, no barrier, MID*",
            {"name": "hermod", "params": {"mid_star": True}},
            {},
            fat,
            job,
        ),
        (
            "thesis model, no barrier, DSCP 6 bits",
            {"name": "hermod", "params": {"encoding": "dscp", "layers": layers}},
            {},
            fat,
            job,
        ),
        ("thesis model, barrier", "fair", {"iteration_barrier": True}, fat, job),
        ("thesis model, barrier", hermod, {"iteration_barrier": True}, fat, job),
    ]
    old = {"byte_scale": 1, "parallelism.pp": 4, "parallelism.ep": 64, "parallelism.dp": 256}
    old["placement.gpus_per_host"] = 8
    spine = {"kind": "leafspine", "hosts_per_leaf": 16, "spines": 8}
    if job == "qwen-moe-24l":
        variants += [
            (
                "earlier sweeps' job (qwen-moe-12l PP4 EP64, 1 it.), leaf-spine",
                p,
                old,
                spine,
                "qwen-moe-12l",
            )
            for p in ("fair", hermod)
        ]
        variants += [
            ("earlier sweeps' job, fat-tree", p, old, fat, "qwen-moe-12l") for p in ("fair", hermod)
        ]
    results: dict[str, dict[str, Iters]] = {}
    print(f"{job} at {gbps:g} Gbit/s, 1,024 GPUs; run wall times:")
    for i, (label, pol, over, fabric, j) in enumerate(variants):
        name = pol if isinstance(pol, str) else "hermod*"
        it, wall = simulate(_scenario(j, gbps, pol, over, fabric), out / f"v{i}")
        results.setdefault(label, {})["fair" if pol == "fair" else "hermod"] = it
        figs = f"first {it.first_s:.3f} s, steady {it.steady_s:.3f} s"
        print(f"  {label} / {name}: {wall:.0f} s ({figs})")
    print()
    cols = ["set-up", "fair steady (s)", "fair first (s)", "Hermod steady (s)"]
    print("| " + " | ".join([*cols, "gain steady", "gain first"]) + " |")
    print("|---|---|---|---|---|---|")
    fair_of = {label: by["fair"] for label, by in results.items() if "fair" in by}
    for label, by in results.items():
        base = fair_of.get(label) or fair_of["thesis model, no barrier"]
        h = by.get("hermod")
        if h is None:
            continue
        print(
            f"| {label} | {base.steady_s:.3f} | {base.first_s:.3f} | {h.steady_s:.3f} | "
            f"{base.steady_s / h.steady_s:.3f} | {base.first_s / h.first_s:.3f} |"
        )


def bounds(jobs: list[str], rates: list[float], dps: list[int | None]) -> None:
    """Print the contention-free lower bound on the first and the steady iteration
    (``workload.critpath``: every coflow alone at line rate, compute as modelled)."""
    print("| job | dp | Gbit/s | bound first (s) | bound steady (s) | wall (s) |")
    print("|---|---|---|---|---|---|")
    for job in jobs:
        for dp in dps:
            t0 = time.perf_counter()
            spec = load_preset(job, {"parallelism.dp": dp} if dp else None)
            dag = generate(spec, generic_hosts(spec.hosts_needed))
            for gbps in rates:
                end = iteration_bounds(dag, gbps * 1e9)
                its = sorted(end)
                steady = end[its[-1]] - end[its[-2]] if len(its) > 1 else end[its[0]]
                wall = time.perf_counter() - t0
                shown = dp or spec.parallelism.dp
                cells = [job, shown, f"{gbps:g}", f"{end[its[0]]:.3f}", f"{steady:.3f}"]
                print("| " + " | ".join(map(str, [*cells, f"{wall:.0f}"])) + " |")


def main() -> None:
    """Parse the command line and run the chosen report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("table", help="steady-state table of a thesis sweep folder")
    t.add_argument("folder", type=Path)
    c = sub.add_parser("corrections", help="Hermod's gain under each correction")
    c.add_argument("--job", default="qwen-moe-24l")
    c.add_argument("--gbps", type=float, default=100.0)
    c.add_argument("--out", type=Path, default=None, help="run folders (default: a temp dir)")
    b = sub.add_parser("bound", help="contention-free lower bounds on the iteration")
    b.add_argument(
        "--jobs", nargs="+", default=["qwen-moe-24l", "mixtral-8x22b", "gpt3-175b-thesis"]
    )
    b.add_argument("--gbps", nargs="+", type=float, default=[40, 100, 200, 400])
    b.add_argument("--dp", nargs="+", type=int, default=[0], help="0: the preset's")
    args = ap.parse_args()
    if args.cmd == "bound":
        bounds(args.jobs, args.gbps, [d or None for d in args.dp])
    elif args.cmd == "table":
        table(args.folder)
    else:
        out = args.out or Path(tempfile.mkdtemp(prefix="bench-thesis-"))
        corrections(args.job, args.gbps, out)


if __name__ == "__main__":
    main()
