"""Generated MUL kernels (``templates.mul``): every config byte-identical to the interpreter on the host, an
emulated Cortex-M4, Cortex-M0 and RV32, both inputs random.

The layers cover same-shaped inputs with the output in place over the first (in-place sharing), broadcasts of a
row, of a column and of a scalar, batch 2, rows the unrolling does not divide, multipliers below and above one
(a left shift), and fused activations.
"""

from __future__ import annotations

import re

import pytest

import micronn
from micronn.micro import lower, templates, tune
from micronn.micro.templates import mul
from micronn.testing import Graph, Op, T, graph_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (first input's shape, second's, output scale (0.12: multiplier below one; 0.001: above), fused activation,
# in place: the first input dies at the op)
LAYERS = [((1, 4, 5, 3), (1, 4, 5, 3), 0.12, 0, 1), ((2, 3, 7), (7,), 0.001, 1, 0),
          ((1, 4, 1, 6), (1, 1, 5, 6), 0.12, 3, 0), ((1, 9), (1,), 0.001, 0, 1), ((2, 5, 3), (2, 5, 3), 0.002, 1, 1)]


def _out_shape(a: tuple, b: tuple) -> tuple:
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


def mul_model(a: tuple, b: tuple, out_scale: float, act: int, in_place: int) -> bytes:
    """x (scale 0.05, zero point -3) * y (0.1, 7) -> (out_scale, -5); without ``in_place`` a MAXIMUM reads x
    again."""
    tensors = {"x": T(a, "int8", 0.05, -3), "y": T(b, "int8", 0.1, 7), "z": T(_out_shape(a, b), "int8", out_scale, -5)}
    ops = [Op("MUL", ["x", "y"], ["z"], schema.options("MUL", fused_activation_function=act))]
    outputs = ["z"]
    if not in_place:
        tensors["m"] = T(a, "int8", 0.05, -3)
        ops.append(Op("MAXIMUM", ["x", "x"], ["m"]))
        outputs.append("m")
    return graph_model(Graph(tensors, ops, ["x", "y"], outputs))


def _layer(spec: tuple) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(mul_model(*spec))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == mul.GENERIC_SYMBOL]
    return it, task


def test_argument_words_are_mul_s8s() -> None:
    src = (lower.include_dir() / "mul.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == mul.ARGS


def test_shape_of_and_space() -> None:
    _, task = _layer(LAYERS[2])
    shape = mul.shape_of(task.symbol, task.args)
    assert shape.walk.sizes == (4, 5, 6) and shape.walk.row == (6, 1, 1, 1) and shape.shift < 0
    assert (shape.zp1, shape.zp2, shape.act_min) == (-3, 7, -5)
    assert templates.covered(task) == (mul, shape)
    _, big = _layer(LAYERS[1])
    assert mul.shape_of(big.symbol, big.args).shift > 0  # a multiplier above one
    geo = mul.ARGS.index("GEO")
    for at, value in ((mul.ARGS.index("MULT"), -1), (mul.ARGS.index("ZP1"), 300), (geo + 5, 0), (geo + 6 + 5, 2)):
        args = list(task.args)
        args[at] = value
        assert mul.shape_of(task.symbol, args) is None, at
    assert mul.shape_of("mn_add_s8", task.args) is None
    space = mul.space(shape)
    assert len(space) == len({mul.symbol(shape, c) for c in space}) == 6
    with pytest.raises(ValueError, match="rq"):
        mul.check_config({"rq": 2, "unroll": 1})


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    it, _ = _layer(LAYERS[layer])
    ((op, t, shape),) = tune.layers(it)
    assert t is mul
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
    for spec in LAYERS:
        it, _ = _layer(spec)
        ((op, _, _),) = tune.layers(it)
        bench = tune._Bench(it, op, "host", 0)
        try:
            assert (bench.in_addr == bench.out_addr) == bool(spec[-1]), spec
            assert len(bench.more) == 1
        finally:
            bench.close()
