"""Generated FULLY_CONNECTED kernels (``templates.fully_connected``): every config byte-identical to the interpreter
on the host (portable C), an emulated Cortex-M4 (assembly and C projections), Cortex-M0 and RV32.

The layers cover unit counts that fill whole tiles of four (16), leave a last pair (6), a partial tile (3, 7) or
a pair with one unit (5), depths with a partial group of four, batch 2, a fused ReLU (a narrower clamp), and
weights whose pairs need lower.paired_rows's corrections.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import fully_connected as fc
from micronn.testing import T, op_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (batch, depth, units, fused activation)
LAYERS = [(1, 64, 16, 0), (2, 10, 6, 1), (1, 33, 7, 0), (1, 32, 5, 0), (1, 96, 3, 1)]


def fc_model(batch: int, depth: int, units: int, act: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (units, depth))
    w[1::2, ::3] = -128  # beside a negative weight of the row before: corrections in the paired layout
    w[0::2, ::3] = -rng.integers(1, 128, w[0::2, ::3].shape)
    return op_model("FULLY_CONNECTED",
                    [T((batch, depth), "int8", 0.1, -7), T((units, depth), "int8", 0.004, 0, data=w),
                     T((units,), "int32", 0.0004, 0, data=rng.integers(-20000, 20000, units))],
                    [T((batch, units), "int8", 0.3, 5)],
                    schema.options("FULLY_CONNECTED", fused_activation_function=act))


def _layer(spec: tuple, seed: int = 0) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(fc_model(*spec, seed=seed))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == fc.GENERIC_SYMBOL]
    return it, task


def test_argument_words_are_fully_connected_s8s() -> None:
    src = (lower.include_dir() / "fully_connected.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == fc.ARGS


def test_shape_of() -> None:
    _, task = _layer(LAYERS[1])
    shape = fc.shape_of(task.symbol, task.args)
    assert (shape.batches, shape.depth, shape.units, shape.act_min) == (2, 10, 6, 5)  # ReLU clamps at the zero point
    assert templates.covered(task) == (fc, shape)
    args = list(task.args)
    args[fc.ARGS.index("PER_CHANNEL")] = 1
    assert fc.shape_of(task.symbol, args) is None
    args = list(task.args)
    args[fc.ARGS.index("MULT")] = lower.ConstRef(np.array([1 << 30, 1 << 30, 3 << 29, 0, 0, 0], "<i4"))
    assert fc.shape_of(task.symbol, args) is None  # not one multiplier for all units
    args[fc.ARGS.index("DEPTH")] = 97
    assert fc.shape_of(task.symbol, args) is None
    space = fc.space(shape)
    assert len(space) == len({fc.symbol(shape, c) for c in space}) == 8


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer], seed=layer)
    ((op, t, shape),) = tune.layers(it)
    assert t is fc
    configs = t.space(shape) if device == "cortex-m4" else t.space(shape)[layer % 2::2]
    results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    if device == "cortex-m4":  # the generated kernel beats the generic one on the core it is written for
        assert min(n for n, _ in results) < base
