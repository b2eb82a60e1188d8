"""Patch-based execution computes the original's bytes: hand-built runs of every supported geometry (strides,
dilation, SAME and VALID padding, explicit PADs, max pooling, residual ADDs), cut into stripes of every size down to
one row, on micronn (through the written file) and on the TFLM wheel."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.ir import Padding, random_inputs
from micronn.patch import PatchError, find_run, macs, patch
from micronn.patch.transform import receptive_rows, stripes
from micronn.testing import Graph, Op, T, graph_ir, run_tflm
from micronn.tflite.writer import write

Q = dict(scale=0.05, zero_point=-3)


def chain(layers: list[tuple], h: int = 13, w: int = 11, c: int = 3, dtype: str = "int8", seed: int = 0) -> Graph:
    """A graph running ``layers`` one after another on a (1, h, w, c) image.

    A layer is ("conv", cout, k, stride, dilation, padding), ("dw", k, stride, dilation, padding),
    ("maxpool" | "avgpool", k, stride, padding), ("pad", top, bottom, left, right), ("relu",) or
    ("residual", k): a depthwise k x k SAME convolution added back to its input.
    """
    rng = np.random.default_rng(seed)
    q = Q if dtype == "int8" else {}

    def wq(n: int) -> dict:
        return dict(scale=list(rng.uniform(0.01, 0.03, n)), zero_point=0, axis=0) if dtype == "int8" else {}

    def act(shape: tuple) -> T:
        return T(shape, dtype, **q)

    def weights(shape: tuple, axis: int) -> T:
        n = shape[axis]
        data = rng.integers(-127, 128, shape) if dtype == "int8" else rng.uniform(-1, 1, shape).astype(np.float32)
        spec = wq(n)
        if spec:
            spec["axis"] = axis
        return T(shape, dtype, data=data, **spec)

    def bias(n: int) -> T:
        return T((n,), "int32" if dtype == "int8" else "float32",
                 data=rng.integers(-500, 500, n) if dtype == "int8" else rng.uniform(-1, 1, n).astype(np.float32))

    def out_size(size: int, k: int, stride: int, dilation: int, padding: int) -> int:
        eff = (k - 1) * dilation + 1
        return -(-size // stride) if padding == Padding.SAME else (size - eff) // stride + 1

    tensors: dict[str, T] = {"x": act((1, h, w, c))}
    ops: list[Op] = []
    cur, shape = "x", (1, h, w, c)
    for i, (kind, *a) in enumerate(layers):
        name = f"t{i}"
        if kind == "conv":
            cout, k, s, d, p = a
            tensors[f"w{i}"], tensors[f"b{i}"] = weights((cout, k, k, shape[3]), 0), bias(cout)
            shape = (1, out_size(shape[1], k, s, d, p), out_size(shape[2], k, s, d, p), cout)
            ops.append(Op("CONV_2D", [cur, f"w{i}", f"b{i}"], [name], dict(
                padding=p, stride_h=s, stride_w=s, dilation_h_factor=d, dilation_w_factor=d,
                fused_activation_function=1)))
        elif kind == "dw":
            k, s, d, p = a
            cin = shape[3]
            shape = (1, out_size(shape[1], k, s, d, p), out_size(shape[2], k, s, d, p), cin)
            tensors[f"w{i}"], tensors[f"b{i}"] = weights((1, k, k, cin), 3), bias(cin)
            ops.append(Op("DEPTHWISE_CONV_2D", [cur, f"w{i}", f"b{i}"], [name], dict(
                padding=p, stride_h=s, stride_w=s, dilation_h_factor=d, dilation_w_factor=d, depth_multiplier=1,
                fused_activation_function=3)))
        elif kind in ("maxpool", "avgpool"):
            k, s, p = a
            shape = (1, out_size(shape[1], k, s, 1, p), out_size(shape[2], k, s, 1, p), shape[3])
            ops.append(Op("MAX_POOL_2D" if kind == "maxpool" else "AVERAGE_POOL_2D", [cur], [name], dict(
                padding=p, stride_h=s, stride_w=s, filter_height=k, filter_width=k)))
        elif kind == "pad":
            top, bottom, left, right = a
            shape = (1, shape[1] + top + bottom, shape[2] + left + right, shape[3])
            tensors[f"p{i}"] = T((4, 2), "int32", data=[[0, 0], [top, bottom], [left, right], [0, 0]])
            ops.append(Op("PAD", [cur, f"p{i}"], [name]))
        elif kind == "relu":
            ops.append(Op("RELU", [cur], [name]))
        elif kind == "residual":
            (k,) = a
            tensors[f"w{i}"], tensors[f"b{i}"] = weights((1, k, k, shape[3]), 3), bias(shape[3])
            tensors[f"r{i}"] = act(shape)
            ops.append(Op("DEPTHWISE_CONV_2D", [cur, f"w{i}", f"b{i}"], [f"r{i}"], dict(
                padding=Padding.SAME, stride_h=1, stride_w=1, dilation_h_factor=1, dilation_w_factor=1,
                depth_multiplier=1)))
            ops.append(Op("ADD", [f"r{i}", cur], [name]))
        tensors[name] = act(shape)
        cur = name
    # a tail the run feeds: average over everything, so a wrong row anywhere shows
    tensors["axes"] = T((2,), "int32", data=[1, 2])
    tensors["y"] = T((1, shape[3]), dtype, **q)
    ops.append(Op("MEAN", [cur, "axes"], ["y"]))
    tensors["y2"] = act(shape)
    ops.append(Op("RELU", [cur], ["y2"]))
    return Graph(tensors, ops, ["x"], ["y", "y2"])


def outputs(model, xs) -> list[bytes]:
    it = Interpreter(write(model))
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i).tobytes() for i in range(len(it.model.main.outputs))]


def check(layers: list[tuple], n, *, wheel: bool = True, **kw) -> None:
    m = graph_ir(chain(layers, **kw))
    ops = sum(2 if kind == "residual" else 1 for kind, *_ in layers)
    pm = patch(m, 0, ops - 1, n)
    for seed in (1, 2):
        xs = random_inputs(m, seed)
        want = outputs(m, xs)
        assert outputs(pm, xs) == want
        if wheel:
            assert [o.tobytes() for o in run_tflm(write(pm), xs)] == want


S, V = Padding.SAME, Padding.VALID
GEOMETRIES = {
    "conv3x3 s1 same": [("conv", 4, 3, 1, 1, S)],
    "conv3x3 s2 same": [("conv", 4, 3, 2, 1, S)],
    "conv3x3 s2 valid": [("conv", 4, 3, 2, 1, V)],
    "conv3x3 dilation2 same": [("conv", 4, 3, 1, 2, S)],
    "conv5x5 s2 dilation2 valid": [("conv", 4, 5, 2, 2, V)],
    "conv4x4 s2 same (asymmetric pads)": [("conv", 4, 4, 2, 1, S)],
    "dw3x3 s2 same": [("dw", 3, 2, 1, S)],
    "dw5x5 s1 same": [("dw", 5, 1, 1, S)],
    "dw3x3 s2 dilation3 same": [("dw", 3, 2, 3, S)],
    "maxpool3x3 s2 same": [("maxpool", 3, 2, S)],
    "maxpool2x2 s2 valid": [("maxpool", 2, 2, V)],
    "avgpool2x2 s2 valid": [("avgpool", 2, 2, V)],
    "pad then valid conv": [("pad", 1, 2, 1, 0), ("conv", 4, 3, 2, 1, V)],
    "mobilenet block": [("conv", 8, 3, 2, 1, S), ("dw", 3, 1, 1, S), ("conv", 4, 1, 1, 1, S), ("relu",),
                        ("dw", 3, 2, 1, S)],
    "residual": [("conv", 4, 1, 1, 1, V), ("residual", 3), ("maxpool", 3, 2, S)],
}


@pytest.mark.parametrize("layers", GEOMETRIES.values(), ids=GEOMETRIES.keys())
@pytest.mark.parametrize("n", [2, 3, "rows"])
def test_patched_run_is_byte_identical(layers, n) -> None:
    m = graph_ir(chain(layers))
    ops = sum(2 if kind == "residual" else 1 for kind, *_ in layers)
    height = m.main.tensors[m.main.operators[ops - 1].outputs[0]].shape[1]
    check(layers, min(height, 10) if n == "rows" else n)  # "rows": one-row stripes (TFLM joins at most 10)


def test_one_row_stripes_of_a_small_image() -> None:
    check([("conv", 4, 3, 1, 1, S), ("dw", 3, 2, 1, S)], 4, h=8, w=6)


def test_uneven_stripes_and_float() -> None:
    check([("conv", 4, 3, 2, 1, S), ("dw", 3, 1, 2, S)], [1, 2, 4])
    check([("conv", 4, 3, 2, 1, S), ("avgpool", 2, 2, V)], 3, dtype="float32")


def test_receptive_rows() -> None:
    m = graph_ir(chain([("conv", 4, 3, 2, 1, S), ("dw", 3, 1, 1, S)], h=16))  # 16 rows -> 8 -> 8
    run = find_run(m, 0, 1)
    need = receptive_rows(m.main, run, (2, 3))
    assert need[run.y] == (2, 3)
    assert need[m.main.operators[0].outputs[0]] == (1, 4)  # the 3x3 SAME depthwise reads one row either side
    assert need[run.x] == (2, 10)  # rows 2 * 1 - 0 .. 2 * 4 - 0 + 3 - 1 of the stride-2 conv (SAME pads 0 above)
    assert stripes(10, 3) == [(0, 2), (3, 5), (6, 9)]


def test_added_macs_are_the_halo() -> None:
    m = graph_ir(chain([("conv", 4, 1, 1, 1, V), ("conv", 4, 1, 1, 1, V)]))
    assert macs(patch(m, 0, 1, 5)) == macs(m)  # 1x1 layers: stripes recompute nothing
    m = graph_ir(chain([("conv", 4, 3, 1, 1, S), ("conv", 4, 3, 1, 1, S)]))
    assert macs(patch(m, 0, 1, 2)) > macs(m)


def test_runs_that_cannot_be_cut() -> None:
    avg_same = graph_ir(chain([("conv", 4, 3, 1, 1, S), ("avgpool", 3, 1, S)]))
    with pytest.raises(PatchError, match="average pooling"):
        find_run(avg_same, 0, 1)
    m = graph_ir(chain([("conv", 4, 3, 1, 1, S), ("residual", 3)]))  # conv -> dw -> ADD(dw, conv)
    with pytest.raises(PatchError, match="read after"):  # the ADD after the run reads the conv's output
        find_run(m, 0, 1)
    assert find_run(m, 0, 2).y == m.main.operators[2].outputs[0]
    with pytest.raises(PatchError, match="not a spatially local"):
        find_run(m, 0, 3)  # operator 3 is the MEAN
    with pytest.raises(PatchError, match="stripes"):
        patch(m, 0, 2, 11)  # more than TFLM's CONCATENATION joins
    with pytest.raises(PatchError, match="cannot cut"):
        stripes(3, 4)


def test_pad_folding_keeps_rows_a_same_convolution_would_pad() -> None:
    """A stripe's PAD + VALID convolution whose output is not SAME's size for its input: micronn's PAD folding must
    keep the explicit padding (SAME would derive another from ceil(rows / stride)), or the default plan computes
    other bytes than the file means (it did, before micronn.planners.fold checked the size)."""
    from micronn.planners import fold_pads

    m = graph_ir(chain([("conv", 4, 3, 2, 1, S)], h=16))
    pm = patch(m, 0, 0, 2)
    folded, removed = fold_pads(pm)
    assert removed  # the stripes' width PADs fold ...
    convs = [op for op in folded.main.operators if op.op == "CONV_2D"]
    sg = folded.main
    for op in convs:  # SAME only where its padding is the PAD's: the output has ceil(rows / stride) rows
        x, y = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
        assert op.explicit_padding is not None or y.shape[1] == -(-x.shape[1] // 2)
    assert any(op.explicit_padding is not None for op in convs)  # the top stripe: 9 rows in, 4 out
    xs = random_inputs(m, 4)
    assert outputs(pm, xs) == outputs(m, xs)  # ... and the default interpreter (which folds) computes the same


def test_stripes_reading_only_padding_are_refused() -> None:
    m = graph_ir(chain([("pad", 3, 0, 0, 0), ("conv", 4, 1, 1, 1, V)], h=6))  # rows 0..2 of the PAD are padding
    with pytest.raises(PatchError, match="only padding"):
        patch(m, 0, 1, 9)
    check([("pad", 3, 0, 0, 0), ("conv", 4, 1, 1, 1, V)], 2, h=6)  # two stripes: the top one also reads real rows
