"""AVERAGE_POOL_2D and MAX_POOL_2D against the TFLM wheel, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from micronn.errors import PrepareError
from micronn.interpreter import Interpreter
from micronn.kernels._conv_util import compute_out_size
from micronn.testing import T, assert_same_as_tflm, op_model
from micronn.tflite import schema

OPS = ["AVERAGE_POOL_2D", "MAX_POOL_2D"]
SPECIALS = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3e38, -3e38], np.float32)


def pool_model(op: str, kind: str, *, n: int = 1, h: int = 7, w: int = 6, c: int = 3, fh: int = 3, fw: int = 2,
               stride: tuple[int, int] = (2, 2), pad: int = 0, act: int = 0, zp: int | None = None,
               out_q: tuple[float, int] | None = None) -> bytes:
    oh, ow = compute_out_size(pad, h, fh, stride[0]), compute_out_size(pad, w, fw, stride[1])
    if kind == "float32":
        x, y = T((n, h, w, c), "float32"), T((n, oh, ow, c), "float32")
    else:
        z = (3 if kind == "int8" else 0) if zp is None else zp
        x = T((n, h, w, c), kind, 0.05, z)
        y = T((n, oh, ow, c), kind, *(out_q or (0.05, z)))
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], filter_height=fh,
                          filter_width=fw, fused_activation_function=act)
    return op_model(op, [x], [y], opts)


CASES = [
    {},
    {"pad": 1},
    {"stride": (1, 1)},
    {"stride": (2, 3), "fh": 4, "fw": 4},
    {"act": 1},
    {"act": 2},
    {"act": 3},
    {"act": 1, "zp": -100},
    {"n": 2},
    {"fh": 1, "fw": 1, "stride": (1, 1)},
    {"h": 3, "w": 3, "fh": 3, "fw": 3, "pad": 1},
    {"h": 9, "w": 11, "fh": 5, "fw": 5, "stride": (1, 1)},
    {"h": 2, "w": 2, "fh": 5, "fw": 4, "stride": (3, 3)},
    {"h": 12, "w": 12, "fh": 2, "fw": 2, "pad": 1, "c": 16},
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["int8", "int16", "float32"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_pool_matches_tflm(op: str, kind: str, case: dict) -> None:
    assert_same_as_tflm(pool_model(op, kind, **case), runs=3)


def test_average_rounds_half_away_from_zero() -> None:
    """Sums that are exact halves of the count: TFLM rounds them away from zero, for both signs."""
    model = pool_model("AVERAGE_POOL_2D", "int8", h=2, w=2, fh=2, fw=2, c=4, pad=1, zp=0)
    # rows are the 4 pixels, columns the channels: channel sums 2, 2, -2, -2 over 4 pixels
    x = np.array([[1, 2, -1, -2], [1, 0, -1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], np.int8).reshape(1, 2, 2, 4)
    (out,) = assert_same_as_tflm(model, inputs=[x])[0]
    np.testing.assert_array_equal(out.reshape(-1), [1, 1, -1, -1])


@pytest.mark.parametrize("op", OPS)
def test_pool_float_special_values(op: str) -> None:
    rng = np.random.default_rng(3)
    for act in (0, 1, 3):
        model = pool_model(op, "float32", act=act)
        x = rng.uniform(-2, 2, (1, 7, 6, 3)).astype(np.float32)
        mask = rng.random(x.shape) < 0.3
        x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        assert_same_as_tflm(model, inputs=[x])
    zeros = np.where(rng.random((1, 7, 6, 3)) < 0.5, np.float32(0.0), np.float32(-0.0)).astype(np.float32)
    assert_same_as_tflm(pool_model(op, "float32"), inputs=[zeros])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["int8", "int16"])
def test_pool_requires_equal_quantization(op: str, kind: str) -> None:
    """TFLM's pooling copies quantized values through: it refuses different input and output parameters."""
    for out_q in ((0.1, 3 if kind == "int8" else 0), (0.05, -3)):
        with pytest.raises(PrepareError):
            Interpreter.from_bytes(pool_model(op, kind, out_q=out_q))
    assert_same_as_tflm(pool_model(op, kind, out_q=(0.05 + 9e-7, 3 if kind == "int8" else 0)))  # within 1e-6
