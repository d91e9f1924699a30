"""The layer lines shared by both formats: fields, units, comm types and groups."""

from __future__ import annotations

import pytest

from workload.imports.layers import parse_layers
from workload.schema import SpecError


def lines(*body: str):
    """Numbered lines of a file with header, count and ``body``."""
    return list(enumerate(["HEAD", str(len(body)), *body], 1))


def test_fields_units_and_groups():
    # times x unit (2 µs here); plain ALLREDUCE: TP in fwd/ig, DP in wg; _EP -> EP group
    (layer,) = parse_layers(
        "f", lines("l0 -1 5 ALLREDUCE 8 6 ALLTOALL_EP 16 7 ALLGATHER 32 3"), 2e-6, True, False
    )
    assert (layer.name, layer.line) == ("l0", 3)
    assert (layer.fwd.compute_s, layer.ig.compute_s, layer.wg.compute_s) == pytest.approx(
        (10e-6, 12e-6, 14e-6)
    )
    assert layer.update_s == pytest.approx(6e-6)
    assert (layer.fwd.collective, layer.fwd.group, layer.fwd.size) == ("all_reduce", "tp", 8)
    assert (layer.ig.collective, layer.ig.group) == ("all_to_all", "ep")
    assert (layer.wg.collective, layer.wg.group, layer.wg.size) == ("all_gather", "dp", 32)


def test_world_policy_puts_every_collective_on_all_ranks():
    (layer,) = parse_layers(
        "f", lines("l0 -1 1 ALLREDUCE 8 1 NONE 0 1 ALLREDUCE 8 1"), 1, False, True
    )
    assert (layer.fwd.group, layer.wg.group, layer.ig.collective) == ("world", "world", "")


def test_suffix_rejected_where_the_format_has_none():
    with pytest.raises(SpecError, match=r"f: line 3: fwd comm type: unknown 'ALLREDUCE_DP_EP'"):
        parse_layers("f", lines("l0 -1 1 ALLREDUCE_DP_EP 8 1 NONE 0 1 NONE 0 1"), 1, False, False)
