"""Flags that several subcommands share, and what they turn into: scenario overrides
(``--policy``, ``--inter-job``, ``--sample-period``, ``--set KEY=VALUE``), policy plugin
files (``--plugin FILE``) and ``--no-check``."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from coflowbed.core.errors import UserError
from coflowbed.experiment.overrides import FlagOverrides
from coflowbed.experiment.simulate import ENGINES, Engine
from controller.policies.plugins import import_plugin
from workload.yamlfile import parse_yaml


def add_inter_job(p: argparse.ArgumentParser) -> None:
    """``--inter-job MODE``: the scenario's ``workload.inter_job`` (several jobs)."""
    p.add_argument(
        "--inter-job",
        default=None,
        help="how several jobs share the levels: fair, priority or crux "
        "(default: the scenario's workload.inter_job)",
    )


def add_sample_period(p: argparse.ArgumentParser) -> None:
    """``--sample-period S``: the scenario's ``sample_period_s`` (0: no sampling)."""
    p.add_argument(
        "--sample-period",
        type=float,
        default=None,
        metavar="S",
        help="sample port counters and queue backlogs every S seconds during the run "
        "(samples/; 0: off; default: the scenario's sample_period_s, else "
        "coflowbed.experiment.scenario.DEFAULT_PERIOD_S)",
    )


def add_no_check(p: argparse.ArgumentParser) -> None:
    """``--no-check``: skip the fidelity simulation after each emulated run."""
    p.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="do not simulate the run afterwards for its fidelity figure "
        "(summary.json 'fidelity'; docs/simulator.md)",
    )


def add_set(p: argparse.ArgumentParser, what: str = "scenario") -> None:
    """``--set KEY=VALUE`` (repeatable): a dotted key of the scenario (or job) set first."""
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a {what} key, e.g. fabric.host_bw_mbps=200 (the value is YAML; "
        "repeat for several)",
    )


def add_plugin(p: argparse.ArgumentParser) -> None:
    """``--plugin FILE`` (repeatable): a Python file that registers policies."""
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a Python file registering policies with @controller.policies.register "
        "(relative to the working directory; repeat for several); its policies can be "
        "named by --policy / --policies",
    )


def parse_sets(items: list[str], flag: str = "--set") -> dict:
    """``KEY=VALUE`` strings -> {key: YAML-parsed value}; UserError naming the flag."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(flag, item, "expected KEY=VALUE")
        try:
            out[key] = parse_yaml(value)
        except yaml.YAMLError as exc:
            raise UserError(flag, key, f"value is not valid YAML: {exc}") from exc
    return out


def overrides_of(args: argparse.Namespace) -> FlagOverrides | None:
    """Scenario keys the flags override (``--set``, then ``--policy``, ``--inter-job``,
    ``--sample-period``), each remembering its flag for error messages."""
    out: dict = parse_sets(getattr(args, "set", None) or [])
    flags = dict.fromkeys(out, "--set")
    for flag, key, value in (
        ("--policy", "policy", getattr(args, "policy", None) or None),
        ("--inter-job", "workload.inter_job", getattr(args, "inter_job", None) or None),
        ("--sample-period", "sample_period_s", getattr(args, "sample_period", None)),
    ):
        if value is not None:
            out[key], flags[key] = value, flag
    return FlagOverrides(out, flags) if out else None


def plugin_files(args: argparse.Namespace) -> list[Path]:
    """The ``--plugin`` files, absolute, each imported now (its policies registered);
    UserError naming the flag and file when one is missing or fails to import."""
    files = []
    for given in getattr(args, "plugin", None) or []:
        file = Path(given).resolve()
        if not file.is_file():
            raise UserError("--plugin", str(given), "no such file")
        try:
            import_plugin(file)
        except Exception as exc:  # any error in user code: report it as bad input
            raise UserError(
                "--plugin", str(given), f"cannot import: {type(exc).__name__}: {exc}"
            ) from None
        files.append(file)
    return files


def check_window(limit: int | None, skip: int, size: int) -> None:
    """UserError unless ``--skip`` and ``--limit`` leave at least one of the trace's
    ``size`` coflows (``--limit`` >= 1, 0 <= ``--skip`` < size)."""
    if limit is not None and limit < 1:
        raise UserError("--limit", None, f"must be >= 1, got {limit}")
    if not 0 <= skip < size:
        raise UserError("--skip", None, f"must be 0..{size - 1} (the trace has {size}), got {skip}")


def add_engine(p: argparse.ArgumentParser) -> None:
    """``--engine fluid|packet`` and the packet engine's ``--transport``, ``--packet-scale``."""
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="fluid",
        help="fluid: the flow-level model (default); packet: ns-3 with TCP, strict-priority "
        "queues and ECMP (pip install 'coflowbed[packet]'; docs/packet.md)",
    )
    p.add_argument(
        "--transport",
        choices=("tcp", "dctcp", "cubic"),
        default="tcp",
        help="--engine packet: the hosts' TCP (default tcp: NewReno)",
    )
    p.add_argument(
        "--packet-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="--engine packet: every flow's bytes and link rate times F, 0 < F <= 1 (fewer "
        "packets, the same times; default 1)",
    )


def engine_of(args: argparse.Namespace) -> Engine:
    """The engine the flags choose; UserError naming the flag (or the missing extra)."""
    engine = Engine(args.engine, args.transport, args.packet_scale)
    return engine.check()
