"""What a user can name, as text for the terminal: the registered policies (each with
its one-line description and parameters), the shipped scenarios and the job presets.
``coflowbed policies``, ``coflowbed scenarios`` and ``coflowbed presets`` print these."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path

import yaml

from coflowbed.experiment.scenario import SHIPPED_SCENARIOS
from controller import policies
from controller.policies.base import Policy
from workload.presets import load_preset, preset_names

WIDTH = 100  # a listing's lines are cut to this many columns


def first_line(text: str | None) -> str:
    """The first sentence of a docstring (or of any text), on one line, without markup."""
    para = " ".join((text or "").strip().split("\n\n")[0].split()).replace("``", "")
    head, dot, _ = para.partition(". ")
    return head + "." if dot else para


def parameters(cls: type[Policy]) -> str:
    """``name=default`` of every parameter a policy class takes, or "-"."""
    sig = inspect.signature(cls.__init__)
    out = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind is p.VAR_KEYWORD:
            continue
        out.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return ", ".join(out) or "-"


def policy_lines() -> list[str]:
    """A line per registered policy (name, description), and under it its parameters
    (``name=default``) when it takes any."""
    names = policies.names()
    lines = _columns(
        [(n, first_line(policies.policy_class(n).__doc__)) for n in names],
        ("policy", "what it does"),
    )
    out = lines[:1]
    for name, line in zip(names, lines[1:]):
        params = parameters(policies.policy_class(name))
        out += [line] + ([f"    parameters: {params}"] if params != "-" else [])
    return out


def scenario_lines(folder: Path = SHIPPED_SCENARIOS) -> list[str]:
    """One line per shipped scenario: name, policy, what its first comment says."""
    rows = []
    for path in sorted(folder.glob("*.yaml"), key=lambda p: p.stem):
        raw = yaml.safe_load(path.read_text()) or {}
        policy = raw.get("policy", "-") if isinstance(raw, dict) else "-"
        if isinstance(policy, dict):
            policy = policy.get("name", "-")
        rows.append((path.stem, str(policy), _comment(path)))
    return _columns(rows, ("scenario", "policy", "what it is"))


def preset_lines() -> list[str]:
    """One line per job preset: name, parallelism, its description."""
    rows = []
    for name in preset_names():
        job = load_preset(name)
        par = job.parallelism
        shape = f"tp{par.tp} pp{par.pp} dp{par.dp} ep{par.ep}"
        rows.append((name, shape, first_line(job.description)))
    return _columns(rows, ("preset", "parallelism", "what it is"))


def _comment(path: Path) -> str:
    """The scenario file's leading comment, as one line (or "")."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return first_line("\n".join(lines))


def _columns(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    """Rows as left-aligned columns under ``header``; the last column unpadded."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths)), r[-1]]).rstrip()
        for r in [header, *rows]
    ]
    return [ln if len(ln) <= WIDTH else ln[: WIDTH - 1] + "…" for ln in lines]
