"""The compiled pipeline: p4src/coflowbed.p4 -> BMv2 JSON + P4Info (text format).

The artifacts are committed under ``p4src/compiled/`` so that a machine with BMv2 but
without p4c can run the fabric.  ``SOURCE.sha256`` records the digest of the source
they were compiled from, so a stale build is detected even where p4c is absent; where
p4c exists, :func:`check_fresh` also recompiles and compares byte for byte.

    python -m controller.p4runtime.artifacts compile   # what `make p4` runs
    python -m controller.p4runtime.artifacts check     # exit 1 when stale
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("controller.p4runtime.artifacts")

REPO = Path(__file__).resolve().parents[2]
P4_SOURCE_REL = Path("p4src/coflowbed.p4")  # relative: p4c records it in the JSON
COMPILED_DIR = REPO / "p4src" / "compiled"
JSON_NAME = "coflowbed.json"
P4INFO_NAME = "coflowbed.p4info.txtpb"
DIGEST_NAME = "SOURCE.sha256"
P4C = "p4c-bm2-ss"  # the BMv2 back end of p4c (p4lang's p4c package installs it)
COMPILE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Artifacts:
    """Paths of one compiled pipeline."""

    json: Path
    p4info: Path

    @classmethod
    def in_dir(cls, directory: Path) -> Artifacts:
        """The artifacts as named inside ``directory``."""
        return cls(Path(directory) / JSON_NAME, Path(directory) / P4INFO_NAME)

    def exist(self) -> bool:
        """True when both files are there."""
        return self.json.is_file() and self.p4info.is_file()


def committed() -> Artifacts:
    """The committed artifacts (p4src/compiled/)."""
    return Artifacts.in_dir(COMPILED_DIR)


def source_digest(source: Path | None = None) -> str:
    """sha256 of the P4 source (hex)."""
    return hashlib.sha256((source or REPO / P4_SOURCE_REL).read_bytes()).hexdigest()


def recorded_digest() -> str | None:
    """Digest recorded at the last ``make p4`` (None when never compiled)."""
    path = COMPILED_DIR / DIGEST_NAME
    return path.read_text().split()[0] if path.is_file() else None


def find_p4c() -> str | None:
    """Path of p4c-bm2-ss, or None."""
    return shutil.which(P4C)


def compile_to(out_dir: Path, p4c: str | None = None) -> Artifacts:
    """Compile p4src/coflowbed.p4 into ``out_dir``; RuntimeError with p4c's message."""
    p4c = p4c or find_p4c()
    if p4c is None:
        raise RuntimeError(f"{P4C} not found on PATH (install p4lang's p4c package)")
    out = Artifacts.in_dir(out_dir)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    argv = [
        p4c,
        "--arch",
        "v1model",
        "--std",
        "p4-16",
        "--p4runtime-files",
        str(out.p4info),
        "-o",
        str(out.json),
        str(P4_SOURCE_REL),
    ]
    res = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"{P4_SOURCE_REL}: p4c failed: {(res.stderr or res.stdout).strip()}")
    return out


def compile_committed(p4c: str | None = None) -> Artifacts:
    """`make p4`: compile into p4src/compiled/ and record the source digest."""
    out = compile_to(COMPILED_DIR, p4c)
    (COMPILED_DIR / DIGEST_NAME).write_text(f"{source_digest()}  {P4_SOURCE_REL}\n")
    log.info("compiled %s -> %s, %s", P4_SOURCE_REL, out.json, out.p4info)
    return out


def staleness(p4c: str | None = None) -> list[str]:
    """Reasons the committed artifacts are stale (empty when fresh).  Without p4c only
    the digest is compared; with p4c the output is also recompiled and compared."""
    art = committed()
    if not art.exist():
        return [f"{COMPILED_DIR}: no compiled artifacts (run `make p4`)"]
    reasons = []
    if recorded_digest() != source_digest():
        reasons.append(f"{P4_SOURCE_REL} changed since the last `make p4`")
    p4c = p4c or find_p4c()
    if p4c is not None:
        with tempfile.TemporaryDirectory(prefix="coflowbed-p4c-") as tmp:
            fresh = compile_to(Path(tmp), p4c)
            for name, old, new in (
                ("BMv2 JSON", art.json, fresh.json),
                ("P4Info", art.p4info, fresh.p4info),
            ):
                if old.read_bytes() != new.read_bytes():
                    reasons.append(f"{old}: differs from a fresh compile ({name})")
    return reasons


def main(argv: list[str] | None = None) -> int:
    """``compile`` or ``check``; exit 1 on failure/staleness."""
    p = argparse.ArgumentParser(prog="python -m controller.p4runtime.artifacts")
    p.add_argument("action", choices=("compile", "check"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    try:
        if args.action == "compile":
            compile_committed()
            return 0
        reasons = staleness()
    except RuntimeError as e:
        print(f"p4: {e}", file=sys.stderr)
        return 1
    for r in reasons:
        print(f"p4: stale: {r}", file=sys.stderr)
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
