"""One emulated run, start to finish: OVS, controller, fabric, agents, DAG execution,
results — and clean-up of all of it on success, failure, Ctrl-C and SIGTERM.

The registry entry (``coflowbed.emulation.runstate``) is written before anything starts, so a run
killed with SIGKILL is still cleaned by ``coflowbed clean``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from coflowbed.core import progress
from coflowbed.emulation import calibrate, runstate
from coflowbed.emulation.agents.client import AgentSet
from coflowbed.emulation.backend import EmulationBackend, name_losses, retransmitted
from coflowbed.emulation.cleanup import delete_interfaces, end_pids, reclaim_stale
from coflowbed.emulation.connections import pool_orders
from coflowbed.emulation.executor import DagExecutor, RunFailed
from coflowbed.emulation.faults.injector import FaultInjector
from coflowbed.emulation.sampler import Sampler, switch_links
from coflowbed.emulation.services import start_controller
from coflowbed.experiment import faults
from coflowbed.experiment.binding import policy_spec, scenario_policy
from coflowbed.experiment.folders import write_inputs
from coflowbed.experiment.scenario import Scenario
from coflowbed.results.files import write_results
from coflowbed.results.records import CoflowRecord, RunSummary, percentile
from controller.client import ResumableClient
from controller.messages import OpenJob
from controller.routing import FabricEvents
from controller.stats import PortCount, meters_to_wire, ports_to_wire, tags_to_wire
from topo.bmv2 import start_bmv2_fabric
from topo.hosttcp import apply_host_gso, apply_host_sysctls
from topo.net import interface_names, start_fabric
from topo.ovs import restore_sysctl
from workload.agent.proto import DATA_PORT

log = logging.getLogger("runner")
# one line per finished coflow, to the run folder's coflows.log only (not the terminal)
coflow_log = logging.getLogger("runner.coflows")
coflow_log.propagate = False
coflow_log.setLevel(logging.INFO)
COFLOW_LOG = "coflows.log"
Ports = dict[str, dict[int, PortCount]]  # switch -> port -> counters

START_TIMEOUT_S = 60.0


class Interrupted(Exception):
    """SIGTERM or SIGINT arrived; unwind and clean up."""


@dataclass
class RunOutcome:
    """What a run produced."""

    out_dir: Path
    summary: RunSummary
    error: str | None = None
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM/SIGHUP (``Interrupted``)


def run_scenario(scen: Scenario, out_dir: Path) -> RunOutcome:
    """Run ``scen`` on a fresh emulated fabric; results go to ``out_dir``.  Sockets and
    OVS state live in a short runtime folder under the registry (Unix socket paths are
    limited to 107 bytes); logs and results in ``out_dir``.  The run's fidelity figure is
    its caller's to attach, after the run lock is released
    (``coflowbed.studies.single.emulate``)."""
    scenario_policy(scen)  # a bad policy name or parameter stops the run before it starts
    lock = _claim_machine()  # RunBusy (nothing started) while another run is alive
    try:
        return _run_registered(scen, out_dir)
    finally:
        runstate.release(lock)


def _claim_machine() -> int:
    """The run lock (``runstate.claim``); every run recorded then is a dead runner's and
    is cleaned first, one log line each.  Returns the lock to hold for the run."""
    lock = runstate.claim()
    try:
        for line in reclaim_stale():
            log.warning("%s", line)
    except BaseException:
        runstate.release(lock)
        raise
    return lock


def _run_registered(scen: Scenario, out_dir: Path) -> RunOutcome:
    """The run, registered (``runstate``) before anything starts, cleaned up after."""
    run_id = f"{time.strftime('%H%M%S')}-{os.getpid()}"  # short: socket paths are limited
    state = runstate.RunState(
        run_id, os.getpid(), str(out_dir), interfaces=_interface_names(scen), ovs_dir=""
    )
    runtime = runstate.STATE_DIR / run_id
    state.ovs_dir = str(runtime)
    state.save()
    runstate.private_dir(runtime)  # its Unix sockets: owner only
    write_inputs(scen, out_dir)
    old_env = os.environ.get(runstate.ENV_MARKER)
    os.environ[runstate.ENV_MARKER] = run_id
    try:
        with _signals_raise():
            return _run(scen, out_dir, runtime)
    finally:
        _restore_env(old_env)
        _final_cleanup(state, runtime)


def _run(scen: Scenario, out_dir: Path, runtime: Path) -> RunOutcome:
    """Start everything, execute, write results (partial on any failure)."""
    executor, backend, controller, error, info = None, None, None, None, {}
    interrupted = False
    injector = _injector(scen)
    ports_before: Ports = {}
    sampler = _sampler(scen)
    t_start = time.monotonic()
    with contextlib.ExitStack() as stack:
        try:
            controller, agents, info["bringup_s"], fabric, service = _start_all(
                scen, out_dir, runtime, stack
            )
            backend = _backend(scen, controller, agents)
            if injector is not None:
                injector.attach(fabric, service, backend.link.client)
            info["connections"] = _prepare_iteration(scen, agents, backend)
            info["calibration"] = _calibrate(scen, agents)
            # bring-up and calibration traffic, its tail drained first
            ports_before = (
                calibrate.quiet_counters(controller.port_stats)
                if info["calibration"]
                else _ports_now(controller)
            )
            executor = DagExecutor(
                scen.dag,
                backend,
                on_coflow_done=_progress(backend, stack, out_dir, len(scen.dag.coflows)),
                timeline=injector,
            )
            if sampler is not None:
                sampler.start()
            executor.run(deadline_s=scen.timeout_s)
        except (
            RunFailed,
            Interrupted,
            KeyboardInterrupt,
            RuntimeError,
            TimeoutError,
            OSError,
        ) as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            interrupted = isinstance(exc, (Interrupted, KeyboardInterrupt))
            log.error("run stopped: %s", error)
        except Exception as exc:  # a bug: keep its traceback, still mark the results partial
            error = f"{type(exc).__name__}: {exc}"
            log.exception("run stopped by an unexpected error")
        if error is not None and backend is not None:  # an agent killed: name it, its flows
            error, info["lost"] = name_losses(
                backend.agents, executor, error, error.startswith(("RunFailed", "AgentError"))
            )
            if info["lost"]:
                log.error("%s", error)
        if sampler is not None:
            info["sampling"] = _stop_sampler(sampler, out_dir, executor)
        if backend is not None:
            if error is None and executor is not None:
                done = executor.flow_records.values()
                backend.collect_sent([f.flow_id for f in done if f.finish_s is not None])
            backend.close()
        if injector is not None:
            info["faults"], error = _fault_records(injector, controller, executor, out_dir, error)
        if controller is not None:
            _save_counters(controller, out_dir, ports_before)
        info["wall_s"] = round(time.monotonic() - t_start, 3)
        summary = _write(scen, out_dir, executor, backend, error, info)
    return RunOutcome(out_dir, summary, error, interrupted)


def _sampler(scen: Scenario):
    """The run's sampler of port counters and queue backlogs (None when off)."""
    if scen.sample_period_s <= 0:
        return None

    return Sampler(switch_links(scen.plan), scen.sample_period_s)


def _stop_sampler(sampler, out_dir: Path, executor: DagExecutor | None) -> dict:
    """Stop sampling, write ``samples/``; the ``sampling`` block of summary.json."""

    sampler.stop()
    t0 = None if executor is None else executor.t0
    info = asdict(sampler.write(out_dir, t0))
    info.pop("link_mbps")  # in samples/meta.json
    log.info(
        "sampled every %.3f s: %d ticks (%d missed), %.1f ms each",
        info["period_s"],
        info["ticks"],
        info["missed_ticks"],
        info["mean_cost_ms"],
    )
    return info


def _injector(scen: Scenario):
    """The executor's timeline of the scenario's faults (None without faults)."""
    if not scen.faults:
        return None

    return FaultInjector(scen.faults, scen.plan)


def _fault_records(injector, controller, executor, out_dir: Path, error: str | None):
    """Faults as they happened (``faults.csv``; the ``faults`` block of summary.json)
    and the run's error (a fault that could not be injected fails the run)."""

    injector.close()
    events = FabricEvents()
    if controller is not None:
        try:
            events = controller.fabric_events()
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("could not read the controller's fabric events: %s", exc)
    t0 = executor.t0 if executor is not None and executor.t0 is not None else 0.0
    records = injector.records(events, t0)
    faults.write_csv(out_dir, records)
    for r in records:
        log.info(
            "fault %d %s %s: injected %s s, detected +%s ms, rerouted in %s ms (%s), up %s s, "
            "restored in %s ms %s",
            r.index,
            r.kind,
            r.target,
            r.injected_s,
            r.detect_ms,
            r.reroute_ms,
            r.leaves_rerouted,
            r.up_s,
            r.restore_ms,
            r.detail,
        )
    failed = injector.error()
    return faults.summary_block(records), error or (
        f"fault injection: {failed}" if failed else None
    )


def _start_all(scen: Scenario, out_dir: Path, runtime: Path, stack: contextlib.ExitStack):
    """Controller, fabric (with its OVS) and agents, each registered for teardown."""

    t0 = time.monotonic()
    controller, meet, service = start_controller(scen, out_dir, runtime, stack)
    start = start_fabric if scen.switch == "ovs" else _start_bmv2_fabric
    fabric = start(scen.plan, runtime, meet, scen.levels, scen.queue_packets)
    stack.callback(fabric.stop)
    controller.wait_ready(START_TIMEOUT_S)  # every switch connected and routed
    agents = AgentSet(
        [fabric.host(h) for h in scen.plan.host_names()],
        runtime,
        DATA_PORT,
        log_dir=out_dir / "agents",
    )
    stack.callback(agents.stop)
    agents.start(START_TIMEOUT_S)
    apply_host_sysctls(fabric.host(h).pid for h in scen.plan.host_names())
    apply_host_gso(fabric.host_nics())
    bringup_s = time.monotonic() - t0
    log.info(
        "fabric up in %.1f s (%d switches, %d hosts)",
        bringup_s,
        len(scen.plan.switches),
        len(scen.plan.hosts),
    )
    return controller, agents, bringup_s, fabric, service


# How the switches pick a cross-leaf flow's spine: by the ECMP slot of its source port,
# the model's choice (OVS: controller.southbound.of_messages), or by their own hash
# (BMv2's crc16 action selector: not the model's; docs/bmv2.md).
ECMP_KIND = {"ovs": "source-port slots (the model's)", "bmv2": "crc16 5-tuple hash"}


def _prepare_iteration(scen: Scenario, agents, backend: EmulationBackend) -> dict:
    """Before the first release: the static levels' entries, and every connection the
    DAG's pairs need (as NCCL at communicator init).  Returns what the pools hold."""

    backend.preinstall()
    address = {h: agents.address(h) for h in scen.plan.host_names()}
    report = agents.connect(pool_orders(scen.dag, address, backend.slots, backend.n_slots))
    log.info(
        "connections up: %d in %d pools (per pair and ECMP slot) in %.2f s",
        report.connections,
        report.pairs,
        report.setup_s,
    )
    return {
        "pairs": report.pairs,
        "preopened": report.connections,
        "setup_s": round(report.setup_s, 3),
        "steered_flows": len(backend.slots),
        "ecmp": ECMP_KIND[scen.switch],
    }


def _calibrate(scen: Scenario, agents) -> dict | None:
    """The capacity check before the first release (coflowbed.emulation.calibrate)."""
    cal = calibrate.calibrate(agents, scen.plan, scen.dag, scen.switch)
    return None if cal is None else cal.to_dict()


def _start_bmv2_fabric(plan, run_dir: Path, ports, levels: int, queue_packets: int):
    """BMv2 switches (simple_switch_grpc), one gRPC socket each (imported only when used)."""

    return start_bmv2_fabric(
        plan, run_dir, ports, levels, queue_packets, ready_timeout=START_TIMEOUT_S
    )


def _save_counters(controller, out_dir: Path, ports_before: Ports) -> None:
    """Switch counters at the end of the run -> counters.json: ``ports`` counts the
    iteration's own traffic (the counters at the first release, bring-up and calibration
    burst, are subtracted and kept as ``ports_before_iteration``), ``meters`` and ``tags``
    are the coflows' own; tests cross-check host timings and bytes against them."""
    import json

    try:
        ports = controller.port_stats()
        counters = {
            **ports_to_wire(subtract_ports(ports, ports_before)),
            "ports_before_iteration": ports_to_wire(ports_before)["switches"],
            **meters_to_wire(controller.meter_stats()),
            **tags_to_wire(controller.tag_stats()),
        }
        counters["ports"] = counters.pop("switches")
    except (OSError, RuntimeError) as exc:
        log.warning("could not read switch counters: %s", exc)
        return
    (out_dir / "counters.json").write_text(json.dumps(counters, indent=1, sort_keys=True) + "\n")


def _ports_now(controller) -> Ports:
    """The switches' port counters now."""
    return controller.port_stats()


def subtract_ports(after: Ports, before: Ports) -> Ports:
    """Per switch and port: counters of ``after`` less those of ``before`` (0 if absent)."""
    return {
        sw: {port: c.minus(before.get(sw, {}).get(port)) for port, c in ports.items()}
        for sw, ports in after.items()
    }


def _backend(scen: Scenario, controller, agents) -> EmulationBackend:
    """The backend of the run: the scenario's job for the controller's scheduler, and
    controller and agents to run it on."""

    job = OpenJob(policy_spec(scen), scen.policy_rates == "pacing", tuple(scen.dag.coflows))
    scheduler_client = ResumableClient(controller.path, timeout=30.0)  # scheduling only
    return EmulationBackend(job, controller, agents, scen.plan, DATA_PORT, scheduler_client)


def _progress(backend: EmulationBackend, stack: contextlib.ExitStack, out_dir: Path, total: int):
    """Callback per finished coflow: the run's progress bar (coflows done, elapsed) and one
    line in the run folder's ``coflows.log`` (on the terminal with ``-v`` only)."""
    bar = stack.enter_context(progress.bar(total, "run", unit="coflow"))
    handler = logging.FileHandler(out_dir / COFLOW_LOG)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    coflow_log.addHandler(handler)
    stack.callback(handler.close)
    stack.callback(coflow_log.removeHandler, handler)

    def report(rec: CoflowRecord, done: int, total: int) -> None:
        rec.level = backend.levels.get(rec.coflow_id)
        bar.update(1)
        line = (
            f"[{done}/{total}] coflow {rec.coflow_id} ({rec.ctype}) done: CCT "
            f"{rec.cct_s:.3f} s, {rec.bytes} bytes, level {rec.level}"
        )
        coflow_log.info("%s", line)
        log.debug("%s", line)  # on the terminal too with -v

    return report


def _write(
    scen: Scenario,
    out_dir: Path,
    executor: DagExecutor | None,
    backend: EmulationBackend | None,
    error: str | None,
    info: dict,
) -> RunSummary:
    """Write result files; partial unless every coflow finished without error."""
    coflows = list(executor.coflow_records.values()) if executor else []
    flows = list(executor.flow_records.values()) if executor else []
    its = executor.iteration_records() if executor else []
    if backend is not None:
        _annotate_levels(coflows, backend)
    partial = error is not None or not coflows or any(c.finish_s is None for c in coflows)
    extra = {
        "scenario": scen.name,
        "policy": scen.policy,
        "levels": scen.levels,
        "switch": scen.switch,
        "byte_scale": scen.byte_scale,
        **info,
        "error": error,
        "fabric": {
            k: v for k, v in scen.plan.to_dict().items() if k not in ("hosts", "switches", "links")
        },
    }
    report = None if backend is None else backend.report
    if report is not None and report.write_s:
        lat = list(report.write_s)
        extra["level_change_s"] = {
            "count": len(lat),
            "median": percentile(lat, 50),
            "p95": percentile(lat, 95),
            "max": max(lat),
            "static_levels": report.static,
        }
    if report is not None and not report.static:
        extra["level_moves"] = {"up": report.moved_up, "down": report.moved_down}
    if backend is not None:
        extra["release"] = backend.times.summary()
        for f in flows:
            f.retrans_bytes = backend.retrans.get(f.flow_id)
        extra["retransmitted"] = retransmitted(flows)
    computes = executor.compute_records() if executor else []
    summary = write_results(out_dir, flows, coflows, its, partial, extra, computes)
    log.info(
        "results in %s (%s): avg CCT %s s, p95 %s s",
        out_dir,
        "PARTIAL" if partial else "complete",
        _fmt(summary.avg_cct_s),
        _fmt(summary.p95_cct_s),
    )
    return summary


def _annotate_levels(coflows: list[CoflowRecord], backend: EmulationBackend) -> None:
    """Record the last level (and rank) each coflow ran at: the controller's report of
    re-ranked coflows over the levels they were released at (all of them when the
    levels were fixed for the DAG)."""
    report = backend.report
    levels = {**backend.levels, **({} if report is None else report.levels)}
    for rec in coflows:
        rec.level = levels.get(rec.coflow_id)
        rank = None if report is None else report.ranks.get(rec.coflow_id)
        rec.rank = "" if rank is None else rank


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _interface_names(scen: Scenario) -> list[str]:
    """Root-namespace interfaces the fabric creates (switch side of every link)."""

    return interface_names(scen.plan)


@contextlib.contextmanager
def _signals_raise():
    """Turn SIGTERM (and SIGHUP) into an exception so the run unwinds and cleans up."""

    def handler(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _comm(pid: int) -> str:
    """The command line of ``pid``, shortened (for log lines)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80].strip()
    except OSError:
        return "?"


def _restore_env(old: str | None) -> None:
    if old is None:
        os.environ.pop(runstate.ENV_MARKER, None)
    else:
        os.environ[runstate.ENV_MARKER] = old


def _final_cleanup(state: runstate.RunState, runtime: Path) -> None:
    """Whatever the teardown missed: marked processes, interfaces, the registry entry."""
    stray = runstate.marked_pids(state.run_id)
    names = [_comm(p) for p in stray]
    leftovers = end_pids(stray)
    deleted = delete_interfaces(state.interfaces)
    if leftovers or deleted:
        log.warning(
            "clean-up ended %d stray processes %s and deleted %d interfaces",
            len(leftovers),
            names,
            len(deleted),
        )

    restore_sysctl(runtime)
    subprocess.run(["rm", "-rf", "--", str(runtime)], check=False)
    state.remove()
