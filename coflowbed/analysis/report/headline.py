"""The first lines of a comparison's report: the answer, one sentence per compared policy
naming what is better and what is worse than the baseline (iteration time and average
CCT, with the speed-ups and intervals of compare.json to 3 significant digits), how to
read its figures, and what the intervals cover, worked out from the runs' seeds, ECMP
seeds and mode."""

from __future__ import annotations

from collections.abc import Collection

from coflowbed.analysis.comparison import Comparison, PolicyStats
from coflowbed.analysis.report.markup import sig3
from coflowbed.analysis.stats import Speedup

ASPECTS = (("iteration time", "speedup_iteration_time"), ("average CCT", "speedup_avg_cct"))


def verdict(s: Speedup, baseline: str) -> str:
    """``better than fair`` (speed-up above 1), ``worse than fair`` (below), ``no
    different from fair`` (1.00 to 3 digits); ``not clearly`` better or worse when the
    interval includes 1."""
    if s.value is None or sig3(s.value) == "1.00":
        return f"no different from {baseline}"
    word = "better" if s.value > 1 else "worse"
    if s.ci_low is not None and s.ci_high is not None and s.ci_low <= 1 <= s.ci_high:
        word = f"not clearly {word}"
    return f"{word} than {baseline}"


def ratio_text(s: Speedup) -> str:
    """``1.21× faster [1.16, 1.27]`` or ``0.930× as fast [0.889, 0.970]`` (no brackets
    without an interval)."""
    how = "faster" if s.value is not None and s.value > 1 else "as fast"
    ci = ""
    if s.ci_low is not None and s.ci_high is not None:
        ci = f" [{sig3(s.ci_low)}, {sig3(s.ci_high)}]"
    return f"{sig3(s.value)}× {how}{ci}"


def policy_sentence(ps: PolicyStats, baseline: str) -> str:
    """One policy against the baseline on iteration time and average CCT, in a sentence:
    ``hermod is better than fair on iteration time (1.21× faster [1.16, 1.27]) and worse
    than fair on average CCT (0.930× as fast [0.889, 0.970]).``"""
    parts = []
    for aspect, key in ASPECTS:
        s = ps.speedups.get(key)
        if s is None or s.value is None:
            parts.append(f"without a figure on {aspect} (no complete pair of runs)")
        else:
            parts.append(f"{verdict(s, baseline)} on {aspect} ({ratio_text(s)})")
    return f"{ps.policy} is {' and '.join(parts)}."


def answer_sentences(c: Comparison) -> list[str]:
    """The answer: a sentence per policy other than the baseline (one saying why there is
    none when the baseline was not run, or nothing else was)."""
    if c.baseline not in c.policies:
        return [f"{c.baseline} was not run, so there is no speed-up: see each policy's figures."]
    others = [policy_sentence(ps, c.baseline) for ps in c.stats if ps.policy != c.baseline]
    return others or [f"Only {c.baseline} was run: nothing to compare it with."]


def reading_note(c: Comparison) -> str:
    """How to read the answer's figures (and PARTIAL when runs are missing)."""
    n = min((ps.n for ps in c.stats), default=0)
    ci = f"[ ] = {c.confidence:.0%} interval over {n} paired runs" if n > 1 else "one run each"
    text = f"× = {c.baseline}'s time ÷ the policy's (above 1: the policy takes less time); {ci}."
    if c.partial:
        left = ", ".join(c.excluded + c.not_done) or "interrupted"
        text += f" PARTIAL comparison, left out: {left}."
    return text


def interval_note(c: Comparison, simulated: bool, ecmp_seeds: Collection[int]) -> str:
    """What the intervals cover: emulation noise only when every repetition shares one
    seed (the workload's draw) and one ECMP seed (the flows' spines); with several seeds
    the differences between them too; the simulator adds no noise.  From the complete
    runs' seeds and the run folders' ECMP seeds."""
    seeds = sorted({r.seed for r in c.runs if not r.partial}) or sorted(set(c.seeds))
    if min((ps.n for ps in c.stats), default=0) < 2:
        return "Each policy ran once: no interval. Use --repeat 3 --seeds 1,2,3 for one."
    ecmp = f"ECMP seed {', '.join(map(str, sorted(ecmp_seeds)))}" if ecmp_seeds else "one ECMP seed"
    example = ",".join(str(k) for k in range(1, c.repeat + 1))
    if len(seeds) == 1:
        same = f"every repetition used seed {seeds[0]} (one workload draw) and {ecmp}"
        if simulated:
            return (
                f"No interval width: the simulator is deterministic and {same}, so the "
                f"repetitions are identical. Use --seeds {example} to vary the draw."
            )
        return (
            f"The intervals cover emulation noise only: {same} (one placement of the flows "
            f"on the spines). Use --seeds {example} to vary the draw."
        )
    varied = f"seeds {', '.join(map(str, seeds))} (a workload draw each; {ecmp})"
    if simulated:
        return f"The intervals cover the differences between {varied}; the simulator adds no noise."
    return f"The intervals cover emulation noise and the differences between {varied}."
