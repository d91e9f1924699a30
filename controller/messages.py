"""The scheduling messages of the control API: what the orchestrator and the controller's
coflow scheduler say to each other, one frozen dataclass per message, shared by both
ends and serialised only at the socket (``to_wire`` / ``from_wire``, JSON objects that
reject unknown and missing keys).

    open_job   OpenJob     -> JobOpened    policy, pacing mode and the whole DAG
    register   Register    -> Registered   a released coflow: its tag, level, pair rates
    unregister Unregister  -> HostUpdates  a completed coflow
    progress   Progress    -> HostUpdates  bytes acknowledged per flow (clairvoyant policies)
                                           or a counter poll (policies with byte thresholds)
    close_job  CloseJob    -> JobReport    levels and ranks the coflows ran at, write times
    resume     Resume      -> Resumed      after a controller restart: the answers the old
                                           one decided that the requester did not get

``HostUpdates`` carry what the sending hosts must change for coflows already running:
socket priorities (``HostLevel``), the DSCP a coflow's packets carry (``HostMark``: a
level's code while its tag's entry is on its way to the switches, then the tag's) and,
in pacing mode, paced rates (``HostRate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.coflow_table import FlowRate
from controller.policies.interjob import InterJobSpec
from workload.dag import Coflow
from workload.dagjson import coflow_from_dict, coflow_to_dict
from workload.marking import tag_dscp
from workload.schema import SpecError

POLL_COUNTERS = "counters"  # the controller reads its tag counters (D-CLAS thresholds)
POLL_PROGRESS = "progress"  # the orchestrator sends the agents' acknowledged bytes (SEBF)


def _fields(d: Any, where: str, required: set[str]) -> dict:
    """``d`` as a dict with exactly the ``required`` keys (and ``op``, the request's own);
    ValueError naming ``where`` and the key otherwise."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: must be an object, got {type(d).__name__}")
    unknown = sorted(set(d) - required - {"op"})
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key")
    missing = sorted(required - set(d))
    if missing:
        raise ValueError(f"{where}.{missing[0]}: missing")
    return d


def _number(v: Any, where: str) -> float:
    """``v`` as a finite float; ValueError naming ``where``."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise ValueError(f"{where}: must be a number, got {v!r}")
    return float(v)


def _int(v: Any, where: str) -> int:
    """``v`` as an int (not a bool); ValueError naming ``where``."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{where}: must be an integer, got {v!r}")
    return v


def _strings(v: Any, where: str) -> tuple[str, ...]:
    """``v`` as a tuple of strings."""
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"{where}: must be a list of strings")
    return tuple(v)


def _coflow(v: Any, where: str) -> Coflow:
    """A coflow in its DAG-file form."""
    try:
        return coflow_from_dict(v, where)
    except SpecError as e:
        raise ValueError(str(e)) from None


@dataclass(frozen=True)
class PolicySpec:
    """Which policy the controller runs: a registered name and its parameters, or the
    scenario's ``static`` levels and per-host rates; ``plugins`` are Python files that
    register user policies (imported by the controller before the name is looked up)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    static_levels: Mapping[str, int] = field(default_factory=dict)
    static_rates_mbps: Mapping[str, float] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()
    inter_job: InterJobSpec | None = None  # several jobs: how they share the levels

    def to_wire(self) -> dict:
        """JSON form."""
        return {
            "name": self.name,
            "params": dict(self.params),
            "static_levels": dict(self.static_levels),
            "static_rates_mbps": dict(self.static_rates_mbps),
            "plugins": list(self.plugins),
            "inter_job": None if self.inter_job is None else self.inter_job.to_wire(),
        }

    @classmethod
    def from_wire(cls, d: Any, where: str = "policy") -> PolicySpec:
        """Parse the JSON form."""
        if isinstance(d, dict):  # optional: event logs recorded before several jobs lack it
            d = {"inter_job": None, **d}
        keys = {"name", "params", "static_levels", "static_rates_mbps", "plugins", "inter_job"}
        d = _fields(d, where, keys)
        if not isinstance(d["name"], str) or not isinstance(d["params"], dict):
            raise ValueError(f"{where}: name must be a string and params an object")
        levels = {
            str(k): _int(v, f"{where}.static_levels.{k}")
            for k, v in _mapping(d["static_levels"], f"{where}.static_levels").items()
        }
        rates = {
            str(k): _number(v, f"{where}.static_rates_mbps.{k}")
            for k, v in _mapping(d["static_rates_mbps"], f"{where}.static_rates_mbps").items()
        }
        inter = d["inter_job"]
        return cls(
            d["name"],
            dict(d["params"]),
            levels,
            rates,
            _strings(d["plugins"], f"{where}.plugins"),
            None if inter is None else InterJobSpec.from_wire(inter, f"{where}.inter_job"),
        )


def _mapping(v: Any, where: str) -> dict:
    """``v`` as a JSON object."""
    if not isinstance(v, dict):
        raise ValueError(f"{where}: must be an object")
    return v


@dataclass(frozen=True)
class OpenJob:
    """Start scheduling a job: the policy, whether per-pair rates are paced at the hosts
    (else metered in the switches), and every coflow of the DAG (identity-ranked
    policies fix the levels of all of them now)."""

    policy: PolicySpec
    pacing: bool
    coflows: tuple[Coflow, ...]

    def to_wire(self) -> dict:
        """JSON form."""
        return {
            "policy": self.policy.to_wire(),
            "pacing": self.pacing,
            "coflows": [coflow_to_dict(c) for c in self.coflows],
        }

    @classmethod
    def from_wire(cls, d: Any, where: str = "open_job") -> OpenJob:
        """Parse the JSON form."""
        d = _fields(d, where, {"policy", "pacing", "coflows"})
        if not isinstance(d["pacing"], bool) or not isinstance(d["coflows"], list):
            raise ValueError(f"{where}: pacing must be a boolean and coflows a list")
        return cls(
            PolicySpec.from_wire(d["policy"], f"{where}.policy"),
            d["pacing"],
            tuple(_coflow(c, f"{where}.coflows[{i}]") for i, c in enumerate(d["coflows"])),
        )


@dataclass(frozen=True)
class Assignment:
    """A coflow's tag and priority level; ``dscps``: the senders that mark it with
    another DSCP than the tag's own (``controller.tags``), and theirs."""

    tag: int
    level: int
    dscps: tuple[tuple[str, int], ...] = ()

    def dscp_of(self, host: str) -> int:
        """The DSCP ``host`` marks the coflow's packets with."""
        return dict(self.dscps).get(host, tag_dscp(self.tag))


@dataclass(frozen=True)
class JobOpened:
    """The answer to ``OpenJob``: with an identity-ranked policy every coflow's
    assignment (``fixed``; releases then need no round trip, as nothing is written
    while the job runs), else None; and what the orchestrator should poll, if anything
    (``POLL_COUNTERS``, ``POLL_PROGRESS`` or None)."""

    fixed: Mapping[str, Assignment] | None
    poll: str | None

    def to_wire(self) -> dict:
        """JSON form."""
        fixed = (
            None if self.fixed is None else {cid: [a.tag, a.level] for cid, a in self.fixed.items()}
        )
        return {"fixed": fixed, "poll": self.poll}

    @classmethod
    def from_wire(cls, d: Any, where: str = "job_opened") -> JobOpened:
        """Parse the JSON form."""
        d = _fields(d, where, {"fixed", "poll"})
        if d["poll"] not in (None, POLL_COUNTERS, POLL_PROGRESS):
            raise ValueError(f"{where}.poll: unknown poll kind {d['poll']!r}")
        fixed = (
            None
            if d["fixed"] is None
            else {
                cid: Assignment(
                    _int(tl[0], f"{where}.fixed.{cid}"), _int(tl[1], f"{where}.fixed.{cid}")
                )
                for cid, tl in _mapping(d["fixed"], f"{where}.fixed").items()
            }
        )
        return cls(fixed, d["poll"])


@dataclass(frozen=True)
class HostLevel:
    """Sockets of ``tag`` on ``host`` move to priority ``level``."""

    host: str
    tag: int
    level: int


@dataclass(frozen=True)
class HostRate:
    """Pacing: flows of ``tag`` from ``src`` to ``dst`` are paced at ``rate_mbps``
    (None: unpaced)."""

    src: str
    tag: int
    dst: str
    rate_mbps: float | None


@dataclass(frozen=True)
class HostMark:
    """Packets of ``tag`` from ``host`` are marked with ``dscp`` from now on; ``unpace``:
    and no longer paced (the switches' per-pair meters took over from the host)."""

    host: str
    tag: int
    dscp: int
    unpace: bool = False


@dataclass(frozen=True)
class HostUpdates:
    """What sending hosts must change for coflows already running."""

    levels: tuple[HostLevel, ...] = ()
    rates: tuple[HostRate, ...] = ()
    marks: tuple[HostMark, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.levels or self.rates or self.marks)

    def to_wire(self) -> dict:
        """JSON form."""
        return {
            "levels": [[u.host, u.tag, u.level] for u in self.levels],
            "rates": [[u.src, u.tag, u.dst, u.rate_mbps] for u in self.rates],
            "marks": [[u.host, u.tag, u.dscp, u.unpace] for u in self.marks],
        }

    @classmethod
    def from_wire(cls, d: Any, where: str = "hosts") -> HostUpdates:
        """Parse the JSON form."""
        d = _fields(d, where, {"levels", "rates", "marks"})
        try:
            levels = tuple(
                HostLevel(str(h), _int(t, where), _int(lv, where)) for h, t, lv in d["levels"]
            )
            rates = tuple(
                HostRate(str(s), _int(t, where), str(dst), None if r is None else _number(r, where))
                for s, t, dst, r in d["rates"]
            )
            marks = tuple(
                HostMark(str(h), _int(t, where), _int(c, where), bool(u))
                for h, t, c, u in d["marks"]
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: malformed host updates: {e}") from None
        return cls(levels, rates, marks)


@dataclass(frozen=True)
class Register:
    """Coflow ``coflow`` was released at ``now`` (executor seconds); ``done_flows`` are
    flows that delivered everything since the last message (clairvoyant policies see 0
    left for them)."""

    coflow: Coflow
    now: float
    done_flows: tuple[str, ...] = ()

    def to_wire(self) -> dict:
        """JSON form."""
        return {
            "coflow": coflow_to_dict(self.coflow),
            "now": self.now,
            "done_flows": list(self.done_flows),
        }

    @classmethod
    def from_wire(cls, d: Any, where: str = "register") -> Register:
        """Parse the JSON form."""
        d = _fields(d, where, {"coflow", "now", "done_flows"})
        return cls(
            _coflow(d["coflow"], f"{where}.coflow"),
            _number(d["now"], f"{where}.now"),
            _strings(d["done_flows"], f"{where}.done_flows"),
        )


@dataclass(frozen=True)
class Registered:
    """The answer to ``Register``: the coflow's assignment, the paced rate of each of its
    (src, dst) pairs (pacing mode), and the host updates the decision made for the
    others.  ``written``: its own entry is in the switches.  Otherwise (an entry without
    a meter) it is on its way: the assignment's ``dscps`` mark the coflow with its
    level's code meanwhile, and a ``HostMark`` in a later answer moves it to the tag's."""

    assignment: Assignment
    pair_rates: tuple[FlowRate, ...] = ()
    hosts: HostUpdates = HostUpdates()
    written: bool = True

    def to_wire(self) -> dict:
        """JSON form."""
        return {
            "tag": self.assignment.tag,
            "level": self.assignment.level,
            "dscps": dict(self.assignment.dscps),
            "pair_rates": [[p.src, p.dst, p.rate_mbps] for p in self.pair_rates],
            "hosts": self.hosts.to_wire(),
            "written": self.written,
        }

    @classmethod
    def from_wire(cls, d: Any, where: str = "registered") -> Registered:
        """Parse the JSON form."""
        d = _fields(d, where, {"tag", "level", "dscps", "pair_rates", "hosts", "written"})
        if not isinstance(d["written"], bool):
            raise ValueError(f"{where}.written: must be true or false")
        try:
            pairs = tuple(
                FlowRate(str(s), str(dst), _number(r, where)) for s, dst, r in d["pair_rates"]
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}.pair_rates: malformed: {e}") from None
        return cls(
            Assignment(
                _int(d["tag"], f"{where}.tag"),
                _int(d["level"], f"{where}.level"),
                tuple(
                    (str(h), _int(v, f"{where}.dscps.{h}"))
                    for h, v in sorted(_mapping(d["dscps"], f"{where}.dscps").items())
                ),
            ),
            pairs,
            HostUpdates.from_wire(d["hosts"], f"{where}.hosts"),
            d["written"],
        )

    def pair_rate(self, src: str, dst: str) -> float | None:
        """The rate a new flow src -> dst of the coflow starts at (None: unpaced)."""
        return next((p.rate_mbps for p in self.pair_rates if (p.src, p.dst) == (src, dst)), None)


@dataclass(frozen=True)
class Unregister:
    """Coflow ``coflow_id`` completed at ``now``."""

    coflow_id: str
    now: float
    done_flows: tuple[str, ...] = ()

    def to_wire(self) -> dict:
        """JSON form."""
        return {"coflow_id": self.coflow_id, "now": self.now, "done_flows": list(self.done_flows)}

    @classmethod
    def from_wire(cls, d: Any, where: str = "unregister") -> Unregister:
        """Parse the JSON form."""
        d = _fields(d, where, {"coflow_id", "now", "done_flows"})
        if not isinstance(d["coflow_id"], str):
            raise ValueError(f"{where}.coflow_id: must be a string")
        return cls(
            d["coflow_id"],
            _number(d["now"], f"{where}.now"),
            _strings(d["done_flows"], f"{where}.done_flows"),
        )


@dataclass(frozen=True)
class Progress:
    """A poll at ``now``: bytes acknowledged so far per flow id (empty for a counter
    poll, where the controller reads its own tag counters)."""

    now: float
    acked: Mapping[str, int] = field(default_factory=dict)
    done_flows: tuple[str, ...] = ()

    def to_wire(self) -> dict:
        """JSON form."""
        return {"now": self.now, "acked": dict(self.acked), "done_flows": list(self.done_flows)}

    @classmethod
    def from_wire(cls, d: Any, where: str = "progress") -> Progress:
        """Parse the JSON form."""
        d = _fields(d, where, {"now", "acked", "done_flows"})
        acked = {
            str(k): _int(v, f"{where}.acked.{k}")
            for k, v in _mapping(d["acked"], f"{where}.acked").items()
        }
        return cls(
            _number(d["now"], f"{where}.now"),
            acked,
            _strings(d["done_flows"], f"{where}.done_flows"),
        )


@dataclass(frozen=True)
class CloseJob:
    """The job is over: report and forget it (entries stay until the fabric stops)."""

    def to_wire(self) -> dict:
        """JSON form (no fields)."""
        return {}

    @classmethod
    def from_wire(cls, d: Any, where: str = "close_job") -> CloseJob:
        """Parse the JSON form."""
        _fields(d, where, set())
        return cls()


@dataclass(frozen=True)
class JobReport:
    """What the job ran at: whether levels were fixed for the whole DAG, the last level
    and rank of every coflow, the seconds each switch write took (request to last
    barrier), and how often an active coflow's level was moved up and down."""

    static: bool
    levels: Mapping[str, int]
    ranks: Mapping[str, str]
    write_s: tuple[float, ...] = ()
    moved_up: int = 0
    moved_down: int = 0

    def to_wire(self) -> dict:
        """JSON form."""
        return {
            "static": self.static,
            "levels": dict(self.levels),
            "ranks": dict(self.ranks),
            "write_s": list(self.write_s),
            "moved_up": self.moved_up,
            "moved_down": self.moved_down,
        }

    @classmethod
    def from_wire(cls, d: Any, where: str = "job_report") -> JobReport:
        """Parse the JSON form."""
        d = _fields(d, where, {"static", "levels", "ranks", "write_s", "moved_up", "moved_down"})
        levels = {
            str(k): _int(v, f"{where}.levels.{k}")
            for k, v in _mapping(d["levels"], f"{where}.levels").items()
        }
        ranks = {str(k): str(v) for k, v in _mapping(d["ranks"], f"{where}.ranks").items()}
        if not isinstance(d["write_s"], list):
            raise ValueError(f"{where}.write_s: must be a list")
        return cls(
            bool(d["static"]),
            levels,
            ranks,
            tuple(_number(x, f"{where}.write_s") for x in d["write_s"]),
            _int(d["moved_up"], f"{where}.moved_up"),
            _int(d["moved_down"], f"{where}.moved_down"),
        )


@dataclass(frozen=True)
class Resume:
    """To a controller restarted mid-job (``--resume``): the requester had ``answered``
    answers to its scheduling requests before the old controller went away."""

    answered: int

    def to_wire(self) -> dict:
        """JSON form."""
        return {"answered": self.answered}

    @classmethod
    def from_wire(cls, d: Any, where: str = "resume") -> Resume:
        """Parse the JSON form."""
        d = _fields(d, where, {"answered"})
        answered = _int(d["answered"], f"{where}.answered")
        if answered < 0:
            raise ValueError(f"{where}.answered: must be >= 0, got {answered}")
        return cls(answered)


@dataclass(frozen=True)
class Resumed:
    """The answers the old controller had decided beyond ``Resume.answered`` (rebuilt
    from its event log), in request order, each the API reply its request would have
    had (the requester parses it with ``parse_reply`` against that request); the
    requester sends the requests after those again."""

    replies: tuple[dict, ...]

    def to_wire(self) -> dict:
        """JSON form."""
        return {"replies": list(self.replies)}

    @classmethod
    def from_wire(cls, d: Any, where: str = "resumed") -> Resumed:
        """Parse the JSON form."""
        d = _fields(d, where, {"replies"})
        raw = d["replies"]
        if not isinstance(raw, list) or not all(isinstance(r, dict) and "ok" in r for r in raw):
            raise ValueError(f"{where}.replies: must be a list of API replies")
        return cls(tuple(raw))


Request = OpenJob | Register | Unregister | Progress | CloseJob
Reply = JobOpened | Registered | HostUpdates | JobReport
REQUESTS: dict[str, type[Request]] = {
    "open_job": OpenJob,
    "register": Register,
    "unregister": Unregister,
    "progress": Progress,
    "close_job": CloseJob,
}
REPLIES: dict[str, type[Reply]] = {
    "open_job": JobOpened,
    "register": Registered,
    "unregister": HostUpdates,
    "progress": HostUpdates,
    "close_job": JobReport,
}
OP_OF: dict[type[Request], str] = {cls: op for op, cls in REQUESTS.items()}


def request_wire(msg: Request) -> dict:
    """The control API request carrying ``msg``."""
    return {"op": OP_OF[type(msg)], **msg.to_wire()}


def parse_reply(msg: Request, reply: dict) -> Reply:
    """The typed answer to ``msg`` from its API reply (``ok`` dropped)."""
    body = {k: v for k, v in reply.items() if k != "ok"}
    return REPLIES[OP_OF[type(msg)]].from_wire(body)
