"""Whether the simulator's numba kernels are compiled already: numba caches them next to
their modules (``__pycache__/*.nbi``); without that cache the first simulation compiles
them, about 100 s, which ``coflowbed.sim.simulate`` says in a log line first.
``coflowbed.sim.warmup`` fills the cache at install time."""

from __future__ import annotations

from pathlib import Path

from coflowbed.sim import kernel

KERNEL_MODULES = ("kernel", "stepkernel", "groupkernel")


def kernels_cached() -> bool:
    """Whether numba's cache next to the kernels holds compiled code of every kernel
    module (else the first simulation compiles, ~100 s)."""
    cache = Path(kernel.__file__).parent / "__pycache__"
    return all(any(cache.glob(f"{mod}.*.nbi")) for mod in KERNEL_MODULES)
