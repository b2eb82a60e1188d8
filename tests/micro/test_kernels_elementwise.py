"""The int8 elementwise and reduction kernels (ADD, SUB, MUL, MAXIMUM, MINIMUM, MEAN, RELU, RELU6, LEAKY_RELU,
LOGISTIC, TANH) against micronn's Python kernels, byte for byte.

On the host, operator by operator over the interpreter's arena (``test_kernels.check_ops``): the three bundled
models that use these ops, then single-op models for broadcasting, activations, extreme quantization and
in-place outputs. On the emulated Cortex-M4, each of the three models runs whole and must give the
interpreter's bytes. The kernels must also build freestanding for Cortex-M0 and M4.
"""

from __future__ import annotations

import ctypes
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_kernels import Host, check_ops, lib  # noqa: F401  (lib is a fixture)

import micronn
from micronn.errors import UnsupportedError
from micronn.micro import lower, lower_elementwise
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

MODELS = Path(__file__).resolve().parents[1] / "models"
NAMED = {"mobilenet_v2_pad_int8": {"ADD", "MEAN"}, "resnet_tiny_int8": {"ADD"}, "vnet_like_int8": {"ADD", "RELU"}}
SOURCES = ["add.c", "mul.c", "maximum.c", "mean.c", "relu.c", "logistic.c"]
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


def inputs_with_extremes(it: micronn.Interpreter, seed: int) -> list[np.ndarray]:
    """Random inputs whose first elements are the int8 extremes (saturation and wrap-around paths)."""
    xs = random_inputs(it.model, seed=seed)
    for x in xs:
        if x.dtype == np.int8 and x.size >= 4:
            x.reshape(-1)[:4] = [-128, 127, 0, -1]
    return xs


# ---- the bundled models ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
@pytest.mark.parametrize("name", sorted(NAMED))
def test_models_lower_completely(name: str, planner: str) -> None:
    """Every operator lowers, the ops of this family among them; the default plan puts some ADDs in place."""
    it = micronn.Interpreter(MODELS / f"{name}.tflite", planner=planner)
    tasks = lower.lower_model(it)
    ops = {it._nodes[t.op].op.op for t in tasks}
    assert NAMED[name] <= ops and len({t.op for t in tasks}) == len(it._nodes)


def test_mobilenet_adds_run_in_place() -> None:
    """mobilenet's default plan places every ADD output over an input: those are the in-place walks checked."""
    it = micronn.Interpreter(MODELS / "mobilenet_v2_pad_int8.tflite")
    it.allocate_tensors()
    places = lower._placements(it)
    adds = [lower._Op(it, i, places) for i in range(len(it._nodes)) if it._nodes[i].op.op == "ADD"]
    assert adds and all(o.overlaps() for o in adds)
    for o in adds:
        lower_elementwise.check_in_place(o)


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
@pytest.mark.parametrize("name", ["resnet_tiny_int8", "vnet_like_int8"])
def test_models_op_by_op(lib: ctypes.CDLL, name: str, planner: str) -> None:  # noqa: F811
    it = micronn.Interpreter(MODELS / f"{name}.tflite", planner=planner)
    check_ops(lib, it, inputs_with_extremes(it, 1))


def test_mobilenet_op_by_op(lib: ctypes.CDLL) -> None:  # noqa: F811
    """Each ADD and the MEAN of mobilenet with the default (in-place) plan, and every operator with TFLM's.

    The default plan's first CONV_2D streams over the model input with a gap that does not cover its folded
    padding (that kernel's affair, not this family's), so there only this family's ops run in C, each from
    the Python result of the operators before it."""
    it = micronn.Interpreter(MODELS / "mobilenet_v2_pad_int8.tflite", planner="tflm")
    check_ops(lib, it, inputs_with_extremes(it, 1))
    it = micronn.Interpreter(MODELS / "mobilenet_v2_pad_int8.tflite")
    checked = check_family_ops(lib, it, inputs_with_extremes(it, 2))
    assert checked == 11


def check_family_ops(lib: ctypes.CDLL, it: micronn.Interpreter, inputs: list[np.ndarray]) -> int:  # noqa: F811
    """Like ``check_ops`` but only for this family's ops: the others run in Python only."""
    it._ensure()
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    host, arena, checked = Host(lib, it), it._arena.buf, 0
    for i, (kernel, node) in enumerate(zip(it._kernels, it._nodes)):
        if node.op.op not in lower_elementwise.BINARY + lower_elementwise.UNARY + ("MEAN",):
            kernel.invoke(node)
            continue
        tasks = lower.lower(it, i)
        before = arena.copy()
        kernel.invoke(node)
        want = it._views[node.op.outputs[0]].copy()
        after = arena.copy()
        arena[...] = before
        host.run(tasks)
        got = it._views[node.op.outputs[0]]
        assert np.array_equal(want.view(np.uint8), got.view(np.uint8)), f"operator {i} ({node.op.op})"
        arena[...] = after
        checked += 1
    return checked


# ---- single-op models --------------------------------------------------------------------------------------------


def binary(op: str, a: tuple, b: tuple, out: tuple, *, qa=(0.05, 3), qb=(0.02, -7), qo=(0.08, 2), act=NONE,
           const_b: bool = False, seed: int = 0) -> bytes:
    """A binary op; ``const_b`` makes the second operand constant weights."""
    opts = schema.options(op, fused_activation_function=act) if op in ("ADD", "SUB", "MUL") else None
    data = np.random.default_rng(seed).integers(-128, 128, b) if const_b else None
    return op_model(op, [T(a, "int8", *qa), T(b, "int8", *qb, data=data)], [T(out, "int8", *qo)], opts)


def mean(shape: tuple, axes: list[int], *, keep_dims: bool = False, qi=(0.05, -3), qo=(0.03, 5)) -> bytes:
    resolved = sorted({a % len(shape) for a in axes})
    out = tuple(1 if k in resolved else d for k, d in enumerate(shape)) if keep_dims else \
        tuple(d for k, d in enumerate(shape) if k not in resolved)
    return op_model("MEAN", [T(shape, "int8", *qi), T((len(axes),), "int32", data=axes)], [T(out, "int8", *qo)],
                    {"keep_dims": keep_dims})


def unary(op: str, shape: tuple = (2, 5, 3), *, qi=(0.05, 3), qo=(0.04, -2), options=None) -> bytes:
    return op_model(op, [T(shape, "int8", *qi)], [T(shape, "int8", *qo)], options)


CASES = {
    # ADD / SUB: TFLM's flat path, broadcasting of every kind, activations, scales either way, extreme zero points
    "add_flat": binary("ADD", (2, 3, 4), (2, 3, 4), (2, 3, 4)),
    "add_flat_other_shape": binary("ADD", (4, 6), (4, 6), (2, 12)),
    "add_channel": binary("ADD", (1, 4, 5, 3), (3,), (1, 4, 5, 3), qa=(0.01, 0), qb=(0.05, 10)),
    "add_both_broadcast": binary("ADD", (2, 1, 5, 1), (1, 4, 1, 3), (2, 4, 5, 3)),
    "add_scalar_first": binary("ADD", (), (3, 7), (3, 7), act=RELU),
    "add_const_row": binary("ADD", (5, 6), (1, 6), (5, 6), const_b=True, act=RELU6, qo=(0.02, -100)),
    "add_rank5": binary("ADD", (2, 3, 1, 2, 5), (3, 4, 1, 5), (2, 3, 4, 2, 5), act=RELU_N1_TO_1, qo=(0.01, 0)),
    "add_rank6": binary("ADD", (2, 1, 2, 1, 3, 1), (1, 2, 1, 2, 1, 2), (2, 2, 2, 2, 3, 2)),
    "add_input_rank_above_output": binary("ADD", (1, 1, 7), (7,), (7,)),
    "add_zp_extremes": binary("ADD", (3, 9), (3, 9), (3, 9), qa=(0.1, -128), qb=(0.1, 127), qo=(0.003, -128)),
    "add_equal_scales": binary("ADD", (17,), (17,), (17,), qa=(0.05, 0), qb=(0.05, 0), qo=(0.05, 0)),
    "add_tiny_out_scale": binary("ADD", (4, 4), (4,), (4, 4), qo=(0.0004, 1)),
    "add_huge_out_scale": binary("ADD", (4, 4), (4,), (4, 4), qo=(40.0, -1)),
    "sub_flat": binary("SUB", (3, 5), (3, 5), (3, 5), act=RELU),
    "sub_broadcast": binary("SUB", (3, 1), (1, 4), (3, 4), qa=(0.02, 9), qb=(0.07, -20)),
    "sub_scalar_second": binary("SUB", (2, 2, 8), (1,), (2, 2, 8), act=RELU6, qo=(0.03, -128)),
    # MUL: multipliers below and above one, broadcasting, activations
    "mul_flat": binary("MUL", (3, 11), (3, 11), (3, 11)),
    "mul_broadcast": binary("MUL", (2, 4, 1, 3), (5, 1), (2, 4, 5, 3), act=RELU),
    "mul_large_multiplier": binary("MUL", (6, 5), (5,), (6, 5), qa=(0.5, 0), qb=(0.6, 1), qo=(0.01, 0)),
    "mul_small_multiplier": binary("MUL", (6, 5), (6, 5), (6, 5), qa=(0.001, -128), qb=(0.002, 127),
                                   qo=(0.5, -3), act=RELU_N1_TO_1),
    "mul_const": binary("MUL", (1, 3, 3, 4), (4,), (1, 3, 3, 4), const_b=True, act=RELU6, qo=(0.05, -128)),
    # MAXIMUM / MINIMUM: raw comparisons, ties, broadcasting
    "max_flat": binary("MAXIMUM", (4, 7), (4, 7), (4, 7)),
    "max_broadcast": binary("MAXIMUM", (3, 1, 5), (4, 1), (3, 4, 5)),
    "min_flat": binary("MINIMUM", (31,), (31,), (31,)),
    "min_const": binary("MINIMUM", (2, 3, 6), (6,), (2, 3, 6), const_b=True),
    # MEAN: global pooling, single axes, negative and repeated axes, all axes, scales either way, high rank
    "mean_hw": mean((1, 5, 6, 7), [1, 2], keep_dims=True),
    "mean_hw_flat_out": mean((2, 3, 4, 5), [1, 2]),
    "mean_last": mean((3, 4, 9), [-1]),
    "mean_first": mean((6, 4), [0], qi=(0.2, 100), qo=(0.01, -50)),
    "mean_middle": mean((2, 7, 3), [1], keep_dims=True),
    "mean_alternating": mean((2, 3, 4, 5, 3), [0, 2, 4]),
    "mean_all": mean((4, 5, 6), [0, 1, 2], qi=(0.5, 0), qo=(0.002, 0)),
    "mean_repeated": mean((3, 8), [1, -1, 1]),
    "mean_rank7": mean((2, 1, 3, 2, 1, 2, 3), [1, 2, 3]),
    "mean_zp_extremes": mean((1, 3, 3, 16), [1, 2], qi=(0.02, -128), qo=(0.02, 127)),
    "mean_count_not_pot": mean((1, 7, 7, 5), [1, 2], keep_dims=True, qi=(0.03, 6), qo=(0.031, 6)),
    "mean_big_count": mean((1, 40, 40, 2), [1, 2], qi=(0.05, 1), qo=(0.0002, -7)),
    # RELU / RELU6 / LEAKY_RELU
    "relu": unary("RELU"),
    "relu_scale_up": unary("RELU", (7, 3), qi=(0.5, -128), qo=(0.01, -128)),
    "relu_scale_down": unary("RELU", (33,), qi=(0.01, 100), qo=(0.5, 127)),
    "relu_same_q": unary("RELU", (4, 4), qi=(0.1, -3), qo=(0.1, -3)),
    "relu6": unary("RELU6", qi=(0.03, -10)),
    "relu6_saturating": unary("RELU6", (3, 3), qi=(0.01, 100)),
    "relu6_coarse": unary("RELU6", (9,), qi=(1.0, -128)),
    "leaky_relu": unary("LEAKY_RELU", options={"alpha": 0.1}),
    "leaky_relu_big_alpha": unary("LEAKY_RELU", (3, 7), qi=(0.02, 20), qo=(0.1, -128), options={"alpha": 3.5}),
    "leaky_relu_negative_alpha": unary("LEAKY_RELU", (20,), qi=(0.2, -128), qo=(0.05, 0), options={"alpha": -0.7}),
    # LOGISTIC / TANH: fixed output quantization, input scales near and beyond the radius
    "logistic": unary("LOGISTIC", qi=(0.05, 3), qo=(1 / 256, -128)),
    "logistic_coarse": unary("LOGISTIC", (4, 8), qi=(0.3, -128), qo=(1 / 256, -128)),
    "logistic_fine": unary("LOGISTIC", (40,), qi=(0.001, 127), qo=(1 / 256, -128)),
    "logistic_tiny_scale": unary("LOGISTIC", (9,), qi=(1e-9, 0), qo=(1 / 256, -128)),
    "tanh": unary("TANH", qi=(0.05, 3), qo=(1 / 128, 0)),
    "tanh_coarse": unary("TANH", (4, 8), qi=(0.3, -128), qo=(1 / 128, 0)),
    "tanh_fine": unary("TANH", (40,), qi=(0.002, -5), qo=(1 / 128, 0)),
    "tanh_tiny_scale": unary("TANH", (9,), qi=(1e-9, 0), qo=(1 / 128, 0)),
}


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:  # noqa: F811
    it = micronn.Interpreter(CASES[case], planner=planner)
    assert lower.lower_model(it)  # lowers without UnsupportedError
    for seed in (0, 1):
        check_ops(lib, it, inputs_with_extremes(it, seed))


def test_every_int8_input_value(lib: ctypes.CDLL) -> None:  # noqa: F811
    """The unary kernels over all 256 int8 values at once, a few quantizations each."""
    for op, qo in [("RELU", (0.07, -9)), ("RELU6", (0.05, 3)), ("LEAKY_RELU", (0.03, 40)),
                   ("LOGISTIC", (1 / 256, -128)), ("TANH", (1 / 128, 0))]:
        for qi in [(0.05, 3), (0.0123, -128), (0.41, 127)]:
            opts = {"alpha": 0.25} if op == "LEAKY_RELU" else None
            it = micronn.Interpreter(unary(op, (256,), qi=qi, qo=qo, options=opts))
            check_ops(lib, it, [np.arange(-128, 128, dtype=np.int8)])


def test_single_ops_run_in_place() -> None:
    """The optimal plan puts the outputs of some single-op cases over their inputs, so the in-place walks of
    both kinds (binary and unary) are among the cases above."""
    placed = set()
    for model in CASES.values():
        it = micronn.Interpreter(model)
        it.allocate_tensors()
        if lower._Op(it, 0, lower._placements(it)).overlaps():
            placed.add(it._nodes[0].op.op)
    assert {"ADD", "MUL", "RELU", "LOGISTIC"} <= placed


def test_partial_overlap_is_refused() -> None:
    """An output overlapping an input other than exactly in place is refused, not computed wrongly."""
    it = micronn.Interpreter(CASES["add_flat"])
    it.allocate_tensors()
    places = lower._placements(it)
    o = lower._Op(it, 0, places)
    a, out = o.op.inputs[0], o.op.outputs[0]
    o.places = {**places, out: (places[a][0] + 1, places[out][1])}
    with pytest.raises(lower.LowerError, match="other than in place"):
        lower_elementwise.check_in_place(o)


def test_unsupported_shapes_and_axes() -> None:
    """A MEAN with a computed axis tensor is not lowered (its multiplier depends on the axes)."""
    model = op_model("MEAN", [T((2, 3), "int8", 0.1, 0), T((1,), "int32")], [T((2,), "int8", 0.1, 0)],
                     {"keep_dims": False})
    with pytest.raises(UnsupportedError):
        lower.lower_model(micronn.Interpreter(model))


# ---- freestanding builds, and whole models on the emulated Cortex-M4 ------------------------------------------


@pytest.mark.parametrize("cpu", ["cortex_m0", "cortex_m4"])
def test_kernels_cross_compile_freestanding(tmp_path: Path, cpu: str) -> None:
    """This family's kernels build as freestanding C99 for a Cortex-M0 and M4, and need nothing but memcpy,
    memset and the ARM EABI helpers."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    for name in SOURCES:
        obj = tmp_path / f"{name}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "thumb-freestanding-eabi", f"-mcpu={cpu}",
                        "-O2", "-ffreestanding", "-fno-builtin", "-std=c99", "-Wall", "-Wextra", "-Werror",
                        f"-I{lower.include_dir()}", "-c", str(lower.include_dir() / name), "-o", str(obj)],
                       check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            symbols = list(elffile.ELFFile(f).get_section_by_name(".symtab").iter_symbols())
        undefined = {s.name for s in symbols if s.name and s["st_shndx"] == "SHN_UNDEF"}
        assert not {u for u in undefined if u not in ("memcpy", "memset") and not u.startswith("__aeabi_")}, name


def interpreter_outputs(it: micronn.Interpreter, xs: list[np.ndarray]) -> list[np.ndarray]:
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i).copy() for i in range(len(it.subgraph.outputs))]


@pytest.mark.skipif(importlib.util.find_spec("unicorn") is None, reason="unicorn (the Cortex-M emulator) is missing")
@pytest.mark.parametrize("name", ["resnet_tiny_int8", "vnet_like_int8", "mobilenet_v2_pad_int8"])
def test_model_on_cortex_m4(name: str) -> None:
    """The whole model on the emulated Cortex-M4 gives the interpreter's bytes. mobilenet runs with TFLM's
    plan: with the default one its first CONV_2D (not this family) streams over an input it still needs."""
    from micronn.micro import DeviceModel, Session, run_model

    path = MODELS / f"{name}.tflite"
    if name == "mobilenet_v2_pad_int8":
        it = micronn.Interpreter(path, planner="tflm")
        xs = random_inputs(it.model, seed=0)
        with Session("cortex-m4") as sess:
            got = DeviceModel(it, sess).invoke(xs)
    else:
        it = micronn.Interpreter(path)
        xs = random_inputs(it.model, seed=0)
        got = run_model(path, "cortex-m4", xs)["outputs"]
    want = interpreter_outputs(micronn.Interpreter(path), xs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
