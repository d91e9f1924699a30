"""Placement of ranks on hosts.

A host is one server of ``gpus_per_host`` GPUs.  Ranks are numbered TP fastest, then
DP, then PP (Megatron's order), and packed onto hosts in the order of the host list:
TP groups never leave a host, a host holds ``k = gpus_per_host / tp`` consecutive DP
ranks of one pipeline stage, and stage ``i`` gets the i-th block of
``hosts_per_stage`` hosts.  ``placement.stage_hosts`` in the job overrides this.

A host may be one of ``slots`` GPU slots of a server with several NICs (a
rail-optimised fabric): GPU g of a server sends on NIC ``g mod nics`` (``workload.nics``);
``Placement.endpoint`` names the NIC endpoints that flows run between.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from workload.jobspec import JobSpec
from workload.nics import NicMap, endpoint_name, slot_of
from workload.schema import SpecError

log = logging.getLogger("workload.placement")


@dataclass(frozen=True, slots=True)
class Placement:
    """Hosts of each pipeline stage; ``stage_hosts[i][j]`` holds DP ranks
    ``j*k .. j*k+k-1`` of stage i (k = ``ranks_per_host``)."""

    stage_hosts: tuple[tuple[str, ...], ...]
    ranks_per_host: int
    nics: int = 1  # NICs per server
    slots: int = 1  # hosts (GPU slots) per server

    @property
    def multi(self) -> bool:
        """Whether flows need the per-GPU NIC model (several NICs or slots)."""
        return self.nics > 1 or self.slots > 1

    def host(self, stage: int, j: int) -> str:
        """The j-th host of ``stage``."""
        return self.stage_hosts[stage][j]

    def endpoint(self, stage: int, e: int) -> str:
        """The NIC endpoint of stage-local endpoint index ``e`` (slot e // nics)."""
        server, _ = slot_of(self.stage_hosts[stage][e // self.nics], self.slots)
        return endpoint_name(server, e % self.nics, self.nics)

    def endpoints(self, stage: int) -> tuple[str, ...]:
        """Every endpoint of ``stage`` by stage-local index (its hosts, one NIC each)."""
        if not self.multi:
            return self.stage_hosts[stage]
        n = len(self.stage_hosts[stage]) * self.nics
        return tuple(self.endpoint(stage, e) for e in range(n))

    def nic_map(self, stage: int, tp: int) -> NicMap:
        """GPU -> NIC map of ``stage`` for TP degree ``tp``."""
        return NicMap.of(self.stage_hosts[stage], self.nics, tp, self.ranks_per_host, self.slots)


def generic_hosts(n: int) -> list[str]:
    """Host names ``h0 .. h{n-1}`` for simulations without a concrete fabric."""
    return [f"h{i}" for i in range(n)]


def place(job: JobSpec, hosts: Sequence[str] | None, nics: int = 1, slots: int = 1) -> Placement:
    """Placement of ``job`` on ``hosts`` (slots of servers with ``nics`` NICs, ``slots``
    slots each; default packing or the job's explicit one).  ``hosts=None`` is allowed
    only with an explicit placement."""
    _check_nics(job, nics, slots)
    explicit = job.placement.stage_hosts
    if explicit is not None:
        if hosts is not None:
            known = set(hosts)
            for i, row in enumerate(explicit):
                for h in row:
                    if h not in known:
                        raise SpecError(
                            job.source,
                            f"placement.stage_hosts[{i}]",
                            f"host {h!r} is not among the given hosts",
                        )
        return Placement(explicit, job.ranks_per_host, nics, slots)
    if hosts is None:
        raise ValueError("place: no hosts given and the job has no placement.stage_hosts")
    hosts = list(hosts)
    if len(set(hosts)) != len(hosts):
        raise ValueError("place: host list has duplicates")
    need, per = job.hosts_needed, job.hosts_per_stage
    if len(hosts) < need:
        raise SpecError(
            job.source,
            "placement",
            f"job needs {need} hosts "
            f"(tp*pp*dp={job.world_gpus} GPUs / gpus_per_host="
            f"{job.placement.gpus_per_host}), got {len(hosts)}",
        )
    if len(hosts) > need:
        log.info("job %s uses %d of %d hosts", job.name, need, len(hosts))
    rows = tuple(tuple(hosts[i * per : (i + 1) * per]) for i in range(job.parallelism.pp))
    return Placement(rows, job.ranks_per_host, nics, slots)


def _check_nics(job: JobSpec, nics: int, slots: int) -> None:
    """SpecError unless every NIC of a server has a GPU (1 <= nics <= GPUs per server)."""
    gpus = job.placement.gpus_per_host * slots
    if slots < 1 or not 1 <= nics <= gpus:
        raise SpecError(
            job.source,
            "placement.gpus_per_host",
            f"servers of {gpus} GPUs ({slots} slots) cannot feed {nics} NICs"
            " (GPU g sends on NIC g mod nics)",
        )
