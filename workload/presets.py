"""Named job presets shipped in ``workload/presets/<name>.yaml``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workload.jobspec import PRESET_DIR, JobSpec, load_job, preset_path
from workload.schema import SpecError


def preset_names() -> list[str]:
    """Names of all shipped presets."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def require_preset(name: str) -> Path:
    """Path of preset ``name``; SpecError listing the known ones otherwise."""
    path = preset_path(name)
    if path is None:
        raise SpecError(
            name, None, f"no such job file or preset (presets: {', '.join(preset_names())})"
        )
    return path


def resolve(job: str) -> Path:
    """A job file path, or the path of the preset called ``job``."""
    p = Path(job)
    return p if p.is_file() or p.suffix in (".yaml", ".yml") else require_preset(job)


def load_preset(name: str, overrides: Mapping[str, Any] | None = None) -> JobSpec:
    """The validated job spec of preset ``name`` with optional dotted-key overrides."""
    return load_job(require_preset(name), overrides)
