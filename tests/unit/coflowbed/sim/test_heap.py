"""The simulator's heap setting (glibc): freed arrays stay in the heap for the next."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from coflowbed.sim import heap

LIBC = ctypes.CDLL(ctypes.util.find_library("c"))


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@pytest.mark.skipif(not hasattr(LIBC, "mallinfo2"), reason="not glibc 2.33 or later")
def test_a_freed_array_stays_in_the_heap():
    """A 20 MB array (below ``MAP``) comes from the heap and, freed, stays there as free
    bytes (below ``TRIM``) instead of going back to the kernel."""
    LIBC.mallinfo2.restype = MallInfo2
    assert heap.keep_freed_memory()
    size = 20 << 20
    a = np.ones(size // 8)
    assert LIBC.mallinfo2().uordblks >= size  # in the heap, not mapped on its own
    del a
    assert LIBC.mallinfo2().fordblks >= size
