"""Generated ADD and SUB kernels (``templates.add``): every config byte-identical to the interpreter on the host,
an emulated Cortex-M4, Cortex-M0 and RV32, both inputs random.

The layers cover same-shaped inputs with the output in place over the first (in-place sharing), broadcasts of a
row, of a column and of a scalar, batch 2, rows whose length the unrolling does not divide, SUB, and fused
activations.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.kernels import _elementwise as ew
from micronn.micro import lower, templates, tune
from micronn.micro.templates import add
from micronn.testing import Graph, Op, T, graph_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (op, first input's shape, second input's shape, fused activation, in place: the first input dies at the op)
LAYERS = [("ADD", (1, 4, 5, 3), (1, 4, 5, 3), 0, 1), ("ADD", (2, 3, 7), (7,), 1, 0),
          ("SUB", (1, 4, 1, 6), (1, 1, 5, 6), 3, 0), ("ADD", (1, 9), (1,), 0, 1), ("SUB", (2, 5, 3), (2, 5, 3), 1, 1)]


def _out_shape(a: tuple, b: tuple) -> tuple:
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


def add_model(op: str, a: tuple, b: tuple, act: int, in_place: int) -> bytes:
    """x (scale 0.05, zero point -3) op y (0.1, 7) -> 0.12, -5; without ``in_place`` a MAXIMUM reads x again."""
    out = _out_shape(a, b)
    tensors = {"x": T(a, "int8", 0.05, -3), "y": T(b, "int8", 0.1, 7), "z": T(out, "int8", 0.12, -5)}
    ops = [Op(op, ["x", "y"], ["z"], schema.options(op, fused_activation_function=act))]
    outputs = ["z"]
    if not in_place:
        tensors["m"] = T(a, "int8", 0.05, -3)
        ops.append(Op("MAXIMUM", ["x", "x"], ["m"]))
        outputs.append("m")
    return graph_model(Graph(tensors, ops, ["x", "y"], outputs))


def _layer(spec: tuple) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(add_model(*spec))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol in add.GENERIC_SYMBOLS]
    return it, task


def test_argument_words_are_add_s8s() -> None:
    src = (lower.include_dir() / "add.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == add.ARGS


def test_shape_of_and_space() -> None:
    _, task = _layer(LAYERS[2])
    shape = add.shape_of(task.symbol, task.args)
    assert shape.kind == "sub" and shape.walk.sizes == (4, 5, 6) and shape.walk.row == (6, 1, 1, 1)
    assert shape.walk.strides[1][:2] == (6, 0) and shape.walk.strides[2][:2] == (0, 6)  # the two broadcasts
    assert shape.act_min == -5 and shape.macs == 120  # ReLU6 clamps at the zero point
    assert templates.covered(task) == (add, shape)
    _, scalar = _layer(LAYERS[3])
    assert add.shape_of(scalar.symbol, scalar.args).walk.row == (9, 1, 1, 0)
    geo = add.ARGS.index("GEO")
    for at, value in ((add.ARGS.index("MULT1"), -1), (add.ARGS.index("SHIFT_OUT"), 1),
                      (add.ARGS.index("LEFT_SHIFT"), 23), (geo + 5, 0), (geo + 6 + 5, 2)):
        args = list(task.args)
        args[at] = value
        assert add.shape_of(task.symbol, args) is None, at
    assert add.shape_of("mn_mul_s8", task.args) is None
    space = add.space(shape)
    assert len(space) == len({add.symbol(shape, c) for c in space}) == 6
    with pytest.raises(ValueError, match="unroll"):
        add.check_config({"table": 1, "unroll": 3})


def test_table_is_the_interpreters_rescaling() -> None:
    """The generation-time table holds, for every int8 value, what the interpreter's kernel computes for it."""
    it, task = _layer(LAYERS[2])
    p = next(k for k in it._kernels if getattr(k, "params", None) is not None).params
    x = np.arange(-128, 128)
    for off, m, s in ((p.off1, p.m1, p.s1), (p.off2, p.m2, p.s2)):
        want = ew.rescale_operand(x, off, p.left_shift, m, s)
        assert [add.rescale(int(v), int(off), p.left_shift, int(m), int(s)) for v in x] == [int(v) for v in want]


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer])
    ((op, t, shape),) = tune.layers(it)
    assert t is add
    space = t.space(shape)
    configs = space if device in ("cortex-m4", "host") else space[layer % 2::2]
    results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"
    if device == "cortex-m4":
        best = min(n for n, _ in results)
        print(f"{shape.key}: generic {base}, best {best} instructions")
        assert best < base


def test_in_place_layers_share_their_bytes() -> None:
    """The in-place layers really place the output over the first input (and the others do not)."""
    for spec in LAYERS:
        it, _ = _layer(spec)
        ((op, _, _),) = tune.layers(it)
        bench = tune._Bench(it, op, "host", 0)
        try:
            assert (bench.in_addr == bench.out_addr) == bool(spec[-1]), spec
            assert len(bench.more) == 1  # the second input is random too
        finally:
            bench.close()
