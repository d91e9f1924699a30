"""Named job presets shipped in ``workload/presets/<name>.yaml``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workload.jobspec import PRESET_DIR, JobSpec, load_job, preset_path
from workload.schema import SpecError, did_you_mean


def preset_names() -> list[str]:
    """Names of all shipped presets."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def job_file(ref: str, folder: Path) -> Path | None:
    """The job a scenario's ``job: ref`` names: the preset ``ref``, else the file ``ref``
    relative to the scenario's ``folder``; None when it is neither."""
    path = preset_path(ref) or folder / ref
    return path if path.is_file() else None


def unknown_job(ref: str) -> str:
    """Why ``ref`` names no job, with the presets it could name."""
    names = preset_names()
    hint = did_you_mean(ref, names)
    return f"no such preset or job file {ref!r}{hint} (presets: {', '.join(names)})"


def require_preset(name: str) -> Path:
    """Path of preset ``name``; SpecError listing the known ones otherwise."""
    path = preset_path(name)
    if path is None:
        names = preset_names()
        hint = did_you_mean(name, names)
        raise SpecError(
            name, None, f"no such job file or preset{hint} (presets: {', '.join(names)})"
        )
    return path


def resolve(job: str) -> Path:
    """A job file path, or the path of the preset called ``job``."""
    p = Path(job)
    return p if p.is_file() or p.suffix in (".yaml", ".yml") else require_preset(job)


def load_preset(name: str, overrides: Mapping[str, Any] | None = None) -> JobSpec:
    """The validated job spec of preset ``name`` with optional dotted-key overrides."""
    return load_job(require_preset(name), overrides)
