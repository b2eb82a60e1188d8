"""Generated depthwise-convolution kernels (``templates.depthwise_conv_2d``): every config byte-identical to the
interpreter on the host (gcc, portable C), an emulated Cortex-M4 (SXTB16 / SMLAxy path), Cortex-M0 (no DSP) and
RV32 (no DSP; ``chain``'s asm multiply-adds).

Each device runs every config of the template once, spread over five small layers so that across the three devices
each config meets three of them: stride 1 and 2, SAME and VALID padding, odd channel counts, a 1x1 image (every
pixel a border pixel), batch 2, depth multipliers 8 (one input channel, as person_detect's first layer) and 2 (which
the 4-channel tile does not divide), fused activations, outputs the plan streams over their input (``stage``) and
one it does not (the input is still read by an ADD after the layer).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import conv_2d_1x1, depthwise_conv_2d
from micronn.testing import Graph, Op, T, graph_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]  # riscv32 alone runs the asm multiply-adds
# (batch, h, w, in_c, depth multiplier, stride, padding (0 SAME, 1 VALID), fused activation, stage)
# stage 1: a one-op model, whose plan places the output over the input; 0: the input is read again afterwards
LAYERS = [(1, 5, 7, 5, 1, 1, 0, 0, 1), (1, 6, 5, 1, 8, 2, 0, 3, 1), (2, 1, 1, 3, 1, 1, 0, 0, 1),
          (1, 7, 6, 6, 2, 2, 1, 1, 1), (1, 4, 6, 7, 1, 1, 0, 0, 0)]


def depthwise(n: int, h: int, w: int, cin: int, mult: int, stride: int, pad: int, act: int, stage: int,
              seed: int = 0) -> bytes:
    """int8 DEPTHWISE_CONV_2D 3x3, per-channel scales, input zero point -3; with ``stage`` 0 an ADD then reads
    the layer's input beside its output (the shapes must then agree: stride 1, SAME, multiplier 1)."""
    rng = np.random.default_rng(seed)
    oc = cin * mult
    wt = T((1, 3, 3, oc), "int8", list(rng.uniform(0.002, 0.02, oc)), 0, axis=3,
           data=rng.integers(-127, 128, (1, 3, 3, oc)))
    b = T((oc,), "int32", data=rng.integers(-30000, 30000, oc))
    oh, ow = (-(-h // stride), -(-w // stride)) if pad == 0 else ((h - 3) // stride + 1, (w - 3) // stride + 1)
    tensors = {"x": T((n, h, w, cin), "int8", 0.05, -3), "w": wt, "b": b, "y": T((n, oh, ow, oc), "int8", 0.3, 4)}
    opts = schema.options("DEPTHWISE_CONV_2D", padding=pad, stride_h=stride, stride_w=stride, depth_multiplier=mult,
                          fused_activation_function=act)
    ops = [Op("DEPTHWISE_CONV_2D", ["x", "w", "b"], ["y"], opts)]
    if stage:
        return graph_model(Graph(tensors, ops, ["x"], ["y"]))
    tensors["z"] = T((n, oh, ow, oc), "int8", 0.4, -1)
    ops.append(Op("ADD", ["x", "y"], ["z"]))
    return graph_model(Graph(tensors, ops, ["x"], ["z"]))


def _layer(spec: tuple, seed: int = 0) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(depthwise(*spec, seed=seed))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == depthwise_conv_2d.GENERIC_SYMBOL]
    return it, task


def test_argument_words_are_depthwise_conv_2d_s8s() -> None:
    """The template reads mn_depthwise_conv_2d_s8's argument words by the kernel's own enum."""
    src = (lower.include_dir() / "depthwise_conv_2d.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == depthwise_conv_2d.ARGS


def test_shape_of_and_registry() -> None:
    _, task = _layer(LAYERS[1])
    shape = depthwise_conv_2d.shape_of(task.symbol, task.args)
    assert shape == depthwise_conv_2d.Shape(1, 6, 5, 1, 3, 3, 8, 3, 3, 2, 2, 0, 1)
    assert shape.out_c == 8 and shape.macs == 3 * 3 * 8 * 9
    assert templates.covered(task) == (depthwise_conv_2d, shape)
    assert templates.TEMPLATES[conv_2d_1x1.NAME] is conv_2d_1x1  # the registry grew, the 1x1 template stays
    assert conv_2d_1x1.shape_of(task.symbol, task.args) is None
    args = list(task.args)
    args[depthwise_conv_2d.ARGS.index("D_H")] = 2
    assert depthwise_conv_2d.shape_of(task.symbol, args) is None
    assert depthwise_conv_2d.shape_of("mn_conv_2d_s8", task.args) is None
    space = depthwise_conv_2d.space(shape)
    assert len(space) == len({depthwise_conv_2d.symbol(shape, c) for c in space})
    with pytest.raises(ValueError, match="tile_c"):
        depthwise_conv_2d.check_config({**space[0], "tile_c": 3})


def test_the_layers_stream_as_meant() -> None:
    """The streamed layers really place the output over the input (the kernels' ``stage`` path)."""
    stage = depthwise_conv_2d.ARGS.index("STAGE")
    assert [_layer(spec)[1].args[stage] for spec in LAYERS] == [spec[-1] for spec in LAYERS]


@pytest.mark.parametrize("half", (0, 1))
@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int, half: int) -> None:
    """The configs device ``device`` runs on layer ``layer``, in two halves (one compile each)."""
    it, _ = _layer(LAYERS[layer], seed=layer)
    ((op, t, shape),) = [hit for hit in tune.layers(it) if hit[1] is depthwise_conv_2d]  # not the ADD beside it
    d = DEVICES.index(device)
    configs = [c for i, c in enumerate(t.space(shape)) if (i + d) % len(LAYERS) == layer][half::2]
    results, (_, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    counted = [n for n, _ in results]
    assert all(x is None for x in counted) if device == "host" else all(x > 0 for x in counted)
