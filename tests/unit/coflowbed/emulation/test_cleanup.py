"""Clean-up finds this project's processes by their environment marker and ends them by
PID; it never signals itself or its ancestors (unit test: plain child processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from coflowbed.emulation import cleanup, runstate


def spawn(marker: str | None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop(runstate.ENV_MARKER, None)
    if marker:
        env[runstate.ENV_MARKER] = marker
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)


@pytest.mark.processes
def test_marked_processes_are_found_and_ended_unmarked_ones_are_not():
    ours, other, stranger = spawn("unit-test-run"), spawn("another-run"), spawn(None)
    try:
        assert ours.pid in runstate.marked_pids("unit-test-run")
        assert other.pid not in runstate.marked_pids("unit-test-run")
        assert stranger.pid not in runstate.marked_pids()
        assert cleanup.end_pids(runstate.marked_pids("unit-test-run"), grace_s=5) == [ours.pid]
        assert ours.wait(5) == -signal.SIGTERM  # ended by the polite signal, in time
        assert other.poll() is None and stranger.poll() is None
    finally:
        for p in (ours, other, stranger):
            p.kill()
            p.wait(5)


def test_never_signals_itself():
    me = os.getpid()
    assert cleanup.end_pids([me], grace_s=0.1) == []


def test_run_state_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path)
    st = runstate.RunState("r1", 123, "/tmp/out", ["l1-eth1"], "/run/x")
    st.save()
    assert runstate.load_states() == [st]
    st.remove()
    assert runstate.load_states() == []


def test_claim_is_exclusive_and_names_the_live_run(tmp_path, monkeypatch):
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path / "state")
    fd = runstate.claim()
    try:
        assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
        with pytest.raises(runstate.RunBusy, match="starting on this machine"):
            runstate.claim()  # a second open file: the flock conflicts within a process too
    finally:
        runstate.release(fd)
    runstate.release(runstate.claim())  # free again once released
    own = runstate.RunState("r-own", os.getpid(), "/tmp/out")
    own.save()  # the runner's own save records when, and which process, it is
    assert own.started and own.runner_start == runstate.start_ticks(os.getpid())
    assert not runstate.runner_alive(own)  # never this process itself


@pytest.mark.processes
def test_claim_refuses_a_recorded_live_runner_and_ignores_a_reused_pid(tmp_path, monkeypatch):
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path)
    live = spawn(None)
    try:
        st = runstate.RunState("r-live", live.pid, "/tmp/out", started="2026-12-01T16:00:00Z")
        st.save()
        with pytest.raises(runstate.RunBusy) as err:
            runstate.claim()
        msg = str(err.value)
        assert f"pid {live.pid}" in msg and st.started in msg and "coflowbed clean" in msg
        st.runner_start = runstate.start_ticks(live.pid) + 1  # the PID now names another process
        st.save()
        assert not runstate.runner_alive(st)
        runstate.release(runstate.claim())
    finally:
        live.kill()
        live.wait(5)


@pytest.mark.processes
def test_reclaim_stale_ends_a_dead_runners_processes_and_drops_its_state(tmp_path, monkeypatch):
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(5)
    survivor, other = spawn("unit-stale-run"), spawn("unit-other-run")
    try:
        runtime = runstate.private_dir(tmp_path / "unit-stale-run")
        runstate.RunState("unit-stale-run", dead.pid, "/tmp/out", ovs_dir=str(runtime)).save()
        lines = cleanup.reclaim_stale()
        assert len(lines) == 1 and "stale run unit-stale-run" in lines[0], lines
        assert "ended 1 processes" in lines[0] and f"pid {dead.pid} dead" in lines[0]
        assert survivor.wait(5) == -signal.SIGTERM
        assert other.poll() is None  # another run's (unrecorded) process is not touched
        assert "removed its OVS/runtime folder" in lines[0]
        assert runstate.load_states() == [] and not runtime.exists()
    finally:
        for p in (survivor, other):
            p.kill()
            p.wait(5)
