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


def test_kernel_datapath_when_the_module_is_loaded(tmp_path):
    module = tmp_path / "openvswitch"
    module.mkdir()
    assert ovs.detect_datapath(module, modprobe=("false",)) == "system"


def test_kernel_datapath_when_modprobe_loads_the_module(tmp_path):
    assert ovs.detect_datapath(tmp_path / "absent", modprobe=("true",)) == "system"


@pytest.mark.parametrize("modprobe", [("false",), ("/nonexistent/modprobe", "-q", "x")])
def test_userspace_datapath_without_the_module(tmp_path, modprobe):
    assert ovs.detect_datapath(tmp_path / "absent", modprobe=modprobe) == "netdev"


def test_switch_class_follows_the_datapath():
    from topo.switch import CoflowOVSSwitch, KernelCoflowOVSSwitch, switch_class

    assert switch_class("netdev") is CoflowOVSSwitch and CoflowOVSSwitch.DATAPATH == "user"
    assert switch_class("system") is KernelCoflowOVSSwitch
    assert KernelCoflowOVSSwitch.DATAPATH == "kernel"
    with pytest.raises(ValueError, match="datapath"):
        switch_class("dpdk")


@pytest.mark.parametrize("tso", [True, False])
def test_userspace_tso_setting_reaches_the_database(tmp_path, monkeypatch, tso):
    argvs = []
    for key in ovs.ovs_env(tmp_path):  # start() exports them; restored after the test
        monkeypatch.setenv(key, "")
    monkeypatch.setattr(ovs, "_run", lambda argv, timeout=ovs.CMD_TIMEOUT_S: argvs.append(argv))
    monkeypatch.setattr(ovs, "save_and_raise_wmem", lambda run_dir: None)
    ovs.OvsService(tmp_path, userspace_tso=tso).start()
    wanted = f"other_config:userspace-tso-enable={str(tso).lower()}"
    assert any(wanted in argv for argv in argvs)
