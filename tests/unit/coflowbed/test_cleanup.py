"""Clean-up finds this project's processes by their environment marker and ends them by
PID; it never signals itself or its ancestors (unit test: plain child processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from coflowbed import cleanup, runstate


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
