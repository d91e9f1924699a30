"""Scenario files (YAML): fabric, switch kind, queues, policy, workload, seeds.

Everything is validated before anything starts; see docs/scenarios.md for the schema.
The workload is one of: an explicit ``coflows`` list, an LLM ``job`` (preset name or job
YAML), several ``jobs`` (coflowbed.experiment.jobs), or a coflow-benchmark ``trace``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coflowbed.core.config import Section, choice, integer, load_yaml, number, string
from coflowbed.core.errors import UserError
from coflowbed.experiment.faults import Fault, parse_faults
from coflowbed.experiment.jobs import parse_jobs
from coflowbed.experiment.overrides import Overrides, apply_overrides, blamed_on_overrides
from coflowbed.experiment.simfabric import SimFabric, parse_sim_fabric
from coflowbed.experiment.workload_import import dag_from_scenario
from coflowbed.sim.control import check_control_delay
from controller import policies
from controller.policies.interjob import InterJobSpec
from controller.policies.plugins import import_plugin
from topo.plan import (
    DEFAULT_MTU,
    MAX_HOSTS_PER_LEAF,
    MAX_LEAVES,
    MAX_MTU,
    MAX_SPINES,
    MIN_MTU,
    FabricPlan,
)
from workload import ecmp, fbtrace, generate
from workload.dag import Coflow, CoflowIdentity, CoflowType, Dag, Flow, merge_pair_flows
from workload.jobspec import load_job
from workload.marking import MAX_LEVELS
from workload.presets import job_file, unknown_job
from workload.schema import did_you_mean, typos_first

SHIPPED_SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SWITCH_KINDS = ("ovs", "bmv2")
# sample_period_s (run --sample-period): seconds between the emulator's samples of port
# counters and queues; 0: off.  Off by default: with it on, two of four small-moe Hermod
# runs were 12-24 % slower (docs/results.md).
DEFAULT_PERIOD_S = 0.0
MIN_SAMPLE_PERIOD_S = 0.05  # a tc dump of every port takes a few ms
# How per-flow rates a policy allocates (SEBF's MADD) are enforced: switch meters (drop
# band), or pacing at the sending host (SO_MAX_PACING_RATE), as Varys throttles senders.
POLICY_RATES = ("meters", "pacing")
FABRIC_KINDS = ("leafspine", "rail")
# Link options Mininet's TCLink offers but this kernel cannot do (no netem): say so.
UNSUPPORTED_LINK_KEYS = dict.fromkeys(
    ("delay", "delay_ms", "loss", "loss_pct", "jitter", "jitter_ms", "max_queue_size"),
    "not supported: the kernel has no netem qdisc, so link delay/loss/jitter cannot be emulated",
)


@dataclass
class Scenario:
    """A validated scenario; ``dag`` holds the coflows (and computes) to run."""

    source: str
    name: str
    plan: FabricPlan
    levels: int
    queue_packets: int
    switch: str
    policy: str
    policy_params: dict
    seed: int
    timeout_s: float
    dag: Dag
    static_levels: dict[str, int] = field(default_factory=dict)
    static_rates_mbps: dict[str, float] = field(default_factory=dict)
    raw: dict = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)
    policy_rates: str = "meters"
    faults: tuple[Fault, ...] = ()
    sample_period_s: float = DEFAULT_PERIOD_S  # 0: no sampling (coflowbed.emulation.sampler)
    sim_fabric: SimFabric | None = None  # simulator-only fabric (the DAG is on its hosts)
    inter_job: InterJobSpec | None = None  # workload.jobs: how the jobs share the levels
    # The model's decision -> level installed, s (simulator only; docs/simulator.md)
    sim_control_delay_s: float = 0.0

    @property
    def byte_scale(self) -> float:
        """Factor real bytes were multiplied by to fit the emulated links."""
        return float(self.dag.meta.get("byte_scale", 1.0))


def find_scenario(ref: str | Path) -> Path:
    """A scenario file: ``ref`` itself, or the shipped ``<name>.yaml`` when ``ref`` is a
    bare name that is no file here (``"mechanism"``); UserError when it is neither
    (listing the shipped scenarios for a bare name)."""
    path = Path(ref)
    shipped = SHIPPED_SCENARIOS / f"{ref}.yaml"
    if not path.exists() and path.name == str(ref) and shipped.exists():
        return shipped
    if not path.exists() and path.name != str(ref):
        raise UserError(str(ref), None, "no such file")
    if not path.exists():  # a bare name: which ones exist
        names = shipped_scenarios()
        hint = did_you_mean(str(ref), names)
        raise UserError(
            str(ref), None, f"no such file or shipped scenario{hint} (shipped: {', '.join(names)})"
        )
    return path


def shipped_scenarios() -> list[str]:
    """Names of the scenarios shipped in coflowbed/scenarios/."""
    return sorted(p.stem for p in SHIPPED_SCENARIOS.glob("*.yaml"))


def load_scenario(
    path: Path | str, overrides: Overrides | None = None, plugins: Sequence[Path] = ()
) -> Scenario:
    """Read and validate a scenario file (or shipped scenario name, ``find_scenario``),
    with ``overrides`` (dotted keys) set first and the policy files ``plugins``
    (absolute) added to its own; UserError (one line) on any problem, naming the
    override when it is one."""
    path = find_scenario(path)
    with blamed_on_overrides(overrides, str(path)):
        raw = apply_overrides(load_yaml(path), overrides or {}, str(path))
        if plugins and isinstance(raw, dict):
            own = raw.get("plugins") or []
            raw = {**raw, "plugins": [*own, *(str(f) for f in plugins if str(f) not in own)]}
        return scenario_from_raw(raw, path)


def scenario_from_raw(raw: Any, path: Path, source: str | None = None) -> Scenario:
    """Validate a scenario mapping as read from ``path`` (relative paths in it are
    relative to ``path``'s folder; errors name ``source``, default ``path``)."""
    with typos_first():
        top = Section(raw, source or str(path))
        scen = _parse(top, path)
        top.done()
    return scen


def _parse(top: Section, path: Path) -> Scenario:
    name = top.get("name", path.stem, string)
    plugins = _load_plugins(top, path)
    plan = _parse_fabric(top.section("fabric"))
    levels = top.get("levels", MAX_LEVELS, integer(1, MAX_LEVELS))
    queue_packets = top.get("queue_packets", 100, integer(2, 100000))
    switch = top.get("switch", "ovs", choice(SWITCH_KINDS))
    if switch == "bmv2" and plan.nics > 1:
        raise top.fail(
            "switch", "a rail fabric runs on ovs only (the BMv2 fabric has one NIC per host)"
        )
    policy, params = _parse_policy(top)
    seed = top.get("seed", 1, integer(0))
    timeout_s = top.get("timeout_s", 600.0, number(positive=True))
    policy_rates = top.get("policy_rates", "meters", choice(POLICY_RATES))
    sim = parse_sim_fabric(top.section("sim_fabric")) if top.has("sim_fabric") else None
    wl = top.section("workload")
    inter_job = None
    static_levels: dict[str, int] = {}
    rates: dict[str, float] = {}
    if wl.has("jobs"):
        dag, inter_job = _parse_jobs(wl, plan, path, sim)
    else:
        dag, static_levels, rates, sim = _parse_workload(wl, plan, levels, path, sim)
    if policy == "static" and not static_levels:
        raise top.fail("policy", "'static' needs a coflows list with a level on each coflow")
    faults = parse_faults(top, plan, (cf.coflow_id for cf in dag.coflows), timeout_s)
    period = top.get("sample_period_s", DEFAULT_PERIOD_S, number(lo=0.0, hi=60.0))
    if 0 < period < MIN_SAMPLE_PERIOD_S:
        raise top.fail("sample_period_s", f"must be 0 (off) or at least {MIN_SAMPLE_PERIOD_S} s")
    if faults and sim is not None:
        raise top.fail("faults", "link faults need the emulated fabric, not sim_fabric")
    return Scenario(
        str(path),
        name,
        plan,
        levels,
        queue_packets,
        switch,
        policy,
        params,
        seed,
        timeout_s,
        dag,
        static_levels,
        rates,
        dict(top.data),
        plugins,
        policy_rates,
        faults,
        period,
        sim,
        inter_job,
        top.get("sim_control_delay_s", 0.0, check_control_delay),
    )


def _load_plugins(top: Section, path: Path) -> list[str]:
    """Import the scenario's ``plugins`` (Python files, relative to the scenario) so the
    policies they register with ``@controller.policies.register`` can be named."""
    items = top.get("plugins", [])
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise top.fail("plugins", "must be a list of Python file paths")
    loaded = []
    for i, item in enumerate(items):
        file = (path.parent / item).resolve()
        try:
            import_plugin(file)
        except Exception as exc:  # any error in user code: report it as bad input
            raise UserError(
                str(path), f"plugins[{i}]", f"cannot import {file}: {type(exc).__name__}: {exc}"
            ) from None
        loaded.append(str(file))
    return loaded


def _parse_fabric(sec: Section) -> FabricPlan:
    """The emulated ``fabric``: a leaf-spine, or a rail fabric of servers with NICs."""
    kind = sec.get("kind", "leafspine", choice(FABRIC_KINDS))
    spines = sec.need("spines", integer(1, MAX_SPINES))
    if kind == "rail":  # leaf i is NIC i's rail; every leaf holds one NIC per server
        nics = sec.need("nics", integer(2, MAX_LEAVES))
        leaves, hpl = nics, sec.need("hosts", integer(1, MAX_HOSTS_PER_LEAF))
    else:
        nics = 1
        leaves = sec.need("leaves", integer(1, MAX_LEAVES))
        hpl = sec.need("hosts_per_leaf", integer(1, MAX_HOSTS_PER_LEAF))
    host_bw = sec.need("host_bw_mbps", number(positive=True, hi=10000))
    fabric_bw = sec.get("fabric_bw_mbps", host_bw, number(positive=True, hi=10000))
    mtu = sec.get("mtu", DEFAULT_MTU, integer(MIN_MTU, MAX_MTU))
    seed = sec.get("ecmp_seed", 0, integer(0, ecmp.MAX_SEED))
    sec.done(UNSUPPORTED_LINK_KEYS)
    return FabricPlan(spines, leaves, hpl, host_bw, fabric_bw, mtu, nics, seed)


def _parse_policy(top: Section) -> tuple[str, dict]:
    value = top.get("policy", "static")
    if isinstance(value, str):
        return _check_policy_name(top, value), {}
    sec = top.section("policy")
    name = _check_policy_name(top, sec.need("name", string))
    params = sec.get("params", {}, _mapping)
    sec.done()
    return name, params


def _check_policy_name(top: Section, name: str) -> str:
    """Known policy names: 'static' plus whatever the policy registry offers."""
    known = ["static", *policies.names()]
    if name not in known:
        hint = did_you_mean(name, known)
        raise top.fail("policy", f"unknown policy {name!r}{hint} (known: {', '.join(known)})")
    return name


def _mapping(v: Any) -> dict:
    if not isinstance(v, dict):
        raise ValueError(f"must be a mapping, got {v!r}")
    return v


def _parse_workload(
    sec: Section, plan: FabricPlan, levels: int, path: Path, sim: SimFabric | None
) -> tuple[Dag, dict, dict, SimFabric | None]:
    """The DAG (on the emulated plan's hosts, or on ``sim``'s, then sized to the job),
    static levels and rates, and the sized ``sim``."""
    kinds = [k for k in ("coflows", "job", "trace", "import") if sec.has(k)]
    if len(kinds) != 1:
        raise UserError(
            str(path), "workload", "needs exactly one of coflows, job, jobs, trace, import"
        )
    if kinds[0] == "job":
        dag, sim = _parse_job(sec, plan, path, sim)
        lv: dict[str, int] = {}
        rates: dict[str, float] = {}
    else:
        if sim is not None and not sim.hosts:
            raise UserError(str(path), "sim_fabric.hosts", f"needed with a {kinds[0]} workload")
        hosts = sim.job_hosts() if sim else plan.host_names()
        if kinds[0] == "coflows":
            dag, lv, rates = _parse_coflows(sec, hosts, levels)
        elif kinds[0] == "import":
            dag, lv, rates = _parse_import(sec, hosts, path), {}, {}
        else:
            dag, lv, rates = _parse_trace(sec, hosts, path), {}, {}
    sec.done()
    return dag, lv, rates, sim


def _parse_jobs(
    sec: Section, plan: FabricPlan, path: Path, sim: SimFabric | None
) -> tuple[Dag, InterJobSpec]:
    """Several jobs on the emulated plan's hosts (coflowbed.experiment.jobs)."""
    others = [k for k in ("coflows", "job", "trace", "import") if sec.has(k)]
    if others:
        raise sec.fail("jobs", f"cannot be combined with {others[0]}")
    if sim is not None:
        raise UserError(str(path), "sim_fabric", "not supported with workload.jobs")
    multi = parse_jobs(sec, plan, path)
    sec.done()
    return multi.dag, multi.inter_job


def _parse_coflows(sec: Section, host_list: list[str], levels: int) -> tuple[Dag, dict, dict]:
    items = sec.get("coflows")
    if not isinstance(items, list) or not items:
        raise sec.fail("coflows", "must be a non-empty list")
    hosts = set(host_list)
    coflows: list[Coflow] = []
    lv: dict[str, int] = {}
    rates: dict[str, float] = {}
    for i, item in enumerate(items):
        cs = Section(item, sec.source, f"workload.coflows[{i}]")
        cf, level, rate = _parse_one_coflow(cs, i, hosts, levels)
        if any(c.coflow_id == cf.coflow_id for c in coflows):
            raise cs.fail("id", f"duplicate coflow id {cf.coflow_id!r}")
        coflows.append(cf)
        if level is not None:
            lv[cf.coflow_id] = level
        if rate is not None:
            rates[cf.coflow_id] = rate
    return (
        Dag(
            coflows=coflows,
            meta={
                "byte_scale": sec.get("byte_scale", 1.0, number(positive=True)),
                "workload": "coflows",
            },
        ),
        lv,
        rates,
    )


def _parse_one_coflow(cs: Section, i: int, hosts: set[str], levels: int):
    cid = str(cs.get("id", f"c{i + 1}"))
    arrival = cs.get("arrival_s", 0.0, number(lo=0))
    level = cs.get("level", None, integer(0, levels - 1))
    rate = cs.get("rate_mbps", None, number(positive=True))
    ctype = CoflowType(cs.get("type", "OTHER", choice([t.value for t in CoflowType])))
    ident = CoflowIdentity(
        ctype=ctype, mid=cs.get("mid", 0, integer(0)), lid=cs.get("lid", 0, integer(0))
    )
    flows_raw = cs.get("flows")
    if not isinstance(flows_raw, list) or not flows_raw:
        raise cs.fail("flows", "must be a non-empty list of {src, dst, bytes}")
    flows = tuple(
        _parse_flow(Section(fr, cs.source, f"{cs.path}.flows[{j}]"), f"{cid}.f{j}", hosts)
        for j, fr in enumerate(flows_raw)
    )
    cs.done()
    return Coflow(cid, flows, ident, release_s=arrival), level, rate


def _parse_flow(fs: Section, flow_id: str, hosts: set[str]) -> Flow:
    def host(v: Any) -> str:
        if v not in hosts:
            raise ValueError(f"unknown host {v!r} (the fabric has {', '.join(sorted(hosts))})")
        return v

    src, dst = fs.need("src", host), fs.need("dst", host)
    nbytes = fs.need("bytes", integer(1))
    if src == dst:
        raise fs.fail("dst", f"same host as src ({src})")
    fs.done()
    return Flow(flow_id, src, dst, nbytes)


def _parse_job(
    sec: Section, plan: FabricPlan, path: Path, sim: SimFabric | None
) -> tuple[Dag, SimFabric | None]:
    """An LLM job: a preset name or a job YAML path (relative to the scenario), on the
    plan's hosts or on ``sim`` sized to what the job needs."""
    ref = sec.get("job", None, string)
    job_path = job_file(ref, path.parent)
    if job_path is None:
        raise sec.fail("job", unknown_job(ref))
    overrides = sec.get("overrides", {}, _mapping)
    try:
        job = load_job(job_path, overrides, (sec.source, f"{sec.path}.overrides"))
        sim = sim.sized(job.hosts_needed) if sim else None
        return generate(job, *_job_hosts(plan, sim)), sim
    except UserError:
        raise  # already names the job file and key
    except ValueError as exc:
        raise UserError(str(job_path), None, str(exc)) from None


def _job_hosts(plan: FabricPlan, sim: SimFabric | None) -> tuple[list[str], int, int]:
    """Hosts a job is placed on, with NICs and job-host slots per server: ``sim``'s,
    or the emulated plan's (a rail plan's servers, whose NICs are the plan's hosts)."""
    if sim is not None:
        return sim.job_hosts(), (sim.nics if sim.kind == "rail" else 1), sim.slots
    return plan.server_names(), plan.nics, 1


def _parse_import(sec: Section, hosts: list[str], path: Path) -> Dag:
    """A SimAI/AICB or ASTRA-sim workload file (coflowbed.experiment.workload_import)."""
    return dag_from_scenario(sec, hosts, path)


def _parse_trace(sec: Section, hosts: list[str], path: Path) -> Dag:
    """A coflow-benchmark trace mapped onto the fabric's hosts (docs/workloads.md)."""
    ts = sec.section("trace")
    trace_path = path.parent / ts.need("path", string)
    opts = {
        "limit": ts.get("coflows", None, integer(1)),
        "skip": ts.get("skip", 0, integer(0)),
        "time_scale": ts.get("time_scale", 1.0, number(positive=True)),
        "byte_scale": ts.get("byte_scale", 1.0, number(positive=True)),
    }
    ts.done()
    try:
        trace = fbtrace.read_trace(trace_path)
        dag = fbtrace.to_dag(trace, hosts, **opts)
    except ValueError as exc:
        raise UserError(str(trace_path), None, str(exc)) from None
    # one connection per host pair and coflow, as a host would open (docs/scenarios.md)
    dag.coflows = [merge_pair_flows(cf) for cf in dag.coflows]
    return dag
