"""ASTRA-sim 1.0 text workloads: the shipped examples and the malformed-file errors
specific to the format (the layer lines are shared with AICB, see test_aicb)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workload.imports import astrasim
from workload.imports.model import Layout
from workload.schema import SpecError

EXAMPLES = Path(__file__).resolve().parents[4] / "workload" / "examples"
LINE = "fc -1 3456 NONE 0 3648 NONE 0 7488 ALLREDUCE 65536 749"


def test_hybrid_example():
    wl = astrasim.read(str(EXAMPLES / "astrasim-transformer.txt"), npus=8)
    # model_parallel_NPU_group 2 of 8 NPUs -> tp 2, dp 4
    assert wl.layout == Layout(tp=2, dp=4) and wl.policy == "HYBRID_TRANSFORMER"
    emb = wl.layers[0]
    assert (emb.fwd.collective, emb.fwd.group, emb.fwd.size) == ("all_gather", "tp", 1048576)
    assert wl.layers[2].wg.group == "dp"
    # 3000 cycles at the default 1 ns
    assert emb.fwd.compute_s == pytest.approx(3e-6)


def test_data_example_spans_all_npus_and_cycle_time():
    wl = astrasim.read(str(EXAMPLES / "astrasim-data.txt"), npus=4, cycle_s=2e-9)
    assert wl.layout == Layout(tp=1, dp=4)
    assert {layer.wg.group for layer in wl.layers} == {"world"}
    # conv1 weight-gradient compute 32291 cycles x 2 ns
    assert wl.layers[0].wg.compute_s == pytest.approx(32291 * 2e-9)


def error(tmp_path, text: str, npus: int = 4) -> str:
    """The one-line error of reading ``text`` as an ASTRA-sim file."""
    path = tmp_path / "w.txt"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        astrasim.read(str(path), npus)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: line "), msg
    return msg


@pytest.mark.parametrize(
    "text,reason",
    [
        (f"HYBRID_DLRM DLRM_LAST_BOTTOM_LAYER: 1\n1\n{LINE}\n", "unsupported parallelism policy"),
        (f"HYBRID_TRANSFORMER\n1\n{LINE}\n", "needs exactly 'model_parallel_NPU_group: <M>'"),
        (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 0\n1\n{LINE}\n", "positive integer"),
        (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 3\n1\n{LINE}\n", "does not divide the 4"),
        (f"DATA extra: 1\n1\n{LINE}\n", "DATA takes no header keys"),
        (f"DATA\n1\n{LINE.replace('ALLREDUCE', 'ALLREDUCE_EP')}\n", "unknown 'ALLREDUCE_EP'"),
    ],
)
def test_malformed_files(tmp_path, text, reason):
    assert reason in error(tmp_path, text)
