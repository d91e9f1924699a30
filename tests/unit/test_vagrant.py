"""The Vagrantfile parses and its provisioning script passes shellcheck (each test
skips where its tool is not installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed")
@pytest.mark.processes
def test_vagrantfile_parses():
    res = subprocess.run(
        ["ruby", "-c", str(REPO / "Vagrantfile")], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert "Syntax OK" in res.stdout


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
@pytest.mark.processes
def test_provision_script_passes_shellcheck():
    res = subprocess.run(
        ["shellcheck", str(REPO / "scripts" / "vagrant-provision.sh")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
