"""Keep freed memory in the process heap while the simulator runs (glibc only).

Every compiled run and every decision allocates and frees arrays of 10^4-10^6 entries (path
groups, saved filling rounds, per-group clocks).  With glibc's default settings the top of
the heap is given back to the kernel when freed (``brk``: 2,922 calls on the first 200
coflows of the Facebook trace under D-CLAS) and large arrays are mapped and unmapped one by
one, so the next allocation takes its pages again: faults and zeroing by the kernel, 13 % of
D-CLAS's run on the whole trace (17.3-17.8 s against 14.9-15.2 s with the heap kept;
docs/measurements/simulator-speed.md, "Freed memory kept").  The settings below keep up to
``TRIM`` bytes of freed heap and map only arrays over ``MAP`` bytes. The process's resident
size then stays at its peak until it exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger("sim")

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's mallopt parameters
TRIM = 256 << 20  # freed bytes at the heap's top kept before any is given back
PAD = 16 << 20  # bytes the heap grows by beyond each request
MAP = 32 << 20  # arrays from this size on are mapped on their own (glibc's dynamic cap)


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's heap to keep freed memory (once per process); False where the C
    library has no ``mallopt`` (not glibc): the simulator then runs as it is."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        log.debug("no mallopt in %s: the heap keeps its default settings", name)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = ((M_MMAP_THRESHOLD, MAP), (M_TRIM_THRESHOLD, TRIM), (M_TOP_PAD, PAD))
    return all(mallopt(param, value) == 1 for param, value in settings)
