"""Generated AVERAGE_POOL_2D and MAX_POOL_2D kernels (``templates.pool_2d``): every config byte-identical to the
interpreter on the host (portable C), an emulated Cortex-M4 (four channels per word), Cortex-M0 and RV32.

The layers cover channel counts with a partial group of four (5, 3, 7), SAME padding (border pixels with fewer
taps, so other divisors), stride 2, batch 2, a rectangular window, a window over the whole input (no border),
one of more than 256 taps (no SIMD average), fused activations, and outputs the plan streams over their input
(``stage``) beside ones whose input is read again afterwards.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import pool_2d
from micronn.testing import Graph, Op, T, graph_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (op, batch, h, w, channels, (filter h, filter w), stride, padding (0 SAME, 1 VALID), fused activation, stage)
# stage 1: a one-op model, whose plan places the output over the input; 0: a MAXIMUM reads the input afterwards
LAYERS = [("AVERAGE_POOL_2D", 1, 6, 7, 5, (3, 3), 1, 0, 0, 1), ("MAX_POOL_2D", 2, 7, 6, 8, (2, 2), 2, 0, 1, 1),
          ("AVERAGE_POOL_2D", 1, 5, 5, 12, (5, 5), 1, 1, 3, 0), ("MAX_POOL_2D", 1, 9, 9, 3, (3, 3), 2, 1, 3, 0),
          ("AVERAGE_POOL_2D", 2, 8, 9, 16, (3, 2), 2, 0, 1, 1), ("MAX_POOL_2D", 1, 5, 6, 7, (3, 3), 1, 0, 0, 1),
          ("AVERAGE_POOL_2D", 1, 17, 17, 4, (17, 17), 1, 1, 0, 1)]


def pool_model(op: str, n: int, h: int, w: int, c: int, f: tuple[int, int], stride: int, pad: int, act: int,
               stage: int) -> bytes:
    """One pooling layer (input and output share scale 0.05 and zero point -3: ReLU clamps at -3)."""
    if pad == 0:
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh, ow = (h - f[0]) // stride + 1, (w - f[1]) // stride + 1
    tensors = {"x": T((n, h, w, c), "int8", 0.05, -3), "y": T((n, oh, ow, c), "int8", 0.05, -3)}
    opts = schema.options(op, padding=pad, stride_h=stride, stride_w=stride, filter_height=f[0], filter_width=f[1],
                          fused_activation_function=act)
    ops = [Op(op, ["x"], ["y"], opts)]
    if stage:
        return graph_model(Graph(tensors, ops, ["x"], ["y"]))
    tensors["z"] = T((n, h, w, c), "int8", 0.05, -3)
    ops.append(Op("MAXIMUM", ["x", "x"], ["z"]))
    return graph_model(Graph(tensors, ops, ["x"], ["y", "z"]))


def _layer(spec: tuple) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(pool_model(*spec))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol in pool_2d.GENERIC_SYMBOLS]
    return it, task


def test_argument_words_are_pool_2d_s8s() -> None:
    src = (lower.include_dir() / "pool_2d.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == pool_2d.ARGS


def test_the_layers_stream_as_meant() -> None:
    """The stage-1 layers really place the output over the input (the kernels' ``stage`` path)."""
    stage = pool_2d.ARGS.index("STAGE")
    assert [_layer(spec)[1].args[stage] for spec in LAYERS] == [spec[-1] for spec in LAYERS]


def test_shape_of_and_space() -> None:
    _, task = _layer(LAYERS[1])
    shape = pool_2d.shape_of(task.symbol, task.args)
    assert shape == pool_2d.Shape("max", 2, 7, 6, 8, 4, 3, 2, 2, 2, 2, 0, 0, -3, 127, 1)
    assert templates.covered(task) == (pool_2d, shape)
    assert shape.interior(0) == (0, 3) and shape.interior(1) == (0, 3)  # SAME pads only at the bottom and right
    for word, value in (("F_H", 0), ("PAD_T", -1), ("STAGE", 2), ("ACT_MAX", -100), ("C", lower.ConstRef(b"\0"))):
        args = list(task.args)
        args[pool_2d.ARGS.index(word)] = value
        assert pool_2d.shape_of(task.symbol, args) is None, word
    assert pool_2d.shape_of("mn_conv_2d_s8", task.args) is None
    assert pool_2d.shape_of(task.symbol, task.args[:-1]) is None
    space = pool_2d.space(shape)
    assert len(space) == len({pool_2d.symbol(shape, c) for c in space}) == 12
    big = pool_2d.shape_of(*(lambda t: (t.symbol, t.args))(_layer(LAYERS[6])[1]))
    assert big.taps == 289 and pool_2d.space(big) == [{"simd": 0, "unroll": u, "split": p} for u in (1, 0)
                                                      for p in (1, 0)]  # no SIMD average, no full unrolling
    with pytest.raises(ValueError, match="unroll"):
        pool_2d.check_config({**space[0], "unroll": 3})


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer])
    ((op, t, shape),) = tune.layers(it)
    assert t is pool_2d
    space = t.space(shape)
    configs = space if device in ("cortex-m4", "host") else space[layer % 2::2]
    results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    if device == "cortex-m4":  # the generated kernel beats the generic one on the core it is written for
        best = min(n for n, _ in results)
        print(f"{shape.key}: generic {base}, best {best} instructions")
        assert best < base


def test_applied_log_runs_the_model_byte_identically() -> None:
    """apply-best swaps the pooling task for its generated kernel, and the whole model's output stays the same."""
    from micronn.micro.runtime import run_model

    data = pool_model(*LAYERS[0])
    it = micronn.Interpreter(data)
    it.allocate_tensors()
    ((op, t, shape),) = tune.layers(it)
    config = t.space(shape)[0]
    log = [{"target": "cortex-m4", "template": t.NAME, "version": t.VERSION, "key": shape.key, "config": config,
            "instructions": 1, "verified": True}]
    x = np.random.default_rng(5).integers(-128, 128, (1, 6, 7, 5)).astype(np.int8)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    want = it.get_tensor(it.get_output_details()[0]["index"])
    got = run_model(data, "cortex-m4", [x], tuning_log=log)
    assert [r["template"] for r in got["tuned"]] == [t.NAME]
    assert got["outputs"][0].tobytes() == want.tobytes()
