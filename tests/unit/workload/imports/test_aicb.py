"""SimAI/AICB workload files: the shipped example's header and layers, and one test per
kind of malformed file (one-line error naming the file, line and reason)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workload.imports import aicb
from workload.imports.model import Layout
from workload.schema import SpecError

EXAMPLE = Path(__file__).resolve().parents[4] / "workload" / "examples" / "aicb-moe-16.txt"
HEAD = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 ga: 1 all_gpus: 4"
LINE = "attn -1 100 ALLREDUCE 1024 200 NONE 0 300 ALLREDUCE 2048 5"


def test_example_header_and_layers():
    wl = aicb.read(str(EXAMPLE))
    # tp 2, pp 2, all_gpus 16 -> dp = 16 / (2·2) = 4; ep 2 inside it.
    assert wl.layout == Layout(tp=2, dp=4, pp=2, ep=2)
    assert (wl.ga, wl.pp_bytes, wl.policy) == (2, 1048576, "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
    assert [layer.name for layer in wl.layers] == [
        "embedding_layer", "attention_row", "mlp_moelayer", "mlp_dense",
    ]  # fmt: skip
    moe = wl.layers[2]
    # 300000 ns = 0.3 ms; ALLTOALL_EP -> all_to_all over the EP group; ALLREDUCE_DP_EP
    # -> all_reduce over the expert-DP group.
    assert moe.fwd.compute_s == pytest.approx(3e-4)
    assert (moe.fwd.collective, moe.fwd.group, moe.fwd.size) == ("all_to_all", "ep", 2097152)
    assert (moe.wg.collective, moe.wg.group) == ("all_reduce", "dp_ep")
    # plain ALLREDUCE: TP in forward / input gradient, DP in weight gradient
    assert (wl.layers[1].fwd.group, wl.layers[1].wg.group) == ("tp", "dp")
    assert wl.layers[0].ig.collective == "" and wl.ignored == ()


def error(tmp_path, text: str) -> str:
    """The one-line error of reading ``text`` as an AICB file."""
    path = tmp_path / "w.txt"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        aicb.read(str(path))
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    return msg


@pytest.mark.parametrize(
    "text,where,reason",
    [
        ("", None, "empty file"),
        (f"DATA\n1\n{LINE}\n", "line 1", "unsupported parallelism policy 'DATA'"),
        (f"{HEAD} tp: 2\n1\n{LINE}\n", "line 1", "unknown header key 'tp:'"),
        (f"{HEAD} ga: 3\n1\n{LINE}\n", "line 1", "header key 'ga' given twice"),
        (HEAD.replace("ga: 1", "ga: x") + f"\n1\n{LINE}\n", "line 1", "header ga: must be"),
        (HEAD.replace(" all_gpus: 4", "") + f"\n1\n{LINE}\n", "line 1", "needs all_gpus"),
        (HEAD.replace("all_gpus: 4", "all_gpus: 5") + f"\n1\n{LINE}\n", "line 1",
         "all_gpus 5 is not a multiple of tp 2 x pp 1"),
        (HEAD.replace("ep: 1", "ep: 3") + f"\n1\n{LINE}\n", "line 1", "ep 3 does not divide dp"),
        (HEAD.replace("pp: 1", "pp: 2") + f"\n1\n{LINE}\n", "line 1", "pp 2 needs pp_comm"),
        (f"{HEAD}\n", "line 1", "missing the layer count line"),
        (f"{HEAD}\ntwo\n{LINE}\n", "line 2", "layer count must be a positive integer"),
        (f"{HEAD}\n2\n{LINE}\n", "line 3", "file ends after 1 of 2 layer lines"),
        (f"{HEAD}\n1\n{LINE}\n{LINE}\n", "line 4", "more lines than the layer count 1"),
        (f"{HEAD}\n1\nattn -1 100\n", "line 3", "expected 12 fields"),
        (f"{HEAD}\n1\n{LINE.replace('100', 'fast')}\n", "line 3",
         "fwd compute time must be a non-negative number, got 'fast'"),
        (f"{HEAD}\n1\n{LINE.replace('1024', '-1')}\n", "line 3",
         "fwd comm size must be a non-negative integer"),
        (f"{HEAD}\n1\n{LINE.replace('ALLREDUCE 1024', 'BROADCAST 1024')}\n", "line 3",
         "fwd comm type: unknown 'BROADCAST'"),
    ],
)  # fmt: skip
def test_malformed_files(tmp_path, text, where, reason):
    msg = error(tmp_path, text)
    assert (where is None or f": {where}: " in msg) and reason in msg, msg


def test_unreadable_file(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        aicb.read(str(tmp_path / "missing.txt"))


def test_checkpoint_lists_are_consumed_and_reported_ignored(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text(f"{HEAD} checkpoints: 2 0 1 vpp: 4\n1\n{LINE}\n")
    wl = aicb.read(str(path))
    assert wl.ignored == ("vpp", "checkpoints")
