"""coflowbed.core.progress: bars only on a terminal unless forced, and the simulator's bar of
coflows done once a run reports progress."""

from __future__ import annotations

import coflowbed
from coflowbed.core import progress
from coflowbed.sim import engine


def test_bars_follow_the_terminal_unless_the_environment_says(monkeypatch):
    monkeypatch.delenv(progress.ENV_FORCE, raising=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    assert progress.enabled() is False
    monkeypatch.setenv(progress.ENV_FORCE, "1")
    assert progress.enabled() is True
    monkeypatch.setenv(progress.ENV_FORCE, "0")
    assert progress.enabled() is False


def test_a_long_simulation_draws_a_bar_of_coflows_done(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(progress.ENV_FORCE, "1")
    monkeypatch.setattr(engine, "PROGRESS_EVERY_S", 0.0)  # every run is "long"
    res = coflowbed.simulate("tiny-moe", out=tmp_path / "sim")
    err = capsys.readouterr().err
    total = len(res.coflows)
    assert "simulate: 100%" in err and f"{total}/{total}" in err, err[-300:]


def test_a_short_simulation_draws_none(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(progress.ENV_FORCE, "1")
    coflowbed.simulate("tiny-moe", out=tmp_path / "sim")
    assert "simulate:" not in capsys.readouterr().err
