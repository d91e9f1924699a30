"""The three engines side by side (issue 48's validation): each scenario under each policy
in the emulator (root, Open vSwitch), the packet engine (ns-3) and the fluid model, on the
same scenario file, fabric, levels and policy.

Prints per scenario and policy the iteration time of each engine with the ratios
emulated/fluid and packet/fluid, each engine's speed-up over fair, and per coflow type
the summed-CCT ratios emulated/fluid and packet/fluid.  Run folders go under ``--out``
(kept, so the figures can be read again).  Repetitions are interleaved per scenario
(policy by policy, then again).  Usage (root for the emulator)::

    .venv/bin/python benchmarks/bench_threeway.py [--scenarios mechanism,default,small-moe]
        [--policies fair,hermod,sebf] [--engines emulated,packet,fluid] [--repeat 1]
        [--out /tmp/threeway]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coflowbed import api  # noqa: E402
from coflowbed.results.read import RunResult  # noqa: E402

ENGINES = ("emulated", "packet", "fluid")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", default="mechanism,default,small-moe")
    p.add_argument("--policies", default="fair,hermod,sebf")
    p.add_argument("--engines", default=",".join(ENGINES), help="of emulated,packet,fluid")
    p.add_argument("--repeat", type=int, default=1, help="runs per engine and policy")
    p.add_argument("--out", type=Path, default=Path("/tmp/threeway"))
    args = p.parse_args(argv)
    bad = set(args.engines.split(",")) - set(ENGINES)
    if bad or args.repeat < 1:
        p.error(f"--engines: unknown {sorted(bad)}" if bad else "--repeat: must be >= 1")
    return args


def run_one(engine: str, scenario: str, policy: str, out: Path) -> RunResult:
    """One run of ``scenario`` under ``policy`` in ``engine`` into ``out``."""
    if engine == "emulated":
        return api.run(scenario, out=out, check=False, policy=policy)
    return api.simulate(scenario, out=out, engine=engine, policy=policy)


def type_sums(run: RunResult) -> dict[str, float]:
    """Summed CCT per coflow type of the coflows that finished."""
    sums: dict[str, float] = defaultdict(float)
    for cf in run.coflows:
        if cf.cct_s is not None:
            sums[cf.ctype] += cf.cct_s
    return dict(sums)


def mean_of(runs: list[RunResult]) -> float | None:
    """Mean iteration time over ``runs`` (None if any has none)."""
    times = [r.iteration_time_s for r in runs]
    return None if not times or None in times else statistics.mean(t for t in times if t)


def ratio(a: float | None, b: float | None) -> str:
    """``a / b`` to 3 decimals, ``-`` if either is missing."""
    return "-" if a is None or not b else f"{a / b:.3f}"


def report(scenario: str, runs: dict[tuple[str, str], list[RunResult]], args) -> None:
    """The scenario's table: iteration times, ratios, speed-ups, per-type CCT ratios."""
    engines, policies = args.engines.split(","), args.policies.split(",")
    print(f"\n{scenario} (iteration s; ratios against fluid; speed-up over fair)")
    head = "".join(f"{e:>10}" for e in engines)
    print(f"  {'policy':<10}{head}  emu/fl  pkt/fl  " + "  ".join(f"x{e[:3]}" for e in engines))
    it = {k: mean_of(v) for k, v in runs.items()}
    for p in policies:
        cells = "".join(f"{it.get((e, p)) or float('nan'):>10.3f}" for e in engines)
        fl = it.get(("fluid", p))
        ups = "  ".join(ratio(it.get((e, "fair")), it.get((e, p))).rjust(4) for e in engines)
        print(
            f"  {p:<10}{cells}  {ratio(it.get(('emulated', p)), fl):>6}  "
            f"{ratio(it.get(('packet', p)), fl):>6}  {ups}"
        )
    for p in policies:
        fluid = type_sums(runs[("fluid", p)][0]) if ("fluid", p) in runs else {}
        for e in ("emulated", "packet"):
            if (e, p) not in runs or not fluid:
                continue
            sums = type_sums(runs[(e, p)][0])
            parts = ", ".join(f"{t} {ratio(sums.get(t), fluid[t])}" for t in sorted(fluid))
            print(f"  {p} {e}/fluid summed CCT by type: {parts}")


def main(argv: list[str] | None = None) -> int:
    """Run every scenario, engine and policy (repetitions interleaved); print the tables."""
    args = parse_args(argv)
    for scenario in args.scenarios.split(","):
        runs: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
        for k in range(1, args.repeat + 1):
            for engine in args.engines.split(","):
                for policy in args.policies.split(","):
                    out = args.out / scenario / f"{engine}-{policy}-{k}"
                    r = run_one(engine, scenario, policy, out)
                    runs[(engine, policy)].append(r)
                    print(f"  {scenario} {engine} {policy} #{k}: {r!r}", flush=True)
        report(scenario, runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
