"""A real small simulated sweep (tiny-moe, a 2 x 2 grid, fair and hermod) on the local
process pool and on a real local Ray instance: the same table; a rerun skips."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from coflowbed.cli.main import main

pytestmark = [pytest.mark.processes, pytest.mark.slow]
HAS_RAY = importlib.util.find_spec("ray") is not None
WALL = "wall_s"  # the only column that may differ between two executions


def table(path):
    """sweep.csv without the wall-time column."""
    with path.open() as fh:
        return [{k: v for k, v in r.items() if k != WALL} for r in csv.DictReader(fh)]


@pytest.fixture(scope="module")
def local_table(tmp_path_factory):
    from tests.unit.coflowbed.studies.sweep.conftest import TINY

    d = tmp_path_factory.mktemp("local")
    (d / "tiny.yaml").write_text(TINY)
    assert main(["sweep", str(d / "tiny.yaml"), "--out", str(d / "out"), "--jobs", "2"]) == 0
    return d


def test_local_pool_runs_every_point(local_table):
    rows = table(local_table / "out" / "sweep.csv")
    assert len(rows) == 8 and {r["partial"] for r in rows} == {"False"}
    assert all(float(r["iteration_time_s"]) > 0 for r in rows)
    # half the bandwidth, (about) twice the iteration: the simulator really ran each point
    slow, fast = (float(rows[i]["iteration_time_s"]) for i in (0, 4))
    assert slow > 1.5 * fast
    assert (local_table / "out" / rows[0]["run"] / "coflows.csv").is_file()


def test_rerun_into_the_same_folder_skips_and_matches(local_table, capsys):
    before = (local_table / "out" / "sweep.csv").read_text()
    assert main(["sweep", str(local_table / "tiny.yaml"), "--out", str(local_table / "out")]) == 0
    assert "8 already complete, skipped; 0 run now" in capsys.readouterr().out
    assert (local_table / "out" / "sweep.csv").read_text() == before


@pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (pip install 'coflowbed[ray]')")
def test_ray_gives_the_same_table(local_table, monkeypatch):
    """The same table as the local pool; the local Ray instance kept its session files
    in a directory of its own, gone once the sweep is over (Ray's ``/tmp/ray`` kept
    every session's)."""
    import ray

    real_init, dirs = ray.init, []

    def init(*args, **kwargs):
        """The real ``ray.init``, its session directory noted."""
        dirs.append(kwargs.get("_temp_dir"))
        return real_init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", init)
    out = local_table / "ray"
    assert (
        main(["sweep", str(local_table / "tiny.yaml"), "--out", str(out), "--backend", "ray"]) == 0
    )
    assert table(out / "sweep.csv") == table(local_table / "out" / "sweep.csv")
    assert len(dirs) == 1 and dirs[0] is not None and "coflowbed-ray-" in dirs[0]
    assert not Path(dirs[0]).exists()


def test_missing_ray_is_one_line(local_table, monkeypatch, capsys):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    assert main(["sweep", str(local_table / "tiny.yaml"), "--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Ray is not installed" in err
