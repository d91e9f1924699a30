"""Message sizes, parameter counts and compute times of a transformer job: the formulas
of WORKLOADS.md in one place (unscaled bytes; the generator applies ``byte_scale``).

Notation: b micro-batch, s sequence length, h hidden, k top-k, t TP degree.
Activations are bf16 (2 bytes), gradients fp32 (4 bytes), parameters bf16 (2 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workload.jobspec import JobSpec, ModelSpec

ACT_BYTES = 2
GRAD_BYTES = 4
PARAM_BYTES = 2


def scaled(nbytes: float, scale: float) -> int:
    """Bytes times a job's ``byte_scale``, as the integer a flow carries (at least 1)."""
    return max(1, round(nbytes * scale))


def scaled_array(nbytes: np.ndarray, scale: float) -> np.ndarray:
    """``scaled`` of every entry (round half to even, as Python's round), as int64."""
    return np.maximum(1, np.rint(nbytes * scale)).astype(np.int64)


def pp_message_bytes(b: int, s: int, h: int, tp: int = 1, sequence_parallel: bool = False) -> float:
    """Bytes one rank sends per microbatch across a stage boundary: 2·b·s·h (÷ t with SP)."""
    return ACT_BYTES * b * s * h / (tp if sequence_parallel else 1)


def ep_a2a_bytes(b: int, s: int, h: int, top_k: int, tp: int = 1) -> float:
    """Per-rank all-to-all buffer per direction: 2·b·s·h·k / t (incl. the local share)."""
    return ACT_BYTES * b * s * h * top_k / tp


def ring_steps(collective: str, n: int) -> int:
    """Steps of a ring collective over n ranks: 2(n−1) for all-reduce, else n−1."""
    _check_collective(collective)
    return 2 * (n - 1) if collective == "all_reduce" else n - 1


def ring_wire_bytes(collective: str, n: int, size: float) -> float:
    """Bytes each rank sends for a buffer of ``size`` bytes over n ranks:
    2(n−1)/n·S for all-reduce, (n−1)/n·S for reduce-scatter / all-gather / all-to-all."""
    if collective == "all_to_all":
        return (n - 1) / n * size
    return ring_steps(collective, n) * size / n


def _check_collective(collective: str) -> None:
    if collective not in ("all_reduce", "reduce_scatter", "all_gather"):
        raise ValueError(f"unknown ring collective {collective!r}")


def mlp_params(model: ModelSpec, ffn: int) -> int:
    """Parameters of one MLP (two matrices, three when gated)."""
    return (3 if model.gated_mlp else 2) * model.hidden * ffn


@dataclass(frozen=True, slots=True)
class LayerParams:
    """Parameters of one rank's shard of a layer: the dense part (replicated over the
    DP group) and the experts part (replicated over the expert-DP group)."""

    dense: float
    expert: float


def rank_layer_params(job: JobSpec, lid: int) -> LayerParams:
    """Per-rank parameter shard of layer ``lid`` (÷ t; experts ÷ ep), with the
    embedding on the first layer and the LM head on the last when ``vocab`` is set."""
    m, p = job.model, job.parallelism
    h = m.hidden
    dense = 4 * h * h  # QKV and output projections
    expert = 0.0
    moe = m.moe_of(lid)
    if moe is not None:
        dense += h * moe.experts  # router
        expert = moe.experts // p.ep * mlp_params(m, moe.expert_ffn_hidden)
    else:
        dense += mlp_params(m, m.ffn_hidden)
    if m.vocab and lid in (0, m.layers - 1):
        dense += m.vocab * h * (2 if m.layers == 1 else 1)
    return LayerParams(dense / p.tp, expert / p.tp)


def rank_shard_params(job: JobSpec, stage: int) -> float:
    """P: parameters held by one rank of ``stage`` (dense and experts)."""
    layers = (rank_layer_params(job, layer) for layer in job.stage_layers(stage))
    return sum(lp.dense + lp.expert for lp in layers)


def zero2_bytes(params: float) -> tuple[float, float]:
    """ZeRO-2 per-rank buffers: reduce-scatter of fp32 grads 4·P, all-gather of bf16 2·P."""
    return GRAD_BYTES * params, PARAM_BYTES * params


@dataclass(frozen=True, slots=True)
class LayerTimes:
    """Forward seconds of one layer on one rank for one microbatch: the attention part
    (incl. the gate) and the MLP/experts part.  Backward is ``bwd_factor`` times these."""

    attn_s: float
    mlp_s: float

    @property
    def total_s(self) -> float:
        """Whole-layer forward time."""
        return self.attn_s + self.mlp_s


def layer_flops(model: ModelSpec, lid: int) -> tuple[float, float]:
    """Forward FLOPs of layer ``lid`` per microbatch (whole layer, before the TP split):
    (attention + router, MLP or routed experts); LM head added on the last layer."""
    b, s, h = model.micro_batch, model.seq_len, model.hidden
    attn = 2 * b * s * 4 * h * h + 4 * b * s * s * h  # projections + scores and values
    moe = model.moe_of(lid)
    if moe is not None:
        attn += 2 * b * s * h * moe.experts  # router
        mlp = moe.top_k * 2 * b * s * mlp_params(model, moe.expert_ffn_hidden)
    else:
        mlp = 2 * b * s * mlp_params(model, model.ffn_hidden)
    if model.vocab and lid == model.layers - 1:
        mlp += 2 * b * s * h * model.vocab
    return float(attn), float(mlp)


def layer_times(job: JobSpec, lid: int) -> LayerTimes:
    """Forward time of layer ``lid`` on one rank: FLOPs / (TFLOP/s · MFU), or the given
    ``fwd_layer_s`` split between attention and MLP in the FLOPs ratio."""
    attn, mlp = layer_flops(job.model, lid)
    c = job.compute
    if c.fwd_layer_s is not None:
        total = c.fwd_layer_s[lid]
        return LayerTimes(total * attn / (attn + mlp), total * mlp / (attn + mlp))
    if c.gpu_tflops is None:
        raise ValueError("compute: neither gpu_tflops nor fwd_layer_s is given")
    rate = c.gpu_tflops * 1e12 * c.mfu * job.parallelism.tp
    return LayerTimes(attn / rate, mlp / rate)
