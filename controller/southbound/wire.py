"""Whether a switch driver can tell a set of tag entries apart on the wire (pure): the
control plane checks a ``set`` with it before writing anything."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.coflow_table import TagEntry, wire_clash
from controller.southbound.base import SwitchDriver
from topo.plan import FabricPlan
from workload.marking import TAG_MAX


def check_wire(
    desired: Mapping[int, TagEntry],
    new: Sequence[TagEntry],
    plan: FabricPlan,
    driver: SwitchDriver,
) -> None:
    """ValueError (one line) if ``driver`` cannot hold ``desired`` (every entry after
    the ``set``, ``new`` its own): a new tag above its ``max_tag``, remapped DSCPs where
    a tag must be its own DSCP (BMv2), or two tags sharing a DSCP on a sending host."""
    name = type(driver).__name__
    for e in new:
        if e.tag > driver.max_tag or (e.dscps and driver.max_tag <= TAG_MAX):
            raise ValueError(
                f"entries: tag {e.tag}: {name} takes tags 1..{driver.max_tag} "
                "(one DSCP per coflow, the tag's own)"
            )
    clash = wire_clash(desired.values(), plan)
    if clash is not None:
        raise ValueError(f"entries: {clash}")
