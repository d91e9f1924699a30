"""A comparison folder's page (``compare.json`` and its run folders): the answer first,
what the intervals cover, the comparison's plots, compact tables to 3 significant digits
(per policy, average CCT per coflow type, emulated / simulated), the runs with links to
their own pages, the environment every run shares (and what differs), and links to the
full data files (compare.csv, runs.csv, compare.json, compare.md)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from coflowbed.analysis.comparison import ComparedRun, Comparison, PolicyStats
from coflowbed.analysis.plots import comparison as plots
from coflowbed.analysis.report import environment, headline
from coflowbed.analysis.report.markup import esc, figure, files_list, link, sig3, table
from coflowbed.analysis.stats import Estimate, Speedup

DATA_FILES = ("compare.csv", "runs.csv", "compare.json", "compare.md")
CAPTIONS = {
    plots.ITERATION_PNG: "Iteration time per policy: bar = mean, error bar = the interval, "
    "dots = runs; hatched = the fluid model's (simulated) time of the same workload.",
    plots.CCT_TYPES_PNG: "Average CCT per coflow type and policy, error bar = the interval.",
    plots.CCT_CDF_PNG: "CCT distribution per coflow type, every complete run pooled.",
    plots.FIDELITY_PNG: "Emulated / simulated per policy (1 = the model's figure).",
    plots.JOBS_PNG: "Iteration time per job and policy.",
}


def load(folder: Path) -> Comparison:
    """The Comparison of ``folder/compare.json``; a run's folder is the one under
    ``folder`` (``<policy>/r<k>``) when it is there (a copied or moved comparison)."""
    d = json.loads((folder / "compare.json").read_text())
    stats = tuple(_policy_stats(s) for s in d["stats"])
    runs = tuple(_run(folder, r) for r in d["runs"])
    head = ("scenario", "source", "repeat", "confidence", "baseline", "speedup_method")
    return Comparison(
        **{k: d[k] for k in head},
        policies=tuple(d["policies"]),
        seeds=tuple(d["seeds"]),
        interrupted=d["interrupted"],
        not_done=tuple(d["not_done"]),
        stats=stats,
        runs=runs,
        metric_names=tuple(d["metrics"]),
    )


def _policy_stats(s: dict) -> PolicyStats:
    """A PolicyStats from its compare.json object."""
    return PolicyStats(
        s["policy"],
        s["runs"],
        tuple(s["excluded"]),
        s["coflows"],
        {k: Estimate(**e) for k, e in s["metrics"].items()},
        {k: Speedup(**v) for k, v in s["speedups"].items()},
    )


def _run(folder: Path, r: dict) -> ComparedRun:
    """A ComparedRun from its compare.json object (its folder found under ``folder``)."""
    ident = ("policy", "repetition", "seed", "run_dir", "partial", "coflows", "error")
    here = folder / r["policy"] / f"r{r['repetition']}"
    run_dir = str(here) if here.is_dir() else r["run_dir"]
    metrics = {k: v for k, v in r.items() if k not in ident}
    return ComparedRun(**{**{k: r[k] for k in ident}, "run_dir": run_dir}, metrics=metrics)


def summaries(c: Comparison) -> dict[str, dict]:
    """summary.json of every run whose folder has one, by run name."""
    out = {}
    for r in c.runs:
        path = Path(r.run_dir) / "summary.json"
        if path.is_file():
            out[r.name] = json.loads(path.read_text())
    return out


def simulated(c: Comparison) -> bool:
    """Whether the runs were simulated (every summary.json says so)."""
    modes = {s.get("mode") for s in summaries(c).values()}
    return modes == {"simulated"}


def ecmp_seeds(c: Comparison) -> set[int]:
    """The ECMP seeds (``fabric.ecmp_seed``, default 0) of the runs' scenario.yaml."""
    out = set()
    for r in c.runs:
        path = Path(r.run_dir) / "scenario.yaml"
        if path.is_file():
            raw = yaml.safe_load(path.read_text()) or {}
            out.add(int((raw.get("fabric") or {}).get("ecmp_seed", 0)))
    return out


def estimate_cell(e: Estimate | None) -> str:
    """``mean [low, high]`` (``mean`` alone without an interval)."""
    if e is None or e.mean is None:
        return sig3(None)
    if e.ci_low is None or e.ci_high is None:
        return sig3(e.mean)
    return f"{sig3(e.mean)} [{sig3(e.ci_low)}, {sig3(e.ci_high)}]"


def speedup_cell(s: Speedup | None) -> str:
    """``value [low, high]`` (``value`` alone without an interval)."""
    if s is None:
        return sig3(None)
    return estimate_cell(Estimate(s.value, None, s.n, s.ci_low, s.ci_high))


def policy_table(c: Comparison) -> str:
    """A row per policy: complete runs, iteration time, its speed-up, average and P95 CCT,
    the average CCT's speed-up, the model's iteration time and emulated / simulated."""
    vs = f"× vs {c.baseline}"
    header = (
        "policy",
        "runs",
        "iteration s",
        vs,
        "avg CCT s",
        vs,
        "P95 CCT s",
        "model iteration s",
        "emulated / simulated",
    )
    rows = [
        (
            ps.policy,
            ps.n,
            estimate_cell(ps.metrics.get("iteration_time_s")),
            _versus(c, ps, "speedup_iteration_time"),
            estimate_cell(ps.metrics.get("avg_cct_s")),
            _versus(c, ps, "speedup_avg_cct"),
            estimate_cell(ps.metrics.get("p95_cct_s")),
            estimate_cell(ps.metrics.get("sim_iteration_time_s")),
            estimate_cell(ps.metrics.get("fidelity_iter")),
        )
        for ps in c.stats
    ]
    return table(header, rows, "policies")


def _versus(c: Comparison, ps: PolicyStats, key: str) -> str:
    """A policy's speed-up cell, ``baseline`` for the baseline itself."""
    return "baseline" if ps.policy == c.baseline else speedup_cell(ps.speedups.get(key))


def type_table(c: Comparison) -> str:
    """Average CCT per coflow type (rows) and policy (columns); '' without types."""
    types = plots.metric_family(c, "avg_cct_", "_s")
    rows = [
        (t, *(estimate_cell(ps.metrics.get(f"avg_cct_{t}_s")) for ps in c.stats)) for t in types
    ]
    head = ("coflow type", *(f"{ps.policy}: avg CCT s" for ps in c.stats))
    return table(head, rows, "types") if rows else ""


def fidelity_table(c: Comparison) -> str:
    """Emulated / simulated per policy (rows) and figure (columns); '' without any."""
    ratios = plots.fidelity_ratios(c)
    if not ratios:
        return ""
    rows = [
        (ps.policy, *(estimate_cell(ps.metrics.get(m)) for m in ratios.values())) for ps in c.stats
    ]
    return table(("policy", *ratios), rows, "fidelity")


def runs_table(folder: Path, c: Comparison) -> str:
    """A row per run: its page (a link when it has one), seed, state, figures, the
    calibration and the share of the bytes TCP sent again."""
    sums = summaries(c)
    header = (
        "run",
        "seed",
        "complete",
        "coflows",
        "iteration s",
        "avg CCT s",
        "emulated / simulated",
        "calibration (share of nominal)",
        "TCP sent again (share of bytes)",
    )
    rows = []
    for r in c.runs:
        cal = (sums.get(r.name, {}).get("calibration") or {}).get("fraction")
        rows.append(
            (
                run_link(folder, r),
                r.seed,
                not r.partial,
                r.coflows,
                *(sig3(r.metrics.get(m)) for m in ("iteration_time_s", "avg_cct_s")),
                sig3(r.metrics.get("fidelity_iter")),
                sig3(cal),
                sig3(r.metrics.get("retrans_share")),
            )
        )
    return table(header, rows, "runs")


def run_link(folder: Path, r: ComparedRun) -> str:
    """The run's name, linked to its report.html when there is one (relative to the
    comparison's page when the run is under its folder)."""
    page = Path(r.run_dir) / "report.html"
    if not page.is_file():
        return r.name
    try:
        return link(page.resolve().relative_to(folder.resolve()).as_posix(), r.name)
    except ValueError:
        return link(page.resolve().as_uri(), r.name)


def plot_section(folder: Path) -> str:
    """The comparison's figures in reading order, then any other PNG of the folder."""
    known = [folder / name for name in CAPTIONS if (folder / name).is_file()]
    other = [p for p in sorted(folder.glob("*.png")) if p.name not in CAPTIONS]
    figs = [figure(p, CAPTIONS[p.name]) for p in known] + [figure(p) for p in other]
    return "<h2>Plots</h2>" + "".join(figs) if figs else ""


def environment_section(c: Comparison) -> str:
    """What the runs share (and what differs), with the seeds and ECMP seeds."""
    rows = environment.merged([(r.name, Path(r.run_dir)) for r in c.runs])
    seeds = ", ".join(map(str, c.seeds))
    rows[:0] = [
        ("scenario", c.source),
        ("seeds (per repetition)", seeds),
        ("ECMP seeds (fabric.ecmp_seed)", ", ".join(map(str, sorted(ecmp_seeds(c))))),
    ]
    return "<h2>Environment</h2>" + table(("what", "value"), rows, "env")


SIMULATED_NOTE = (
    "Simulated comparison: the runs are the fluid model, so no model value or emulated / "
    "simulated ratio stands beside them, and nothing was calibrated or sent again."
)


def sections(folder: Path) -> list[str]:
    """The comparison page's parts, in reading order."""
    c = load(folder)
    sim = simulated(c)
    what = f"{c.scenario}: {', '.join(c.policies)}, {c.repeat} repetition(s), "
    what += "simulated" if sim else "emulated"
    answer = "".join(f'<p class="answer">{esc(s)}</p>' for s in headline.answer_sentences(c))
    notes = f"<p>{esc(headline.reading_note(c))}</p>"
    notes += f'<p class="note">{esc(headline.interval_note(c, sim, ecmp_seeds(c)))}</p>'
    types, fidelity = type_table(c), fidelity_table(c)
    return [
        f"<p>{esc(what)}</p>" + answer + notes,
        plot_section(folder),
        "<h2>Per policy</h2>" + policy_table(c) + (f"<p>{SIMULATED_NOTE}</p>" if sim else ""),
        "<h2>Average CCT by coflow type</h2>" + types if types else "",
        "<h2>Emulated / simulated</h2>" + fidelity if fidelity else "",
        "<h2>Runs</h2>" + runs_table(folder, c),
        environment_section(c),
        files_list(folder, DATA_FILES),
    ]
