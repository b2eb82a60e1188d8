"""Generated int8 SOFTMAX kernels (``templates.softmax``): every config byte-identical to the interpreter on the
host, an emulated Cortex-M4, Cortex-M0 and RV32.

The layers cover int8 and int16 outputs, several rows, a depth the unrolling does not divide, an input scale whose
``diff_min`` admits every int8 difference and one whose ``diff_min`` cuts the table short (differences beyond it
contribute nothing and output the minimum).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import softmax
from micronn.testing import T, op_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (shape, input scale, output type, beta)
LAYERS = [((3, 5), 0.05, "int8", 1.0), ((1, 2), 0.1, "int16", 1.0), ((2, 37), 0.5, "int8", 1.0),
          ((1, 4, 9), 0.02, "int16", 0.7)]


def softmax_model(shape: tuple, scale: float, out: str, beta: float) -> bytes:
    q = (1 / 256, -128) if out == "int8" else (1 / 65536, -32768)
    return op_model("SOFTMAX", [T(shape, "int8", scale, 3)], [T(shape, out, *q)],
                    schema.options("SOFTMAX", beta=beta))


def _layer(spec: tuple) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(softmax_model(*spec))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == softmax.GENERIC_SYMBOL]
    return it, task


def test_argument_words_are_softmax_s8s() -> None:
    src = (lower.include_dir() / "softmax.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == softmax.ARGS


def test_shape_of_and_table() -> None:
    shapes = [softmax.shape_of(t.symbol, t.args) for t in (_layer(spec)[1] for spec in LAYERS)]
    assert all(s is not None for s in shapes)
    assert shapes[0].entries == 256 and shapes[2].entries < 256  # every difference, and a table cut short
    assert shapes[3].rows == 4 and shapes[3].out_bits == 16
    _, task = _layer(LAYERS[0])
    assert templates.covered(task)[0] is softmax
    args = list(task.args)
    args[softmax.ARGS.index("DEPTH")] = 300
    assert softmax.shape_of(task.symbol, args) is None
    e, term = softmax.exponentials(shapes[2])
    assert e[0] == 2**31 - 1 and np.all(np.diff(e) <= 0) and np.all(term <= e)  # exp(0) = 1 in Q0.31, falling


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer])
    ((op, t, shape),) = tune.layers(it)
    assert t is softmax
    results, (base, base_ok) = tune.measure(it, op, t, shape, t.space(shape), device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(t.space(shape), results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    if device == "cortex-m4":
        assert min(n for n, _ in results) < base
