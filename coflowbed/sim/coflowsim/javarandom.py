"""``java.util.Random``'s generator (48-bit LCG), enough of it for ``nextDouble``:
CoflowSim draws every coflow's deadline multiplier from ``new Random(17)``, and those
deadlines order its work-conserving pass."""

from __future__ import annotations

_MULT = 0x5DEECE66D
_ADD = 0xB
_MASK = (1 << 48) - 1


class JavaRandom:
    """Bit-exact ``java.util.Random(seed)`` (``nextDouble`` only)."""

    def __init__(self, seed: int) -> None:
        """Scramble ``seed`` as Java's constructor does."""
        self._seed = (seed ^ _MULT) & _MASK

    def _next(self, bits: int) -> int:
        """Java's ``next(bits)``: advance the LCG, return its top ``bits`` bits."""
        self._seed = (self._seed * _MULT + _ADD) & _MASK
        return self._seed >> (48 - bits)

    def next_double(self) -> float:
        """Java's ``nextDouble()``: 53 random bits in [0, 1)."""
        return ((self._next(26) << 27) + self._next(27)) * 2.0**-53
