"""Compiling the simulator's kernels ahead of use, and saying so when a run must."""

from __future__ import annotations

from coflowbed.sim import BigSwitch, coflowsim, grouprun, kernel, kernelcache, simulate, warmup
from controller import policies


def test_kernels_cached_looks_for_every_kernel_module(tmp_path, monkeypatch):
    """Cached only when numba's index files of kernel, stepkernel and groupkernel are
    all there."""
    monkeypatch.setattr(kernel, "__file__", str(tmp_path / "kernel.py"))
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    assert not kernelcache.kernels_cached()
    (cache / "kernel.fill-120.py311.nbi").touch()
    assert not kernelcache.kernels_cached()
    (cache / "stepkernel.advance-40.py311.nbi").touch()
    assert not kernelcache.kernels_cached()
    (cache / "groupkernel.loop-380.py311.nbi").touch()
    assert kernelcache.kernels_cached()


def test_a_run_that_must_compile_says_so(monkeypatch, caplog):
    """No cached kernels: the run logs that it compiles (a silent 100 s looks like a hang)."""
    monkeypatch.setattr(kernelcache, "kernels_cached", lambda: False)
    with caplog.at_level("INFO", logger="sim"):
        res = simulate(
            warmup.tiny_dag(), BigSwitch(("h1", "h2", "h3", "h4"), 1e9), policies.get("fair"), None
        )
    assert res.sim.stats.finished
    assert any("compiling the simulator's kernels" in r.getMessage() for r in caplog.records)


def test_the_warmup_trace_runs_every_coflowsim_policy_to_the_end():
    """``compile_kernels`` compiles the CoflowSim model's kernels by running
    ``tiny_trace`` under each of its policies: every one must finish both coflows
    (a trace the model refused or left unfinished would leave kernels uncompiled)."""
    for name in coflowsim.POLICIES:
        run = coflowsim.run_trace(warmup.tiny_trace(), 3, name)
        assert run.outcome.finished and len(run.outcome.finish_ms) == 2, name


def test_the_warmup_dag_goes_on_after_a_completion(monkeypatch):
    """``tiny_dag``'s coflows overlap, so a compiled run goes on with its groups after
    a completion, both ways the warmup compiles: under fair and Sincronia the policy
    decides inside the run (``same_coflow_levels``), under a policy reading per-flow
    states (``warmup.ReadsSizes``) the groups are written back and the next run takes
    them (``sync_carry``, ``same_levels``)."""
    kept: list[bool] = []
    decided: list[int] = []
    real_valid, real_decided = grouprun._valid, grouprun._decided

    def noted(sim):
        """The real check, its answer noted."""
        got = real_valid(sim)
        kept.append(got is not None)
        return got

    monkeypatch.setattr(grouprun, "_valid", noted)
    monkeypatch.setattr(
        grouprun, "_decided", lambda *a: decided.append(real_decided(*a)) or decided[-1]
    )
    fabric = BigSwitch(("h1", "h2", "h3", "h4"), 1e9)
    for name in ("fair", "sincronia"):
        decided.clear()
        assert simulate(warmup.tiny_dag(), fabric, policies.get(name), None).sim.stats.finished
        assert grouprun.KEPT in decided and not any(kept), name
    decided.clear()
    assert simulate(warmup.tiny_dag(), fabric, warmup.ReadsSizes(), None).sim.stats.finished
    assert any(kept) and set(decided) == {grouprun.NOT_TAKEN}


def test_the_warmup_crosses_a_byte_threshold_inside_a_run(monkeypatch):
    """One of the warmup's policies (D-CLAS with a 150 KB first queue) has a coflow of
    ``tiny_dag`` reach a byte threshold inside a compiled run while nothing else is
    due, so the warmup compiles what that stop calls (``grouprun._snap``:
    ``vclock.rethreshold``); without it a fresh install compiled that kernel inside the
    first whole-trace D-CLAS run.  The default D-CLAS (10 MB) never gets there."""
    snapped: list[str] = []
    real_snap = grouprun._snap
    monkeypatch.setattr(
        grouprun, "_snap", lambda sim, cclk: snapped.append(sim.policy.name) or real_snap(sim, cclk)
    )
    fabric = BigSwitch(("h1", "h2", "h3", "h4"), 1e9)
    by_name: dict[str, list[int]] = {}
    for policy in warmup.warmup_policies():
        snapped.clear()
        assert simulate(warmup.tiny_dag(), fabric, policy, None).sim.stats.finished
        by_name.setdefault(policy.name, []).append(len(snapped))
    assert by_name["dclas"][0] == 0 and by_name["dclas"][1] > 0
