"""Spill, Fetch and FetchConv2D (TinySeg's custom ops) equal the CONCATENATION (+ CONV_2D) they replace, byte for
byte, through every storage backend's interface; bad options and missing data are clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import MicronnError, PrepareError
from micronn.kernels._custom_options import custom_options
from micronn.storage import MemoryStorage, StorageError
from micronn.testing import Graph, Op, T, graph_ir, random_inputs
from micronn.tflite.writer import write

Q = dict(scale=0.05, zero_point=3)


def _run(model, inputs, storage=None) -> list[np.ndarray]:
    it = Interpreter(write(model), storage=storage)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i) for i in range(len(model.main.outputs))]


def _pair(ref: Graph, fused: Graph, seed: int = 0, storage=None) -> None:
    a, b = graph_ir(ref), graph_ir(fused)
    xs = random_inputs(a, seed)
    for want, got in zip(_run(a, xs), _run(b, xs, storage)):
        assert want.dtype == got.dtype and want.shape == got.shape and want.tobytes() == got.tobytes()


def _conv_case(kind: str = "int8", n: int = 1, h: int = 7, w: int = 6,
               parts: tuple[tuple[int, bool], ...] = ((3, False), (2, True)), fh: int = 3, fw: int = 3,
               stride=(1, 1), dil=(1, 1), pad: int = 0, act: int = 0, groups: int = 1,
               seed: int = 0) -> tuple[Graph, Graph]:
    """CONCATENATION + CONV_2D and the same with the ``spilled`` parts through Spill + FetchConv2D."""
    rng = np.random.default_rng(seed)
    cin = sum(c for c, _ in parts)
    cout = 4 if groups == 1 else groups * 2
    from micronn.kernels._conv_util import compute_out_size

    oh, ow = compute_out_size(pad, h, fh, stride[0], dil[0]), compute_out_size(pad, w, fw, stride[1], dil[1])
    q = {} if kind == "float32" else Q if kind == "int8" else {"scale": 0.05, "zero_point": 0}
    tensors = {f"p{i}": T((n, h, w, c), kind, **q) for i, (c, _) in enumerate(parts)}
    if kind == "float32":
        wt = T((cout, fh, fw, cin // groups), "float32", data=rng.uniform(-1, 1, (cout, fh, fw, cin // groups)))
        bias = T((cout,), "float32", data=rng.uniform(-1, 1, cout))
        y = T((n, oh, ow, cout), "float32")
    else:
        wt = T((cout, fh, fw, cin // groups), "int8", list(rng.uniform(0.002, 0.02, cout)), 0,
               data=rng.integers(-127, 128, (cout, fh, fw, cin // groups)))
        bias = T((cout,), "int32" if kind == "int8" else "int64", data=rng.integers(-3000, 3000, cout))
        y = T((n, oh, ow, cout), kind, 0.3 if kind == "int8" else 0.02, -5 if kind == "int8" else 0)
    conv = dict(padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                dilation_w_factor=dil[1], fused_activation_function=act)
    names = list(tensors)
    ref = Graph({**tensors, "c": T((n, h, w, cin), kind, **q), "w": wt, "b": bias, "y": y},
                [Op("CONCATENATION", names, ["c"], {"axis": 3}), Op("CONV_2D", ["c", "w", "b"], ["y"], conv)],
                names, ["y"])
    spilled = [i for i, (_, s) in enumerate(parts) if s]
    opts = dict(victims=[10 + i for i in spilled], positions=spilled, sizes=[parts[i][0] for i in spilled], axis=3,
                height=h, width=w, **conv, **q)
    ops = [Op("Spill", [f"p{i}"], [], custom_options=custom_options(id=10 + i)) for i in spilled]
    ops.append(Op("FetchConv2D", [f"p{i}" for i, (_, s) in enumerate(parts) if not s] + ["w", "b"], ["y"],
                  custom_options=custom_options(**opts)))
    fused = Graph({**tensors, "w": wt, "b": bias, "y": y}, ops, names, ["y"])
    return ref, fused


@pytest.mark.parametrize("case", [
    {}, {"pad": 1}, {"stride": (2, 2), "h": 8, "w": 9}, {"stride": (2, 1), "pad": 1, "h": 9}, {"dil": (2, 2), "h": 9},
    {"act": 1}, {"n": 2}, {"fh": 1, "fw": 1}, {"fh": 5, "fw": 1, "h": 8},
    {"groups": 5, "parts": ((5, False), (5, True))},
    {"parts": ((2, True), (3, False))}, {"parts": ((2, True), (1, False), (3, True))}, {"parts": ((4, True),)},
    {"parts": ((1, True), (3, True)), "pad": 1, "stride": (2, 2)}, {"kind": "int16"}, {"kind": "float32"},
    {"kind": "float32", "pad": 1, "stride": (2, 2), "h": 9},
])
def test_fetch_conv_2d_equals_concat_conv(case):
    _pair(*_conv_case(**case))


def test_fetch_conv_2d_reads_each_row_once_into_a_small_ring():
    ref, fused = _conv_case(h=11, w=6, parts=((3, False), (2, True)))
    storage = MemoryStorage()
    _pair(ref, fused, storage=storage)
    assert storage.stats.bytes_read == 11 * 6 * 2  # every spilled row once, not three times
    it = Interpreter(write(graph_ir(fused)), storage=MemoryStorage())
    it.allocate_tensors()
    scratch = [b for b in it.arena_report()["buffers"] if b["kind"] == "scratch"]
    assert [b["size"] for b in scratch] == [48]  # 3 rows x 6 pixels x 2 channels = 36 B, aligned to 16


def _fetch_case(axis: int, positions: list[int], plain: bool = False) -> tuple[Graph, Graph]:
    shape = [2, 3, 4, 5]
    parts = [tuple(shape[:axis] + [k + 1] + shape[axis + 1:]) for k in range(3)]
    tensors = {f"p{i}": T(s, "int8", **Q) for i, s in enumerate(parts)}
    names = list(tensors)
    total = tuple(shape[:axis] + [6] + shape[axis + 1:])
    if plain:  # no concatenation: a spilled tensor comes back as it was, read again by an ADD
        ref = Graph({**tensors, "y": T(parts[0], "int8", **Q)}, [Op("ADD", ["p0", "p0"], ["y"])], names[:1], ["y"])
        fused = Graph({**tensors, "f": T(parts[0], "int8", **Q), "y": T(parts[0], "int8", **Q)},
                      [Op("Spill", ["p0"], [], custom_options=custom_options(id=4)),
                       Op("Fetch", [], ["f"], custom_options=custom_options(victims=[4], positions=[0],
                                                                             sizes=[1], axis=axis)),
                       Op("ADD", ["f", "f"], ["y"])], names[:1], ["y"])
        return ref, fused
    ref = Graph({**tensors, "y": T(total, "int8", **Q)}, [Op("CONCATENATION", names, ["y"], {"axis": axis})],
                names, ["y"])
    fused = Graph({**tensors, "y": T(total, "int8", **Q)},
                  [Op("Spill", [f"p{p}"], [], custom_options=custom_options(id=p)) for p in positions]
                  + [Op("Fetch", [f"p{i}" for i in range(3) if i not in positions], ["y"],
                        custom_options=custom_options(victims=positions, positions=positions,
                                                      sizes=[p + 1 for p in positions], axis=axis - 4))],
                  names, ["y"])
    return ref, fused


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
@pytest.mark.parametrize("positions", [[0], [1], [0, 2], [0, 1, 2]])
def test_fetch_equals_concatenation(axis, positions):
    _pair(*_fetch_case(axis, positions))


@pytest.mark.parametrize("axis", [0, 3])
def test_plain_fetch_restores_the_tensor_and_drops_it(axis):
    storage = MemoryStorage()
    _pair(*_fetch_case(axis, [0], plain=True), storage=storage)
    assert storage.stats.puts == 1 and storage.stats.gets >= 1


def test_spill_has_no_output_and_survives_write_read():
    from micronn.tflite.reader import read

    _, fused = _fetch_case(3, [1])
    m = read(write(graph_ir(fused)))
    assert m.main.operators[0].op == "Spill" and m.main.operators[0].outputs == []
    m.validate()


def _one(op: str, options: bytes | None, inputs=("p0",), outputs=("y",)) -> bytes:
    t = {"p0": T((1, 2, 2, 1), "int8", **Q), "y": T((1, 2, 2, 2), "int8", **Q)}
    return write(graph_ir(Graph(t, [Op(op, list(inputs), list(outputs), custom_options=options)], ["p0"],
                                list(outputs) or ["p0"])))


@pytest.mark.parametrize("op,options,match", [
    ("Spill", None, "FlexBuffer map"),
    ("Spill", b"\x01\x02\x03", "FlexBuffer"),
    ("Spill", custom_options(victim=3), "'id' is missing"),
    ("Spill", custom_options(id="x"), "not int"),
    ("Spill", custom_options(id=-1), "id must be >= 0"),
    ("Fetch", custom_options(victims=[1], positions=[1], sizes=[1]), None),
    ("Fetch", custom_options(victims=[1], positions=[0, 1], sizes=[1]), "as many positions"),
    ("Fetch", custom_options(victims=[1], positions=[5], sizes=[1], axis=3), "distinct places"),
    ("Fetch", custom_options(victims=[1], positions=[1], sizes=[2], axis=3), "add up to 3"),
    ("Fetch", custom_options(victims=[1], positions=[1], sizes=[1], axis=7), "out of range"),
    ("Fetch", custom_options(victims=[1.5], positions=[1], sizes=[1]), "list of ints"),
])
def test_bad_options_are_prepare_errors(op, options, match):
    model = _one(op, options, outputs=() if op == "Spill" else ("y",))
    if match is None:  # the valid baseline of the cases below
        Interpreter(model).allocate_tensors()
        return
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()


def test_fetch_of_data_never_spilled_is_a_storage_error():
    model = _one("Fetch", custom_options(victims=[9], positions=[1], sizes=[1], axis=3))
    it = Interpreter(model, storage=MemoryStorage())
    it.set_input(np.zeros((1, 2, 2, 1), np.int8))
    with pytest.raises(StorageError):
        it.invoke()
    assert issubclass(StorageError, MicronnError)
