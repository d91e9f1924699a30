"""LLM-training job specification (YAML): model, parallelism, schedule, placement,
compute model, EP skew, collectives and the byte scale factor.  Strict: unknown keys
and bad values are rejected with ``<file>: <key>: <reason>`` (see docs/workloads.md).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from workload.nccl import ALGORITHMS, DEFAULT_LINK_GBPS
from workload.schema import (
    Section,
    SpecError,
    blamed_on,
    check_float,
    check_int,
    typos_first,
)
from workload.yamlfile import parse_yaml, read_text

SCHEDULES = ("1f1b", "gpipe", "interleaved-1f1b")
DP_MODES = ("zero2", "allreduce")
RING_MODES = ("auto", "steps", "collapse")
PRESET_DIR = Path(__file__).resolve().parent / "presets"


@dataclass(frozen=True, slots=True)
class MoeSpec:
    """Mixture-of-experts part of the model."""

    experts: int
    top_k: int
    expert_ffn_hidden: int
    layers: frozenset[int]  # global layer ids that are MoE layers


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Transformer dimensions (b = micro_batch, s = seq_len, h = hidden)."""

    layers: int
    hidden: int
    seq_len: int
    micro_batch: int
    ffn_hidden: int
    gated_mlp: bool = False  # SwiGLU-style MLP with three matrices
    vocab: int | None = None
    moe: MoeSpec | None = None

    def is_moe(self, lid: int) -> bool:
        """Whether global layer ``lid`` is a MoE layer."""
        return self.moe_of(lid) is not None

    def moe_of(self, lid: int) -> MoeSpec | None:
        """The MoE spec if global layer ``lid`` is a MoE layer, else None."""
        return self.moe if self.moe is not None and lid in self.moe.layers else None


@dataclass(frozen=True, slots=True)
class ParallelSpec:
    """Parallel degrees; EP is carved out of DP (ep divides dp)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    sequence_parallel: bool = False
    virtual_stages: int = 1  # model chunks per device (interleaved 1F1B)


@dataclass(frozen=True, slots=True)
class PlacementSpec:
    """Ranks on hosts: ``gpus_per_host`` GPUs per host, TP inside a host; optional
    explicit host list per pipeline stage (overrides the default packing)."""

    gpus_per_host: int = 1
    stage_hosts: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class ComputeSpec:
    """Per-layer forward time from FLOPs (``gpu_tflops`` x ``mfu``) or given explicitly
    (``fwd_layer_s``, one value per layer); backward = ``bwd_factor`` x forward."""

    gpu_tflops: float | None = None
    mfu: float = 0.4
    fwd_layer_s: tuple[float, ...] | None = None
    bwd_factor: float = 2.0


@dataclass(frozen=True, slots=True)
class CollectiveSpec:
    """How collectives become coflows: ring steps or one collapsed coflow per ring
    (``auto``: steps while the ring has at most ``ring_steps_max`` ranks), and whether
    EP all-to-alls are decomposed into matchings (Hermod's Hungarian sub-phases);
    ``algorithm`` of DP all-reduces (ring, NCCL's double binary tree, or NCCL's
    ``auto`` pick for links of ``link_gbps``, see workload.nccl)."""

    ring: str = "auto"
    ring_steps_max: int = 16
    ep_matching: bool = False
    algorithm: str = "ring"
    link_gbps: float = DEFAULT_LINK_GBPS

    def use_steps(self, ranks: int) -> bool:
        """Whether a ring over ``ranks`` ranks is expanded step by step."""
        return self.ring == "steps" or (self.ring == "auto" and ranks <= self.ring_steps_max)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A whole training job; ``source`` names the file it came from (for errors)."""

    name: str
    model: ModelSpec
    parallelism: ParallelSpec
    microbatches: int
    iterations: int = 1
    schedule: str = "1f1b"
    dp_mode: str = "zero2"
    # True: iteration i+1 starts only when every DP coflow of iteration i is done (the
    # barrier clip-by-norm puts there); False: a layer's first forward waits only for
    # its own all-gather, so DP sync of i overlaps the forward of i+1 (clip-by-value).
    iteration_barrier: bool = False
    placement: PlacementSpec = PlacementSpec()
    compute: ComputeSpec = ComputeSpec(gpu_tflops=312.0)
    ep_skew: float = 0.0
    seed: int = 0
    byte_scale: float = 1.0
    collectives: CollectiveSpec = CollectiveSpec()
    description: str = ""
    source: str = "<job>"

    @property
    def world_gpus(self) -> int:
        """GPUs (ranks) of the job: tp x pp x dp."""
        p = self.parallelism
        return p.tp * p.pp * p.dp

    @property
    def ranks_per_host(self) -> int:
        """DP ranks (each a TP group of tp GPUs) sharing one host."""
        return self.placement.gpus_per_host // self.parallelism.tp

    @property
    def hosts_per_stage(self) -> int:
        """Hosts that run one pipeline stage."""
        return self.parallelism.dp // self.ranks_per_host

    @property
    def hosts_needed(self) -> int:
        """Hosts the job occupies."""
        return self.parallelism.pp * self.hosts_per_stage

    @property
    def total_vstages(self) -> int:
        """Pipeline stages counting model chunks: pp x virtual_stages."""
        return self.parallelism.pp * self.parallelism.virtual_stages

    def chunk_layers(self, vstage: int) -> range:
        """Global layer ids of virtual stage ``vstage`` (runs on stage vstage % pp)."""
        per = self.model.layers // self.total_vstages
        return range(vstage * per, (vstage + 1) * per)

    def stage_layers(self, stage: int) -> list[int]:
        """Global layer ids held by pipeline stage (device) ``stage``."""
        p, v = self.parallelism.pp, self.parallelism.virtual_stages
        return [lid for q in range(v) for lid in self.chunk_layers(q * p + stage)]


def load_job(
    path: str | Path,
    overrides: Mapping[str, Any] | None = None,
    written_at: tuple[str, str] = ("", ""),
) -> JobSpec:
    """Read and validate a job YAML; ``overrides`` maps dotted keys to values
    (e.g. ``{"parallelism.dp": 64}``) applied before validation.  An error about an
    overridden key names where the override was written, ``written_at`` (source, key
    prefix: ``("s.yaml", "workload.overrides")``, ``("--set", "")``), when given."""
    path = Path(path)
    data = _read_job_yaml(path)
    blame = blamed_on(str(path), overrides or {}, *written_at) if written_at[0] else nullcontext()
    with blame:
        return parse_job(apply_overrides(data, overrides or {}, str(path)), str(path))


def _read_job_yaml(path: Path) -> Any:
    """The parsed YAML of job file ``path``; SpecError naming it on any problem."""
    try:
        return parse_yaml(read_text(path))
    except OSError as exc:
        raise SpecError(str(path), None, f"cannot read: {exc.strerror}") from exc
    except ValueError as exc:  # not UTF-8 text
        raise SpecError(str(path), None, str(exc)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        raise SpecError(
            str(path), None, f"invalid YAML at {where}: {getattr(exc, 'problem', exc)}"
        ) from exc


def preset_path(name: str) -> Path | None:
    """Path of the shipped preset ``name`` (workload/presets/<name>.yaml), else None."""
    path = PRESET_DIR / f"{name}.yaml"
    return path if name and "/" not in name and path.is_file() else None


def apply_overrides(data: Any, overrides: Mapping[str, Any], source: str) -> Any:
    """A copy of ``data`` with each dotted key set to its value; a mapping value merges
    into an existing mapping, null removes the key (its default applies again)."""
    data = copy.deepcopy(data)
    for dotted, value in overrides.items():
        node = data
        parts = str(dotted).split(".")
        for part in parts[:-1]:
            if not isinstance(node, dict):
                raise SpecError(source, dotted, "override path crosses a non-mapping")
            node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise SpecError(source, dotted, "override path crosses a non-mapping")
        _merge(node, parts[-1], copy.deepcopy(value))
    return data


def _merge(node: dict, key: str, value: Any) -> None:
    """Set ``node[key]``, merging mappings key by key."""
    if isinstance(value, dict) and isinstance(node.get(key), dict):
        for k, v in value.items():
            _merge(node[key], k, v)
    else:
        node[key] = value


def parse_job(data: Any, source: str = "<job>") -> JobSpec:
    """Validate a job mapping (as read from YAML) into a JobSpec."""
    with typos_first():
        return _parse_job(data, source)


def _parse_job(data: Any, source: str) -> JobSpec:
    """``parse_job`` without the typo check."""
    top = Section(data, source)
    model = _model(top.section("model"))
    par = _parallel(top.section("parallelism"))
    place = _placement(top.section("placement", required=False))
    comp = _compute(top.section("compute", required=False), model)
    skew = top.section("ep_skew", required=False)
    coll = _collectives(top.section("collectives", required=False))
    job = JobSpec(
        name=top.str("name"),
        model=model,
        parallelism=par,
        microbatches=top.int("microbatches", lo=1),
        iterations=top.int("iterations", 1, lo=1),
        schedule=top.str("schedule", "1f1b", SCHEDULES),
        dp_mode=top.str("dp_mode", "zero2", DP_MODES),
        iteration_barrier=top.bool("iteration_barrier", False),
        placement=place,
        compute=comp,
        ep_skew=skew.float("skew", 0.0, lo=0.0) if skew else 0.0,
        seed=skew.int("seed", 0) if skew else 0,
        byte_scale=top.float("byte_scale", lo=0.0, hi=1.0, lo_open=True),
        collectives=coll,
        description=top.str("description", None) or "",
        source=source,
    )
    if skew:
        skew.done()
    top.done()
    check_consistency(job)
    return job


def _model(s: Section) -> ModelSpec:
    """The ``model`` section."""
    layers, hidden = s.int("layers", lo=1), s.int("hidden", lo=1)
    ffn = s.int("ffn_hidden", 4 * hidden, lo=1)
    moe_s = s.section("moe", required=False)
    m = ModelSpec(
        layers=layers,
        hidden=hidden,
        seq_len=s.int("seq_len", lo=1),
        micro_batch=s.int("micro_batch", lo=1),
        ffn_hidden=ffn,
        gated_mlp=s.bool("gated_mlp", False),
        vocab=s.int("vocab", None, lo=1),
        moe=_moe(moe_s, layers, ffn) if moe_s else None,
    )
    s.done()
    return m


def _moe(s: Section, layers: int, ffn: int) -> MoeSpec:
    """The ``model.moe`` section; ``layers`` is all, odd, even or a list of layer ids."""
    experts = s.int("experts", lo=1)
    top_k = s.int("top_k", lo=1, hi=experts)
    which = s.raw("layers", "all")
    if which in ("all", "odd", "even"):
        ids = {"all": range(layers), "odd": range(1, layers, 2), "even": range(0, layers, 2)}
        chosen = frozenset(ids[which])
    elif isinstance(which, list) and which:
        chosen = frozenset(
            check_int(v, functools.partial(s.error, f"layers[{i}]"), 0, layers - 1)
            for i, v in enumerate(which)
        )
    else:
        raise s.error("layers", f"must be all, odd, even or a list of layer ids, got {which!r}")
    spec = MoeSpec(experts, top_k, s.int("expert_ffn_hidden", ffn, lo=1), chosen)
    s.done()
    return spec


def _parallel(s: Section) -> ParallelSpec:
    """The ``parallelism`` section."""
    p = ParallelSpec(
        tp=s.int("tp", 1, lo=1),
        pp=s.int("pp", 1, lo=1),
        dp=s.int("dp", 1, lo=1),
        ep=s.int("ep", 1, lo=1),
        sequence_parallel=s.bool("sequence_parallel", False),
        virtual_stages=s.int("virtual_stages", 1, lo=1),
    )
    s.done()
    return p


def _placement(s: Section | None) -> PlacementSpec:
    """The optional ``placement`` section."""
    if s is None:
        return PlacementSpec()
    gph = s.int("gpus_per_host", 1, lo=1)
    raw = s.list("stage_hosts", None)
    stage_hosts = None
    if raw is not None:
        rows = []
        for i, row in enumerate(raw):
            if (
                not isinstance(row, list)
                or not row
                or not all(isinstance(h, str) and h for h in row)
            ):
                raise s.error(f"stage_hosts[{i}]", "must be a non-empty list of host names")
            rows.append(tuple(row))
        stage_hosts = tuple(rows)
    s.done()
    return PlacementSpec(gph, stage_hosts)


def _compute(s: Section | None, model: ModelSpec) -> ComputeSpec:
    """The optional ``compute`` section: gpu_tflops (+mfu) or fwd_layer_s."""
    if s is None:
        return ComputeSpec(gpu_tflops=312.0)
    tflops = s.float("gpu_tflops", None, lo=0.0, lo_open=True)
    fwd = s.raw("fwd_layer_s", None)
    if (tflops is None) == (fwd is None):
        raise s.error("gpu_tflops", "give exactly one of gpu_tflops or fwd_layer_s")
    times = None
    if fwd is not None:
        vals = fwd if isinstance(fwd, list) else [fwd] * model.layers
        if len(vals) != model.layers:
            raise s.error(
                "fwd_layer_s", f"needs one value per layer ({model.layers}), got {len(vals)}"
            )
        times = tuple(
            check_float(v, functools.partial(s.error, f"fwd_layer_s[{i}]"), 0.0)
            for i, v in enumerate(vals)
        )
    spec = ComputeSpec(
        tflops,
        s.float("mfu", 0.4, lo=0.0, hi=1.0, lo_open=True),
        times,
        s.float("bwd_factor", 2.0, lo=0.0),
    )
    s.done()
    return spec


def _collectives(s: Section | None) -> CollectiveSpec:
    """The optional ``collectives`` section."""
    if s is None:
        return CollectiveSpec()
    spec = CollectiveSpec(
        s.str("ring", "auto", RING_MODES),
        s.int("ring_steps_max", 16, lo=1),
        s.bool("ep_matching", False),
        s.str("algorithm", "ring", ALGORITHMS),
        s.float("link_gbps", DEFAULT_LINK_GBPS, lo=0.0, lo_open=True),
    )
    s.done()
    return spec


def check_consistency(job: JobSpec) -> None:
    """Cross-field rules (divisibility, TP inside a host, EP inside DP)."""
    m, p, src = job.model, job.parallelism, job.source
    gph = job.placement.gpus_per_host

    def fail(key: str, reason: str) -> None:
        """Raise the SpecError for ``key``."""
        raise SpecError(src, key, reason)

    if m.layers % (p.pp * p.virtual_stages):
        fail(
            "model.layers",
            f"{m.layers} layers do not split evenly over pp={p.pp} x "
            f"virtual_stages={p.virtual_stages} stages",
        )
    _check_interleaving(job)
    if gph % p.tp:
        fail(
            "placement.gpus_per_host",
            f"{gph} is not a multiple of tp={p.tp} (TP stays inside a host)",
        )
    k = gph // p.tp
    if p.dp % k:
        fail(
            "placement.gpus_per_host",
            f"a host holds {k} DP ranks, which must divide dp={p.dp}"
            " (a host runs one pipeline stage)",
        )
    if p.ep > 1 and m.moe is None:
        fail("parallelism.ep", f"ep={p.ep} needs model.moe")
    if p.dp % p.ep:
        fail("parallelism.ep", f"ep={p.ep} must divide dp={p.dp}")
    if m.moe is not None and m.moe.experts % p.ep:
        fail("parallelism.ep", f"ep={p.ep} must divide model.moe.experts={m.moe.experts}")
    if p.ep % k and k % p.ep:
        fail("parallelism.ep", f"ep={p.ep} and DP ranks per host ({k}) must divide one another")
    if job.collectives.algorithm == "tree" and job.dp_mode != "allreduce":
        fail(
            "collectives.algorithm",
            "tree needs dp_mode allreduce (NCCL has no tree reduce-scatter / all-gather)",
        )
    if p.sequence_parallel and p.tp == 1:
        fail("parallelism.sequence_parallel", "needs tp > 1")
    sh = job.placement.stage_hosts
    if sh is not None:
        _check_stage_hosts(job, sh)


def _check_interleaving(job: JobSpec) -> None:
    """interleaved-1f1b <=> virtual_stages > 1; it needs pp > 1 and m a multiple of pp."""
    p, src = job.parallelism, job.source
    if job.schedule == "interleaved-1f1b":
        if p.virtual_stages < 2:
            raise SpecError(src, "parallelism.virtual_stages", "interleaved-1f1b needs >= 2")
        if p.pp < 2:
            raise SpecError(src, "parallelism.pp", "interleaved-1f1b needs pp >= 2")
        if job.microbatches % p.pp:
            raise SpecError(
                src,
                "microbatches",
                f"interleaved-1f1b needs a multiple of pp={p.pp}, got {job.microbatches}",
            )
    elif p.virtual_stages > 1:
        raise SpecError(
            src,
            "parallelism.virtual_stages",
            f"needs schedule interleaved-1f1b, got {job.schedule}",
        )


def _check_stage_hosts(job: JobSpec, sh: tuple[tuple[str, ...], ...]) -> None:
    """The explicit placement must list pp rows of hosts_per_stage distinct hosts."""
    src, p = job.source, job.parallelism
    if len(sh) != p.pp:
        raise SpecError(
            src, "placement.stage_hosts", f"needs {p.pp} rows (one per stage), got {len(sh)}"
        )
    seen: set[str] = set()
    for i, row in enumerate(sh):
        if len(row) != job.hosts_per_stage:
            raise SpecError(
                src,
                f"placement.stage_hosts[{i}]",
                f"needs {job.hosts_per_stage} hosts, got {len(row)}",
            )
        dup = seen.intersection(row) or (len(set(row)) < len(row) and row)
        if dup:
            raise SpecError(src, f"placement.stage_hosts[{i}]", "a host appears twice")
        seen.update(row)
