"""export_tflm: the model with micronn's offline plan runs on the TFLM wheel with the same outputs and the head
micronn predicts, and the op resolver names TFLM's registration methods."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import model_path

from micronn import export
from micronn.export.tflm import resolver_method
from micronn.testing import _Tflm, random_inputs, tflm_arena


@pytest.mark.parametrize("name", ["tiny_unet", "person_detect", "keyword_scrambled"])
def test_offline_plan_runs_on_the_wheel(name: str, tmp_path: Path) -> None:
    original = model_path(name).read_bytes()
    tp = export.export_tflm(original, tmp_path, prefix="net")
    written = (tmp_path / "net.tflite").read_bytes()
    assert tflm_arena(written)["head"] == tp.tflm_head_bytes <= tp.tflm_original_head_bytes
    assert tflm_arena(original)["head"] == tp.tflm_original_head_bytes
    xs = random_inputs(original, 1)
    assert [y.tobytes() for y in _Tflm(written).run(xs)] == [y.tobytes() for y in _Tflm(original).run(xs)]
    array = (tmp_path / "net_model.cc").read_text()
    assert f"net_model_len = {len(written)};" in array and array.count("0x") == len(written)
    resolver = (tmp_path / "net_resolver.h").read_text()
    assert f"MicroMutableOpResolver<{len(tp.ops)}>" in resolver and f"kNetArenaSize = {tp.arena_bytes};" in resolver


def test_resolver_methods() -> None:
    expected = {"CONV_2D": "AddConv2D", "DEPTHWISE_CONV_2D": "AddDepthwiseConv2D", "AVERAGE_POOL_2D":
                "AddAveragePool2D", "L2_POOL_2D": "AddL2Pool2D", "BATCH_TO_SPACE_ND": "AddBatchToSpaceNd",
                "PADV2": "AddPadV2", "SVDF": "AddSvdf", "RELU6": "AddRelu6", "SPLIT_V": "AddSplitV",
                "UNIDIRECTIONAL_SEQUENCE_LSTM": "AddUnidirectionalSequenceLSTM", "BATCH_MATMUL": "AddBatchMatMul",
                "REVERSE_V2": "AddReverseV2", "LOG_SOFTMAX": "AddLogSoftmax", "CUMSUM": "AddCumSum"}
    for op, method in expected.items():
        assert resolver_method(op) == method, op
    assert resolver_method("SignalFilterBankLog", custom=True) == "AddFilterBankLog"
    assert resolver_method("TFLite_Detection_PostProcess", custom=True) == "AddDetectionPostprocess"
    assert resolver_method("Spill", custom=True) is None


def test_bad_prefix_and_path(tmp_path: Path) -> None:
    with pytest.raises(export.ExportError, match="C identifier"):
        export.export_tflm(model_path("hello_world_int8"), tmp_path, prefix="a-b")
    (tmp_path / "f").write_text("")
    with pytest.raises(export.ExportError, match="cannot write"):
        export.export_tflm(model_path("hello_world_int8"), tmp_path / "f" / "x")
