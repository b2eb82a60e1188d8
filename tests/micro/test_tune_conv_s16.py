"""Generated int16x8 1x1 convolutions (``templates.conv_2d_1x1_s16``): every config byte-identical to the
interpreter on the host (portable C), an emulated Cortex-M4 (SXTB16/SMLAD, lanes paired in the loop or in a stack
copy), Cortex-M0 and RV32.

The layers cover channel counts that leave a remainder of four (5, 7), output-channel and pixel counts the tiles
do not divide, an int32 bias (TFLM's 32-bit requantization) beside int64 ones, batch 2, a fused ReLU, and outputs
the plan streams over the input (``stage``) as well as one whose input an ADD reads again afterwards.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import conv_2d_1x1_s16 as c16
from micronn.testing import Graph, Op, T, graph_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (batch, h, w, in_c, out_c, bias type, fused activation, stage)
LAYERS = [(1, 3, 5, 8, 6, "int64", 0, 1), (2, 2, 3, 5, 7, "int32", 1, 1), (1, 1, 7, 16, 9, "int64", 0, 0),
          (1, 4, 4, 7, 12, "int64", 1, 1)]


def conv_s16(n: int, h: int, w: int, cin: int, cout: int, bias: str, act: int, stage: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.02, cout))
    tensors = {"x": T((n, h, w, cin), "int16", 0.01, 0),
               "w": T((cout, 1, 1, cin), "int8", scales, 0, data=rng.integers(-127, 128, (cout, 1, 1, cin))),
               "b": T((cout,), bias, [0.01 * s for s in scales], 0, data=rng.integers(-30000, 30000, cout)),
               "y": T((n, h, w, cout), "int16", 0.05, 0)}
    ops = [Op("CONV_2D", ["x", "w", "b"], ["y"], schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1,
                                                                 fused_activation_function=act))]
    if stage:
        return graph_model(Graph(tensors, ops, ["x"], ["y"]))
    tensors["z"] = T((n, h, w, cin), "int16", 0.01, 0)
    tensors["x2"] = T((n, h, w, cin), "int16", 0.01, 0)
    ops.append(Op("ADD", ["x", "x"], ["x2"]))
    return graph_model(Graph(tensors, ops, ["x"], ["y", "x2"]))


def _layer(spec: tuple, seed: int = 0) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(conv_s16(*spec, seed=seed))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == c16.GENERIC_SYMBOL]
    return it, task


def test_argument_words_are_conv_2d_s16s() -> None:
    src = (lower.include_dir() / "conv_2d_s16.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == c16.ARGS


def test_shape_of_and_registry() -> None:
    _, task = _layer(LAYERS[1])
    shape = c16.shape_of(task.symbol, task.args)
    assert shape == c16.Shape(5, 7, 12, 1)
    assert templates.covered(task) == (c16, shape)
    for word, value in (("F_H", 3), ("S_W", 2), ("PAD_L", 1), ("WIDE", 1), ("IN_C", 300)):
        args = list(task.args)
        args[c16.ARGS.index(word)] = value
        assert c16.shape_of(task.symbol, args) is None, word
    space = c16.space(shape)
    assert len(space) == len({c16.symbol(shape, c) for c in space}) == 36


def test_the_layers_stream_as_meant() -> None:
    stage = c16.ARGS.index("STAGE")
    assert [_layer(spec)[1].args[stage] for spec in LAYERS] == [spec[-1] for spec in LAYERS]


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer], seed=layer)
    ((op, t, shape),) = [hit for hit in tune.layers(it) if hit[1] is c16]
    d = DEVICES.index(device)
    configs = [c for i, c in enumerate(t.space(shape)) if (i + d + layer) % 2 == 0]
    results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    if device == "cortex-m4":
        assert min(n for n, _ in results) < base
