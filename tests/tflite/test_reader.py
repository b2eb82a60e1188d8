"""The reader decodes every part of real models into the IR, in place."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALL_MODELS, model_bytes, model_path

from micronn import ModelError, read
from micronn.ir import Activation, Padding
from micronn.tflite import schema


@pytest.mark.parametrize("name", ALL_MODELS)
def test_path_bytes_and_memoryview_give_equal_graphs(name: str) -> None:
    data = model_bytes(name)
    assert read(model_path(name)) == read(data) == read(memoryview(data)) == read(bytearray(data))


def test_weights_are_views_over_the_model_bytes() -> None:
    data = model_bytes("person_detect")
    m = read(data)
    consts = [t for t in m.main.tensors if t.is_constant]
    assert consts and all(np.shares_memory(t.data, np.frombuffer(data, np.uint8)) for t in consts)
    assert not consts[0].data.flags.writeable


def test_person_detect_decoded() -> None:
    m = read(model_path("person_detect"))
    sg = m.main
    assert [sg.tensors[i].shape for i in sg.inputs] == [(1, 96, 96, 1)]
    op = sg.operators[0]
    assert op.op == "DEPTHWISE_CONV_2D" and op.version == 3
    assert op.options == schema.options("DEPTHWISE_CONV_2D", padding=Padding.SAME, stride_w=2, stride_h=2,
                                        depth_multiplier=8, fused_activation_function=Activation.RELU6)
    w = sg.tensors[op.inputs[1]]
    assert w.dtype == np.int8 and w.quant.per_channel and len(w.quant.scale) == 8 and w.quant.axis == 3
    assert sg.tensors[op.inputs[2]].dtype == np.int32
    reshape = next(o for o in sg.operators if o.op == "RESHAPE")
    assert reshape.options is not None


def test_variables_and_int16_in_keyword_model() -> None:
    m = read(model_path("keyword_scrambled"))
    variables = [t for t in m.main.tensors if t.is_variable]
    assert len(variables) == 7 and all(t.dtype == np.int16 for t in variables)
    assert m.main.tensors[m.main.inputs[0]].dtype == np.int16


def test_dynamic_batch_signature_and_metadata() -> None:
    m = read(model_path("tiny_unet"))
    t = m.main.tensors[m.main.inputs[0]]
    assert t.shape == (1, 80, 120, 3) and t.shape_signature == (-1, 80, 120, 3) and t.dtype == np.uint8
    assert "min_runtime_version" in m.metadata
    assert m.signature_defs and m.signature_defs[0].key


def test_not_a_model() -> None:
    with pytest.raises(ModelError, match="too short"):
        read(b"TFL3")
    with pytest.raises(ModelError, match="identifier"):
        read(b"\x10\x00\x00\x00ABCD" + bytes(64))
    with pytest.raises(ModelError, match="cannot read model file"):
        read("/nonexistent/model.tflite")
