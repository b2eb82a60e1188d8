"""Generated int16x8 convolutions of any window (``templates.conv_2d_s16``, im2col per output pixel): every config
byte-identical to the interpreter on the host, an emulated Cortex-M4 (SXTB16/SMLAD), Cortex-M0 and RV32.

The layers cover a first layer with one input channel and a 10x4 window at stride 2 (SAME: windows cut by the
image border), three channels with dilation 2, windows whose size leaves a remainder of four, VALID padding,
batch 2, an int32 bias beside int64 ones and a fused ReLU.
"""

from __future__ import annotations

import numpy as np
import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import conv_2d_1x1_s16, conv_2d_s16
from micronn.testing import T, op_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (batch, h, w, in_c, out_c, f_h, f_w, stride, dilation, padding (0 SAME, 1 VALID), bias type, activation)
LAYERS = [(1, 9, 6, 1, 8, 10, 4, 2, 1, 0, "int64", 1), (1, 7, 7, 3, 5, 3, 3, 1, 2, 0, "int32", 0),
          (2, 6, 5, 5, 6, 2, 3, 2, 1, 1, "int64", 0)]


def conv(n: int, h: int, w: int, cin: int, cout: int, fh: int, fw: int, stride: int, dil: int, pad: int, bias: str,
         act: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.02, cout))
    eh, ew = (fh - 1) * dil + 1, (fw - 1) * dil + 1
    oh, ow = (-(-h // stride), -(-w // stride)) if pad == 0 else ((h - eh) // stride + 1, (w - ew) // stride + 1)
    return op_model("CONV_2D", [T((n, h, w, cin), "int16", 0.01, 0),
                                T((cout, fh, fw, cin), "int8", scales, 0,
                                  data=rng.integers(-127, 128, (cout, fh, fw, cin))),
                                T((cout,), bias, [0.01 * s for s in scales], 0,
                                  data=rng.integers(-30000, 30000, cout))],
                    [T((n, oh, ow, cout), "int16", 0.05, 0)],
                    schema.options("CONV_2D", padding=pad, stride_h=stride, stride_w=stride, dilation_h_factor=dil,
                                   dilation_w_factor=dil, fused_activation_function=act))


def _layer(spec: tuple, seed: int = 0) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(conv(*spec, seed=seed))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == conv_2d_s16.GENERIC_SYMBOL]
    return it, task


def test_shape_of_and_registry() -> None:
    _, task = _layer(LAYERS[0])
    shape = conv_2d_s16.shape_of(task.symbol, task.args)
    assert (shape.f_h, shape.f_w, shape.in_c, shape.s_h, shape.window) == (10, 4, 1, 2, 40)
    assert templates.covered(task) == (conv_2d_s16, shape)
    pointwise = conv_2d_1x1_s16.ARGS
    args = list(task.args)
    for word, value in (("F_H", 1), ("F_W", 1), ("S_H", 1), ("S_W", 1), ("PAD_T", 0), ("PAD_L", 0), ("IN_C", 8),
                        ("F_C", 8), ("OUT_H", 9), ("OUT_W", 6)):
        args[pointwise.index(word)] = value
    assert templates.covered(lower.Task(task.symbol, args, task.op))[0] is conv_2d_1x1_s16  # 1x1: its own template
    args = list(task.args)
    args[pointwise.index("WIDE")] = 1
    assert conv_2d_s16.shape_of(task.symbol, args) is None
    args = list(task.args)
    args[pointwise.index("F_C")] = 2  # grouped
    assert conv_2d_s16.shape_of(task.symbol, args) is None
    space = conv_2d_s16.space(shape)
    assert len(space) == len({conv_2d_s16.symbol(shape, c) for c in space}) == 12


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer], seed=layer)
    ((op, t, shape),) = tune.layers(it)
    assert t is conv_2d_s16
    configs = t.space(shape) if device == "cortex-m4" else t.space(shape)[layer % 2::2]
    results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    if device == "cortex-m4":
        assert min(n for n, _ in results) < base
