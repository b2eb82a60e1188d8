"""TRANSPOSE_CONV against the TFLM wheel, byte for byte, with TFLM's scratch buffers and arena head."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError
from micronn.kernels.transpose_conv import transpose_conv_padding
from micronn.planners import Sharing
from micronn.testing import T, assert_same_as_tflm, op_model, tflm_arena
from micronn.tflite import schema

MODELS = Path(__file__).resolve().parents[2] / "micronn" / "models"


def tconv_model(kind: str, *, n: int = 1, h: int = 3, w: int = 4, cin: int = 3, cout: int = 2, fh: int = 3,
                fw: int = 3, stride: tuple[int, int] = (2, 2), pad: int = 0, out_hw: tuple[int, int] | None = None,
                act: int = 0, bias: bool = True, bias_dtype: str | None = None, per_channel: bool = True,
                in_zp: int | None = None, out_zp: int | None = None, w_zp: int = 0, shape_values=None,
                seed: int = 0) -> bytes:
    """A one-op TRANSPOSE_CONV model; ``out_hw`` defaults to input size * stride."""
    rng = np.random.default_rng(seed)
    oh, ow = out_hw or (h * stride[0], w * stride[1])
    out_shape = T((4,), "int32", data=shape_values if shape_values is not None else [n, oh, ow, cout])
    if kind == "float32":
        wt = T((cout, fh, fw, cin), "float32", data=rng.standard_normal((cout, fh, fw, cin)).astype(np.float32))
        b = T((cout,), "float32", data=rng.standard_normal(cout).astype(np.float32)) if bias else None
        x, y = T((n, h, w, cin), "float32"), T((n, oh, ow, cout), "float32")
    else:
        scales = list(rng.uniform(0.005, 0.02, cout)) if per_channel else 0.01
        wt = T((cout, fh, fw, cin), "int8", scales, w_zp, data=rng.integers(-127, 128, (cout, fh, fw, cin)))
        bd = bias_dtype or ("int32" if kind == "int8" else "int64")
        b = T((cout,), bd, data=rng.integers(-3000, 3000, cout)) if bias else None
        x = T((n, h, w, cin), kind, 0.05, (3 if kind == "int8" else 0) if in_zp is None else in_zp)
        y = T((n, oh, ow, cout), kind, 0.1 if kind == "int8" else 0.002,
              (-5 if kind == "int8" else 0) if out_zp is None else out_zp)
    opts = schema.options("TRANSPOSE_CONV", padding=pad, stride_h=stride[0], stride_w=stride[1],
                          fused_activation_function=act)
    return op_model("TRANSPOSE_CONV", [out_shape, wt, x, b], [y], opts)


CASES = [
    {},
    {"pad": 1},
    {"stride": (1, 1)},
    {"stride": (3, 1), "fh": 4, "fw": 2, "out_hw": (11, 3)},
    {"stride": (2, 2), "fh": 2, "fw": 2},
    {"stride": (2, 2), "fh": 1, "fw": 1, "pad": 1},
    {"out_hw": (7, 9)},  # output larger than stride * input: uncovered border gets only the bias
    {"out_hw": (4, 5), "pad": 1},  # output smaller than the scatter: out-of-range taps dropped
    {"n": 2, "h": 5, "w": 2, "cin": 7, "cout": 5},
    {"fh": 5, "fw": 5, "h": 2, "w": 2, "stride": (1, 1)},
    {"act": 1},
    {"act": 2},
    {"act": 3, "pad": 1},
    {"act": 4},  # TANH: TFLM's range helpers treat it as no clamp
    {"bias": False},
    {"cin": 24, "cout": 6, "h": 5, "w": 6, "stride": (1, 1), "out_hw": (7, 8)},
    {"pad": 1, "stride": (3, 3), "fh": 6, "fw": 6, "h": 1, "w": 2, "out_hw": (1, 4)},
]


def case_id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


@pytest.mark.parametrize("kind", ["float32", "int8", "int16"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_transpose_conv_matches_tflm(kind: str, case: dict) -> None:
    assert_same_as_tflm(tconv_model(kind, **case), runs=3)


@pytest.mark.parametrize("case", [
    {"kind": "int8", "per_channel": False},
    {"kind": "int8", "per_channel": False, "bias": False, "pad": 1},
    {"kind": "int8", "w_zp": 3},  # the weights' zero point is not used by the int8 kernel
    {"kind": "int8", "in_zp": -128, "out_zp": 127, "act": 1},
    {"kind": "int16", "bias_dtype": "int16"},
    {"kind": "int16", "bias_dtype": "int16", "act": 3, "pad": 1},
    {"kind": "int16", "in_zp": 5, "out_zp": -7, "act": 1},  # int16 zero points only move the clamp
    {"kind": "int16", "per_channel": False},
], ids=case_id)
def test_transpose_conv_quantized_variants(case: dict) -> None:
    assert_same_as_tflm(tconv_model(**case), runs=3)


def test_transpose_conv_ignores_output_shape_values() -> None:
    """TFLM never reads input 0: the output's static shape is what counts."""
    assert_same_as_tflm(tconv_model("int8", shape_values=[9, 9, 9, 9]), runs=2)


def test_transpose_conv_float_extremes() -> None:
    """Overflow to inf and inf - inf = nan happen as in C; the no-activation clamp turns inf into FLT_MAX."""
    model = tconv_model("float32")
    big = np.full((1, 3, 4, 3), 3e38, np.float32)
    big[0, 1] *= -1
    assert_same_as_tflm(model, inputs=[big])


def test_transpose_conv_int8_accumulator_extremes() -> None:
    model = tconv_model("int8", cin=40, fh=4, fw=4, stride=(1, 1), in_zp=-128)
    assert_same_as_tflm(model, inputs=[np.full((1, 3, 4, 40), 127, np.int8)])
    assert_same_as_tflm(model, inputs=[np.full((1, 3, 4, 40), -128, np.int8)])


@pytest.mark.parametrize("case", [
    {"kind": "float32"},
    {"kind": "int8"},
    {"kind": "int8", "n": 2, "h": 5, "w": 3, "cout": 7, "out_hw": (11, 7)},
    {"kind": "int16"},
    {"kind": "int16", "bias_dtype": "int16"},  # a second scratch: the bias widened to int64
    {"kind": "int16", "bias": False},
], ids=case_id)
def test_transpose_conv_head_equals_tflm(case: dict) -> None:
    model = tconv_model(**case)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(model)["head"]


@pytest.mark.parametrize("planner,elems", [("tflm", 1 * 6 * 8 * 2), ("optimal", 1 * 1 * 8 * 2)])
def test_transpose_conv_scratch_sizes(planner: str, elems: int) -> None:
    """TFLM: int8 holds an int32 per output element, 16x8 an int64 (plus the bias widened to int64), float none.
    micronn's compact scratch holds one output row instead."""
    sizes = {}
    for key, kw in {"float32": {"kind": "float32"}, "int8": {"kind": "int8"}, "int16": {"kind": "int16"},
                    "int16b16": {"kind": "int16", "bias_dtype": "int16"}}.items():
        it = Interpreter(tconv_model(**kw), planner=planner)
        it.allocate_tensors()
        sizes[key] = [b["size"] for b in it.arena_report()["buffers"] if b["kind"] == "scratch"]
    assert sizes == {"float32": [], "int8": [elems * 4], "int16": [elems * 8], "int16b16": [elems * 8, 2 * 8]}


@pytest.mark.parametrize("case", [
    {"kind": "int16", "bias_dtype": "int32"},  # TFLM would read it as int64, past its end
    {"kind": "int8", "bias_dtype": "int64"},
    {"kind": "int8", "stride": (0, 1)},
])
def test_transpose_conv_rejects(case: dict) -> None:
    with pytest.raises(PrepareError):
        Interpreter(tconv_model(**case)).allocate_tensors()


def test_transpose_conv_rejects_shape_mismatch() -> None:
    x, y = T((1, 3, 4, 3), "float32"), T((1, 6, 8, 5), "float32")
    wt = T((2, 3, 3, 3), "float32", data=0.5)
    model = op_model("TRANSPOSE_CONV", [T((4,), "int32", data=[1, 6, 8, 5]), wt, x, None], [y],
                     schema.options("TRANSPOSE_CONV", stride_h=2, stride_w=2))
    with pytest.raises(PrepareError, match="shapes do not match"):
        Interpreter(model).allocate_tensors()


@pytest.mark.parametrize("padding,stride,out,filt,expected", [
    (0, 2, 6, 3, 0),  # SAME: conv output 3, total (3-1)*2+3-6 = 1 -> 0
    (0, 1, 5, 3, 1),
    (0, 2, 7, 4, 1),
    (1, 2, 6, 3, 0),  # VALID: conv output (6+2-3)/2 = 2, total (2-1)*2+3-6 < 0 -> 0
    (1, 1, 5, 4, 0),
    (1, 3, 1, 6, 1),  # VALID, filter larger than the output: C division truncates (-2/3 -> 0, not -1)
])
def test_transpose_conv_padding(padding: int, stride: int, out: int, filt: int, expected: int) -> None:
    assert transpose_conv_padding(padding, stride, out, filt) == expected


@pytest.mark.parametrize("name,head", [("tiny_unet", 307_216), ("tiny_unet_static", 307_200)])
def test_tiny_unet(name: str, head: int) -> None:
    """The Tiny U-Net: three TRANSPOSE_CONVs (the dynamic-batch file computes their output_shape at run time
    through SHAPE -> STRIDED_SLICE -> PACK); TFLM's head peaks at the last one, with its int32 scratch."""
    model = (MODELS / f"{name}.tflite").read_bytes()
    assert_same_as_tflm(model, seed=3, runs=2)
    it = Interpreter(model, planner="tflm")
    it.allocate_tensors()
    assert it.head == head
    scratch = [b["size"] for b in it.arena_report()["buffers"] if b["kind"] == "scratch"]
    assert 153_600 in scratch
    compact = Interpreter(model, sharing=Sharing(False, False, False, False, compact_scratch=True))
    compact.allocate_tensors()  # a row of int32 instead of the whole output: the peak moves elsewhere
    assert max(b["size"] for b in compact.arena_report()["buffers"] if b["kind"] == "scratch") == 120 * 4 * 4
    assert compact.head == 230_400  # now the last CONCATENATION: 76,800 + 38,400 in, 115,200 out
