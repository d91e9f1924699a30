"""Pipeline schedules: the order of forward ('F') and backward ('B') microbatch
operations on each stage (device), and with interleaving on which model chunk."""

from __future__ import annotations

Op = tuple[str, int]  # ("F" | "B", microbatch)
VOp = tuple[str, int, int]  # ("F" | "B", microbatch, virtual stage = chunk * p + stage)


def one_f_one_b(p: int, m: int, stage: int) -> list[Op]:
    """1F1B (PipeDream-flush / Megatron): stage i runs min(p−i−1, m) warm-up forwards,
    then alternates one forward and one backward, then drains the backwards."""
    _check(p, m, stage)
    warm = min(p - stage - 1, m)
    ops: list[Op] = [("F", mb) for mb in range(warm)]
    for i in range(m - warm):
        ops.append(("F", warm + i))
        ops.append(("B", i))
    ops.extend(("B", mb) for mb in range(m - warm, m))
    return ops


def gpipe(p: int, m: int, stage: int) -> list[Op]:
    """GPipe: all forwards, then all backwards (in microbatch order)."""
    _check(p, m, stage)
    return [("F", mb) for mb in range(m)] + [("B", mb) for mb in range(m)]


def interleaved_1f1b(p: int, m: int, stage: int, v: int) -> list[tuple[str, int, int]]:
    """Megatron's interleaved 1F1B with v model chunks per device (m a multiple of p):
    (p−i−1)·2 + (v−1)·p warm-up forwards (all of them when m = p), then 1F1B.  Returns
    (kind, microbatch, local chunk); chunks advance every p microbatches, backward in
    reverse chunk order."""
    _check(p, m, stage)
    if v < 1 or m % p:
        raise ValueError(
            f"interleaved 1F1B needs v >= 1 and m a multiple of p, got v={v} m={m} p={p}"
        )
    total = m * v
    warm = total if m == p else min((p - stage - 1) * 2 + (v - 1) * p, total)

    def at(kind: str, k: int) -> tuple[str, int, int]:
        """The k-th forward or backward: (kind, microbatch, chunk)."""
        chunk = (k % (p * v)) // p
        return kind, (k // (p * v)) * p + k % p, chunk if kind == "F" else v - 1 - chunk

    ops = [at("F", k) for k in range(warm)]
    for k in range(total - warm):
        ops += [at("F", warm + k), at("B", k)]
    return ops + [at("B", k) for k in range(total - warm, total)]


SCHEDULES = {"1f1b": one_f_one_b, "gpipe": gpipe}


def stage_ops(schedule: str, p: int, m: int, stage: int, v: int = 1) -> list[VOp]:
    """The operation order of ``stage`` under ``schedule`` as (kind, microbatch,
    virtual stage); without interleaving the virtual stage is the stage."""
    if schedule == "interleaved-1f1b":
        return [(k, mb, c * p + stage) for k, mb, c in interleaved_1f1b(p, m, stage, v)]
    try:
        fn = SCHEDULES[schedule]
    except KeyError:
        raise ValueError(f"unknown pipeline schedule {schedule!r}") from None
    return [(k, mb, stage) for k, mb in fn(p, m, stage)]


def _check(p: int, m: int, stage: int) -> None:
    if p < 1 or m < 1 or not 0 <= stage < p:
        raise ValueError(f"bad pipeline shape p={p} m={m} stage={stage}")
