"""What every figure of coflowbed shares: matplotlib on its file-only backend (these
machines have no display) and ``save_figure``, which lays a figure out, writes it as a
PNG and closes it."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on these machines
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt", "save_figure"]


def save_figure(fig, out: Path) -> Path:
    """Lay ``fig`` out, write it to ``out`` (PNG, 110 dpi) and close it; ``out``."""
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
