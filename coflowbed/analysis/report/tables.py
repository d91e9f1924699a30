"""The files of a comparison folder: compare.csv (one row per policy: every metric's
mean, std and CI, the speed-ups and their CI), compare.json (``Comparison.to_dict``),
compare.md (the readable table and notes) and runs.csv (one row per run)."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coflowbed.analysis.comparison import FIDELITY_METRICS, Comparison, PolicyStats
from coflowbed.analysis.report.headline import answer_sentences
from coflowbed.analysis.stats import Estimate, Speedup

CI_SUFFIXES = ("", "_std", "_ci_low", "_ci_high")


def policy_row(c: Comparison, ps: PolicyStats) -> dict:
    """The compare.csv row of one policy (flat; None where there is no figure)."""
    not_done = [n for n in c.not_done if n.startswith(f"{ps.policy}/")]
    row: dict = {
        "policy": ps.policy,
        "runs": ps.runs,
        "n": ps.n,
        "partial_runs": len(ps.excluded),
        "partial": bool(ps.excluded or not_done),
        "coflows": ps.coflows,
    }
    for m in c.metric_names:
        if m not in FIDELITY_METRICS:
            row.update(_estimate_cols(m, ps.metrics[m]))
    for key, sp in ps.speedups.items():
        row.update({key: sp.value, f"{key}_ci_low": sp.ci_low, f"{key}_ci_high": sp.ci_high})
    for m in FIDELITY_METRICS:
        row.update(_estimate_cols(m, ps.metrics[m]))
    return row


def _estimate_cols(name: str, e: Estimate) -> dict:
    """``name``, ``name_std``, ``name_ci_low``, ``name_ci_high``."""
    vals = (e.mean, e.std, e.ci_low, e.ci_high)
    return {name + suffix: v for suffix, v in zip(CI_SUFFIXES, vals)}


def write_csv(path: Path, rows: Sequence[dict]) -> None:
    """Rows as CSV (columns in first-seen order; None as empty)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows({k: ("" if r.get(k) is None else r.get(k)) for k in cols} for r in rows)


def write_all(c: Comparison, out_dir: Path) -> list[dict]:
    """compare.csv, compare.json, compare.md and runs.csv; returns compare.csv's rows."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [policy_row(c, ps) for ps in c.stats]
    write_csv(out_dir / "compare.csv", rows)
    write_csv(out_dir / "runs.csv", [r.to_dict() for r in c.runs])
    (out_dir / "compare.json").write_text(json.dumps(c.to_dict(), indent=2) + "\n")
    (out_dir / "compare.md").write_text(markdown(c))
    return rows


def fmt(v) -> str:
    """A cell: floats with 3 decimals (3 significant digits below 0.1), None empty."""
    if v is None:
        return ""
    if not isinstance(v, float):
        return str(v)
    return f"{v:.3f}" if v == 0 or abs(v) >= 0.1 else f"{v:.3g}"


def markdown_table(rows: Sequence[Mapping[str, Any]], cols: Sequence[str]) -> str:
    """A Markdown table of ``rows`` (cells by ``fmt``)."""
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def estimate_cell(e: Estimate) -> str:
    """``mean`` or ``mean ± std [low, high]``."""
    if e.ci_low is None:
        return fmt(e.mean)
    return f"{fmt(e.mean)} ± {fmt(e.std)} [{fmt(e.ci_low)}, {fmt(e.ci_high)}]"


def speedup_cell(s: Speedup) -> str:
    """``value`` or ``value [low, high]``."""
    if s.ci_low is None:
        return fmt(s.value)
    return f"{fmt(s.value)} [{fmt(s.ci_low)}, {fmt(s.ci_high)}]"


def table_columns(c: Comparison) -> list[str]:
    """The Markdown table's columns: today's compare columns plus n."""
    plain = [m for m in c.metric_names if m not in FIDELITY_METRICS]
    speed = list(c.stats[0].speedups) if c.stats else []
    return ["policy", "n", "partial", "coflows", *plain, *speed, *FIDELITY_METRICS]


def markdown_row(c: Comparison, ps: PolicyStats, cols: Sequence[str]) -> str:
    """One policy's line of the Markdown table."""
    fixed = {
        "policy": ps.policy,
        "n": str(ps.n),
        "partial": str(policy_row(c, ps)["partial"]),
        "coflows": fmt(ps.coflows),
    }
    cells = [
        fixed[k]
        if k in fixed
        else speedup_cell(ps.speedups[k])
        if k in ps.speedups
        else estimate_cell(ps.metrics[k])
        for k in cols
    ]
    return "| " + " | ".join(cells) + " |"


def _g3(v: float | None) -> str:
    """A number to 3 significant digits (``-`` for none)."""
    return "-" if v is None else f"{v:.3g}"


def short_table(c: Comparison) -> str:
    """The comparison for a terminal (under 100 columns): per policy the iteration time
    with its 95 % interval's half-width, the speed-up over the baseline with its
    interval, the fluid model's speed-up, and emulated / simulated.  The full table is
    compare.md's."""
    head = ("policy", "iteration s", "speed-up [95% CI]", "model", "emu/sim")
    rows = [head]
    for ps in c.stats:
        it, fid = ps.metrics.get("iteration_time_s"), ps.metrics.get("fidelity_iter")
        half = None if it is None or it.ci_high is None or it.mean is None else it.ci_high - it.mean
        cell = _g3(it.mean if it else None) + ("" if half is None else f" ± {half:.2g}")
        up = ps.speedups.get("speedup_iteration_time")
        speed = "-" if up is None or up.value is None else f"x{up.value:.3g}"
        if ps.policy == c.baseline:
            speed = "(baseline)"
        elif up is not None and up.ci_low is not None and up.ci_high is not None:
            speed += f" [{up.ci_low:.3g}, {up.ci_high:.3g}]"
        model = _model_speedup(c, ps.metrics)
        emu = _g3(fid.mean) if fid is not None else "-"
        rows.append((ps.policy, cell, speed, "-" if model is None else f"x{model:.3g}", emu))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows)


ANSWER_PREFIX = "**Answer.** "  # compare.md's one-line answer (the report's headline)


def markdown(c: Comparison) -> str:
    """compare.md: a title, the one-line answer, how to read it, the table, and what was
    left out."""
    cols = table_columns(c)
    seeds = ",".join(str(s) for s in c.seeds)
    lines = [
        f"# {c.scenario}: {', '.join(c.policies)} ({c.repeat} repetition(s), seeds {seeds})",
        "",
        ANSWER_PREFIX + " ".join(answer_sentences(c)),
        "",
        "In numbers: " + answer(c),
        "",
        f"Mean over the complete runs; with n >= 2: ± sample std [{c.confidence:.0%} CI, t "
        f"distribution].  Speed-up = {c.baseline} / policy: {c.speedup_method}.  "
        "fidelity_* = emulated / simulated (empty for simulated runs or --no-check).",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
        *(markdown_row(c, ps, cols) for ps in c.stats),
        "",
        *notes(c),
    ]
    return "\n".join(lines) + "\n"


def notes(c: Comparison) -> list[str]:
    """Lines on partial runs, runs not done and the per-run file."""
    out = []
    if c.excluded:
        out.append(f"Partial runs, left out of the statistics: {', '.join(c.excluded)}.")
    if c.interrupted or c.not_done:
        why = "interrupted" if c.interrupted else "stopped"
        left = ", ".join(c.not_done) or "none"
        out.append(f"PARTIAL comparison ({why}): runs not done: {left}.")
    out.append("Every run: runs.csv (policy, repetition, seed, run_dir, partial, metrics).")
    return out


def answer(c: Comparison) -> str:
    """The comparison in one line: each policy's mean iteration time, its speed-up over
    the baseline with the interval and the model's speed-up beside it, and the
    emulated/simulated ratio (when checked)."""
    parts = []
    for ps in c.stats:
        it, fid = ps.metrics.get("iteration_time_s"), ps.metrics.get("fidelity_iter")
        text = f"{ps.policy} {fmt(it.mean if it else None)} s"
        up = ps.speedups.get("speedup_iteration_time")
        if ps.policy != c.baseline and up is not None and up.value is not None:
            text += f" (x{up.value:.2f}"
            if up.ci_low is not None and up.ci_high is not None:
                text += f" [{up.ci_low:.2f}, {up.ci_high:.2f}]"
            model = _model_speedup(c, ps.metrics)
            text += "" if model is None else f", model x{model:.2f}"
            text += ")"
        if fid is not None and fid.mean is not None:
            text += f", emulated/simulated {fid.mean:.2f}"
        parts.append(text)
    n = min((ps.n for ps in c.stats), default=0)
    ci = f"{c.confidence:.0%} CI over {n} paired runs" if n > 1 else "one run each"
    partial = "; PARTIAL" if c.partial else ""
    return f"iteration: {'; '.join(parts)} (speed-up over {c.baseline}, {ci}){partial}"


def _model_speedup(c: Comparison, metrics: Mapping[str, Estimate]) -> float | None:
    """The fluid model's speed-up of a policy over the baseline: the baseline's mean
    simulated iteration time over the policy's (None unless both runs were checked)."""
    base = next((ps for ps in c.stats if ps.policy == c.baseline), None)
    mine = metrics.get("sim_iteration_time_s")
    theirs = None if base is None else base.metrics.get("sim_iteration_time_s")
    if mine is None or theirs is None or not mine.mean or theirs.mean is None:
        return None
    return theirs.mean / mine.mean
