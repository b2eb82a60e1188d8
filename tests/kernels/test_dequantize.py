"""DEQUANTIZE against the TFLM reference, byte for byte: int8/uint8/int16 -> float32."""

from __future__ import annotations

import numpy as np
import pytest

from micronn.errors import MicronnError
from micronn.interpreter import Interpreter
from micronn.testing import T, TflmError, assert_same_as_tflm, op_model, run_tflm


@pytest.mark.parametrize("dtype,zp", [("int8", 0), ("int8", -128), ("int8", 77), ("uint8", 0), ("uint8", 128),
                                      ("uint8", 255), ("int16", 0), ("int16", -32768), ("int16", 1234)])
@pytest.mark.parametrize("scale", [0.00390625, 0.05920833, 1.5259022e-05, 3.3, 1e-30, 7e37])
def test_dequantize(dtype, zp, scale):
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1, max(1, (info.max - info.min) // 997), dtype=np.int64)
    x = np.append(x, [info.min, info.max]).astype(dtype).reshape(1, -1)
    assert_same_as_tflm(op_model("DEQUANTIZE", [T(x.shape, dtype, scale, zp)], [T(x.shape, "float32")]), [x])


def test_per_channel_uses_first_channel():
    """TFLM dequantizes with the first scale and zero point even for per-channel tensors."""
    x = np.arange(12, dtype=np.int8).reshape(3, 4)
    m = op_model("DEQUANTIZE", [T(x.shape, "int8", [0.1, 0.2, 0.3], [3, 1, 2], axis=0)], [T(x.shape, "float32")])
    assert_same_as_tflm(m, [x])


def test_no_quantization_gives_zeros():
    x = np.arange(8, dtype=np.int8).reshape(1, 8)
    out = assert_same_as_tflm(op_model("DEQUANTIZE", [T(x.shape, "int8")], [T(x.shape, "float32")]), [x])
    assert not np.any(out[0][0])


@pytest.mark.parametrize("in_dtype,out_dtype", [("float32", "float32"), ("int32", "float32"), ("int8", "int32"),
                                                ("int16", "int16"), ("uint8", "int8")])
def test_rejects_what_tflm_rejects(in_dtype, out_dtype):
    in_spec = T((1, 4), in_dtype) if in_dtype == "float32" else T((1, 4), in_dtype, 0.1, 0)
    out_spec = T((1, 4), out_dtype) if out_dtype == "float32" else T((1, 4), out_dtype, 0.1, 0)
    m = op_model("DEQUANTIZE", [in_spec], [out_spec])
    with pytest.raises(TflmError):
        run_tflm(m, [np.zeros((1, 4), in_dtype)])
    with pytest.raises(MicronnError):
        Interpreter.from_bytes(m)
