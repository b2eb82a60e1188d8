"""INT4 weights (two per byte, low nibble first) in CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, byte for byte
against the TFLM wheel, with the unpacking scratch buffer TFLM plans; and a real model with int4 weights."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter, ir
from micronn.errors import ModelError, PrepareError
from micronn.models import bundled_model
from micronn.testing import T, assert_same_as_tflm, op_model, run_micronn, tflm_arena
from micronn.tflite import reader, writer

RNG = np.random.default_rng(4)
PADDING = {"SAME": 0, "VALID": 1}


def _w(shape: tuple) -> np.ndarray:
    return RNG.integers(-8, 8, shape).astype(np.int8)


def _bias(n: int) -> np.ndarray:
    return RNG.integers(-500, 500, n).astype(np.int32)


def _same_head(model: bytes) -> None:
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("units,depth", [(3, 5), (16, 33), (7, 1)], ids=str)  # odd element counts included
def test_fully_connected(units: int, depth: int) -> None:
    scale = np.float32(0.05)
    model = op_model("FULLY_CONNECTED", [T((2, depth), "int8", 0.5, 3),
                                         T((units, depth), "int4", scale, 0, data=_w((units, depth))),
                                         T((units,), "int32", np.float32(scale) * np.float32(0.5), 0,
                                           data=_bias(units))], [T((2, units), "int8", 0.7, -5)])
    assert_same_as_tflm(model)
    _same_head(model)


@pytest.mark.parametrize("padding,stride", [("SAME", 1), ("VALID", 2)])
def test_conv_2d(padding: str, stride: int) -> None:
    out_hw = 7 if padding == "SAME" and stride == 1 else 3
    flt = T((5, 3, 3, 3), "int4", list(RNG.uniform(0.01, 0.1, 5)), 0, data=_w((5, 3, 3, 3)))
    options = {"padding": PADDING[padding], "stride_w": stride, "stride_h": stride, "fused_activation_function": 1}
    model = op_model("CONV_2D", [T((1, 7, 7, 3), "int8", 0.5, -1), flt, T((5,), "int32", 0.001, 0, data=_bias(5))],
                     [T((1, out_hw, out_hw, 5), "int8", 0.3, 4)], options)
    assert_same_as_tflm(model)
    _same_head(model)


@pytest.mark.parametrize("mult", [1, 3])
def test_depthwise_conv_2d(mult: int) -> None:
    c = 3 * mult
    flt = T((1, 3, 3, c), "int4", list(RNG.uniform(0.01, 0.1, c)), 0, axis=3, data=_w((1, 3, 3, c)))
    options = {"padding": PADDING["SAME"], "depth_multiplier": mult, "stride_w": 1, "stride_h": 1}
    bias = T((c,), "int32", 0.001, 0, data=_bias(c))
    out = T((1, 6, 6, c), "int8", 0.2, 0)
    model = op_model("DEPTHWISE_CONV_2D", [T((1, 6, 6, 3), "int8", 0.4, 2), flt, bias], [out], options)
    assert_same_as_tflm(model)
    _same_head(model)


def _person_detect_int4() -> bytes:
    """person_detect with every convolution's weights requantized to int4 (values / 16, scales x 16)."""
    model = reader.read(bundled_model("person_detect"))
    for op in model.main.operators:
        if op.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            t = model.main.tensors[op.inputs[1]]
            q = np.clip(np.round(t.data.astype(np.float64) / 16), -8, 7).astype(np.int8)
            t.data, t.dtype = q.view(ir.INT4), ir.INT4
            t.quant = ir.Quantization(t.quant.scale * 16, t.quant.zero_point, t.quant.axis)
    return bytes(writer.write(model))


def test_person_detect_with_int4_weights() -> None:
    """The wheel and micronn agree on a real model with int4 weights, the file shrinks, and the reader and writer
    round-trip the packed weights."""
    small = _person_detect_int4()
    assert len(small) < len(bundled_model("person_detect")) * 0.7
    again = reader.read(small)
    assert bytes(writer.write(again)) == small
    assert_same_as_tflm(small, runs=2)
    _same_head(small)


def test_person_detect_with_int4_weights_on_the_device() -> None:
    """The host-driven Cortex-M runtime gives the same bytes (it uploads the weights unpacked)."""
    pytest.importorskip("unicorn")
    from micronn.micro import run_model

    model = _person_detect_int4()
    x = np.random.default_rng(0).integers(-128, 128, (1, 96, 96, 1)).astype(np.int8)
    assert run_model(model, "cortex-m4", [x])["outputs"][0].tobytes() == run_micronn(model, [x])[0].tobytes()


def test_int4_refused_where_tflm_refuses() -> None:
    w = T((4, 6), "int4", 0.25, 0, data=_w((4, 6)))
    per_channel = T((4, 6), "int4", [0.25, 0.5, 0.1, 0.2], 0, data=_w((4, 6)))
    with pytest.raises(PrepareError, match="per tensor"):  # TFLM's per-channel FULLY_CONNECTED refuses int4
        Interpreter(op_model("FULLY_CONNECTED", [T((1, 6), "int8", 0.5, 0), per_channel, None],
                             [T((1, 4), "int8", 1.0, 0)])).allocate_tensors()
    with pytest.raises(PrepareError, match="hybrid|int16"):  # TFLM: int16 input with int4 filter unsupported
        Interpreter(op_model("FULLY_CONNECTED", [T((1, 6), "int16", 0.5, 0), w, None],
                             [T((1, 4), "int16", 1.0, 0)])).allocate_tensors()
    with pytest.raises(ModelError, match="int4 but not a constant"):
        Interpreter(op_model("FULLY_CONNECTED", [T((1, 6), "int8", 0.5, 0), T((4, 6), "int4", 0.25, 0), None],
                             [T((1, 4), "int8", 1.0, 0)]))
    values = np.arange(-8, 7, dtype=np.int8)
    assert ir.unpack_int4(ir.pack_int4(values), 15).view(np.int8).tolist() == values.tolist()
