"""A tiny sweep: tiny-moe on 2 leaves x 4 hosts, a 2 x 2 grid, fair and hermod."""

from __future__ import annotations

from pathlib import Path

import pytest

TINY = """\
name: tiny
scenario:
  name: tiny
  fabric: {spines: 2, leaves: 2, hosts_per_leaf: 4, host_bw_mbps: 80}
  levels: 4
  workload:
    job: tiny-moe
policies: [fair, hermod]
grid:
  fabric.host_bw_mbps: [40, 80]
  levels: [2, 4]
"""


@pytest.fixture
def tiny_sweep(tmp_path: Path) -> Path:
    """The tiny sweep file."""
    p = tmp_path / "tiny.yaml"
    p.write_text(TINY)
    return p


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    """A sweep file with ``text``."""
    p = tmp_path / name
    p.write_text(text)
    return p
