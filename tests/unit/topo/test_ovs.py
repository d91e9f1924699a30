"""OVS service helpers that need no root: env, sysctl save/restore, pid checks."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from topo import ovs


@pytest.fixture
def fake_sysctl(tmp_path, monkeypatch):
    path = tmp_path / "wmem_default"
    path.write_text("212992\n")
    monkeypatch.setattr(ovs, "WMEM_SYSCTL", path)
    return path


def test_env_points_every_ovs_dir_at_the_private_dir(tmp_path):
    env = ovs.ovs_env(tmp_path)
    assert set(env) == {"OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR"}
    assert {Path(v) for v in env.values()} == {(tmp_path / "ovs").resolve()}


def test_sysctl_is_saved_raised_and_restored(tmp_path, fake_sysctl):
    ovs.ovs_dir(tmp_path).mkdir()
    ovs.save_and_raise_wmem(tmp_path)
    assert int(fake_sysctl.read_text()) == ovs.WMEM_WANTED
    ovs.save_and_raise_wmem(tmp_path)  # a second start must not save the raised value
    assert ovs.restore_sysctl(tmp_path) == 212992
    assert int(fake_sysctl.read_text()) == 212992
    assert ovs.restore_sysctl(tmp_path) is None  # nothing left to restore


def test_pid_checks(tmp_path):
    pidfile = tmp_path / "x.pid"
    assert ovs.read_pid(pidfile) is None
    pidfile.write_text(f"{os.getpid()}\n")
    assert ovs.read_pid(pidfile) == os.getpid()
    pidfile.write_text("999999999\n")
    assert ovs.read_pid(pidfile) is None


def test_too_long_run_dir_is_refused(tmp_path):
    with pytest.raises(ValueError, match="too long"):
        ovs.OvsService(tmp_path / ("x" * 120))
