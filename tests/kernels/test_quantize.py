"""QUANTIZE against the TFLM reference, byte for byte: float32 -> int, and every integer requantization TFLM has."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn.errors import MicronnError, UnsupportedError
from micronn.interpreter import Interpreter
from micronn.kernels.quantize import SUPPORTED
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm
from micronn.tflite.reader import read

PAIRS = sorted((i, o) for i, outs in SUPPORTED.items() for o in outs)
INT_TYPES = ["int8", "uint8", "int16", "int32"]


def quantize(shape, in_dtype, in_q, out_dtype, out_q) -> bytes:
    in_spec = T(shape, in_dtype, *in_q) if in_q else T(shape, in_dtype)
    return op_model("QUANTIZE", [in_spec], [T(shape, out_dtype, *out_q)])


def zero_points(dtype: str) -> list[int]:
    return {
        "int8": [0, -128, 37], "uint8": [0, 128, 255], "int16": [0, -300, 32767], "int32": [0, 1000, 2**31 - 7],
    }[dtype]


def int_inputs(shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    x.flat[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    return x


@pytest.mark.parametrize("out_dtype", ["int8", "int16"])
@pytest.mark.parametrize("scale", [0.0078125, 0.05920833, 1.7e-4, 3.0, 1e-9])
def test_float_to_int(out_dtype, scale):
    rng = np.random.default_rng(int(1 / scale) % 1000)
    shape = (3, 64)
    for zp in zero_points(out_dtype):
        m = quantize(shape, "float32", None, out_dtype, (scale, zp))
        spread = (rng.standard_normal(shape) * scale * rng.choice([3, 300, 30000])).astype(np.float32)
        ties = ((rng.integers(-200, 200, shape) + 0.5) * np.float32(scale)).astype(np.float32)  # x / scale near .5
        assert_same_as_tflm(m, [spread])
        assert_same_as_tflm(m, [ties])


@pytest.mark.parametrize("out_dtype,zp", [("int8", 0), ("int8", -100), ("int16", 5), ("int16", -32768)])
def test_float_special_values(out_dtype, zp):
    """Out-of-int32-range values and NaN convert to INT32_MIN (x86), and the zero point addition wraps."""
    x = np.array([1e10, -1e10, np.nan, np.inf, -np.inf, 2**31, 2**31 - 128, -(2**31), 2.5, -2.5, 0.5, -0.5,
                  -0.0, 1e-45, 126.5, -127.5], np.float32)
    assert_same_as_tflm(quantize(x.shape, "float32", None, out_dtype, (1.0, zp)), [x])


@pytest.mark.parametrize("in_dtype,out_dtype", [p for p in PAIRS if p[0] != "float32"])
def test_requantize(in_dtype, out_dtype):
    rng = np.random.default_rng(len(in_dtype) * 10 + len(out_dtype))
    shape = (2, 50)
    scales = [(0.5, 0.5), (0.05, 0.1), (0.1, 0.05), (0.003, 1.2), (1.7e-5, 3e-7), (2.0, 2.0 / 3)]
    for k, (si, so) in enumerate(scales):
        zi = zero_points(in_dtype)[k % 3]
        zo = zero_points(out_dtype)[(k + 1) % 3]
        m = quantize(shape, in_dtype, (si, zi), out_dtype, (so, zo))
        assert_same_as_tflm(m, [int_inputs(shape, in_dtype, rng)])


def test_int8_uint8_flip():
    """Same scale and zero points 128 apart: TFLM's xor-0x80 fast path."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    assert_same_as_tflm(quantize(x.shape, "int8", (0.02, -5), "uint8", (0.02, 123)), [x])
    assert_same_as_tflm(quantize(x.shape, "uint8", (0.02, 123), "int8", (0.02, -5)), [x.view(np.uint8)])


@pytest.mark.parametrize("in_dtype,out_dtype", [
    (i, o) for i in ["float32", *INT_TYPES] for o in ["float32", *INT_TYPES] if o not in SUPPORTED.get(i, ())
])
def test_rejects_what_tflm_rejects(in_dtype, out_dtype):
    in_q = None if in_dtype == "float32" else (0.1, 0)
    out_q = (None,) if out_dtype == "float32" else (0.1, 0)
    m = quantize((1, 4), in_dtype, in_q, out_dtype, out_q)
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((1, 4), in_dtype)])
    with pytest.raises(MicronnError):
        Interpreter.from_bytes(m)


@pytest.mark.parametrize("in_dtype", ["float32", "int8"])
def test_per_channel_output_rejected(in_dtype):
    in_q = None if in_dtype == "float32" else (0.1, 0)
    m = quantize((2, 3), in_dtype, in_q, "int8", ([0.1, 0.2, 0.3], [0, 1, 2], 1))
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((2, 3), in_dtype)])
    with pytest.raises(MicronnError, match="per-tensor"):
        Interpreter.from_bytes(m)


@pytest.mark.parametrize("name", ["keyword_scrambled", "tiny_unet"])
def test_real_model_quantize(name):
    """Each QUANTIZE of the real models (int16->int8, int16->int32, uint8->int8, int8->uint8) as a one-op model."""
    sg = read(model_bytes(name)).main
    ops = [op for op in sg.operators if op.op == "QUANTIZE"]
    assert ops
    for k, op in enumerate(ops):
        i, o = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
        m = op_model("QUANTIZE", [T(i.shape, i.dtype, i.quant.scale, i.quant.zero_point)],
                     [T(o.shape, o.dtype, o.quant.scale, o.quant.zero_point)])
        assert_same_as_tflm(m, seed=k, runs=2)


@pytest.mark.parametrize("name", ["keyword_scrambled", "tiny_unet"])
def test_real_model_end_to_end(name):
    """The whole model (needs every other kernel it uses), with its QUANTIZE ops in place."""
    try:
        assert_same_as_tflm(model_bytes(name), seed=10, runs=2)
    except UnsupportedError as e:
        pytest.skip(str(e))
