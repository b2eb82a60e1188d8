"""TFLM's look-up-table compression in the reader and writer (COMPRESSION_METADATA), the decompression scratch
the interpreter plans, and the DECODE custom operator, all against the TFLM wheel."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from micronn import Interpreter, ModelError
from micronn.compress.lut import table_axis, tables_for
from micronn.ir import Lut, pack_indices
from micronn.testing import (
    Graph,
    Op,
    T,
    assert_identical,
    assert_same_as_tflm,
    graph_model,
    op_model,
    run_tflm,
    tflm_arena,
)
from micronn.tflite.reader import read
from micronn.tflite.writer import _lut_metadata, _Writer, write

RNG = np.random.default_rng(7)


def levels(shape: tuple[int, ...], n: int, dtype: str = "int8", per: int | None = None) -> np.ndarray:
    """Values drawn from ``n`` levels (per slice along axis ``per`` when given: each channel its own levels)."""
    if per is None:
        return RNG.choice(np.unique(RNG.integers(-120, 120, n)), shape).astype(dtype)
    moved = (shape[per],) + shape[:per] + shape[per + 1:]
    rows = [RNG.choice(np.unique(RNG.integers(-120, 120, n)), moved[1:]) for _ in range(shape[per])]
    return np.moveaxis(np.stack(rows), 0, per).astype(dtype)


def compressed(model: bytes, tensors: list[int | tuple[int, int]], bits: int | None = None) -> bytes:
    """``model`` with constants ``tensors`` (of the main subgraph, or (subgraph, tensor)) LUT-compressed at ``bits``
    (default: the narrowest that fits), tables laid out as TFLM reads them (per channel when quantized so)."""
    m = read(model)
    for i in tensors:
        s, i = i if isinstance(i, tuple) else (0, i)
        t = m.subgraphs[s].tensors[i]
        axis, usable = table_axis(t)
        assert usable
        tables, widest = tables_for(np.asarray(t.data), axis)
        t.lut = Lut(tables, bits or max(1, (widest - 1).bit_length()), axis)
    return write(m)


def check(model: bytes, tensors: list[int | tuple[int, int]], bits: int | None = None) -> bytes:
    """Compress, then: micronn == TFLM byte for byte, both == the uncompressed model, heads equal TFLM's."""
    c = compressed(model, tensors, bits)
    assert read(c) != read(model)  # it did compress
    runs = assert_same_as_tflm(c, runs=2)
    plain = assert_same_as_tflm(model, runs=2)
    for r, (a, b) in enumerate(zip(runs, plain, strict=True)):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"run {r} output {k} (compressed vs plain)")
    it = Interpreter(c, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(c)["head"]
    return c


def fc(per_channel: bool, n: int = 8, dtype: str = "int8") -> bytes:
    scale = [0.01 + 0.001 * k for k in range(8)] if per_channel else 0.01
    w = levels((8, 16), n, per=0 if per_channel else None)
    b = levels((8,), 3, "int32", per=0 if per_channel else None)
    return op_model("FULLY_CONNECTED", [T((1, 16), "int8", 0.5, 0), T((8, 16), "int8", scale, 0, data=w),
                                        T((8,), "int32", np.asarray(scale) * 0.5, 0, data=b)],
                    [T((1, 8), "int8", 0.3, 1)])


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("bits", range(1, 8))
def test_every_index_width(bits: int, per_channel: bool) -> None:
    check(fc(per_channel, 2**bits), [1], bits)


def test_weights_and_bias_each_take_a_scratch_buffer() -> None:
    model = fc(True)
    plain = tflm_arena(model)["head"]
    assert tflm_arena(check(model, [1, 2]))["head"] == plain + 128 + 32


def test_float_and_int16_fully_connected() -> None:
    w = levels((8, 16), 5).astype(np.float32) / 7
    check(op_model("FULLY_CONNECTED", [T((1, 16), "float32"), T((8, 16), "float32", data=w),
                                       T((8,), "float32", data=levels((8,), 3).astype(np.float32))],
                   [T((1, 8), "float32")]), [1, 2])
    check(op_model("FULLY_CONNECTED", [T((1, 16), "int16", 0.5, 0),
                                       T((8, 16), "int8", 0.01, 0, data=levels((8, 16), 9)),
                                       T((8,), "int64", 0.005, 0, data=levels((8,), 3, "int64"))],
                   [T((1, 8), "int16", 0.3, 0)]), [1, 2])


def test_conv_2d() -> None:
    scale = [0.01, 0.02, 0.03, 0.04]
    check(op_model("CONV_2D", [T((1, 6, 6, 3), "int8", 0.5, 0),
                               T((4, 3, 3, 3), "int8", scale, 0, data=levels((4, 3, 3, 3), 6, per=0)),
                               T((4,), "int32", np.asarray(scale) / 2, 0, data=levels((4,), 3, "int32", per=0))],
                   [T((1, 4, 4, 4), "int8", 0.3, 1)], {"stride_w": 1, "stride_h": 1}), [1, 2])


def test_depthwise_conv_2d_tables_along_the_last_axis() -> None:
    check(op_model("DEPTHWISE_CONV_2D", [T((1, 6, 6, 3), "int8", 0.5, 0),
                                         T((1, 3, 3, 6), "int8", [0.01] * 6, 0, axis=3,
                                           data=levels((1, 3, 3, 6), 5, per=3)),
                                         T((6,), "int32", [0.005] * 6, 0, data=levels((6,), 3, "int32", per=0))],
                   [T((1, 4, 4, 6), "int8", 0.3, 1)],
                   {"padding": 1, "depth_multiplier": 2, "stride_w": 1, "stride_h": 1}), [1, 2])


def test_transpose_conv() -> None:
    check(op_model("TRANSPOSE_CONV", [T((4,), "int32", data=[1, 8, 8, 2]),
                                      T((2, 3, 3, 3), "int8", [0.01, 0.02], 0, data=levels((2, 3, 3, 3), 7, per=0)),
                                      T((1, 4, 4, 3), "int8", 0.5, 0),
                                      T((2,), "int32", [0.005, 0.01], 0, data=levels((2,), 2, "int32", per=0))],
                   [T((1, 8, 8, 2), "int8", 0.3, 1)], {"padding": 0, "stride_h": 2, "stride_w": 2}), [1, 3])


def test_concatenation() -> None:
    check(op_model("CONCATENATION", [T((1, 16), "int8", 0.5, 0), T((1, 8), "int8", 0.5, 0, data=levels((1, 8), 3)),
                                     T((1, 4), "int8", 0.5, 0, data=levels((1, 4), 2))],
                   [T((1, 28), "int8", 0.5, 0)], {"axis": 1}), [1, 2])


def test_assign_variable_in_a_called_subgraph() -> None:
    """The value CALL_ONCE assigns is compressed in subgraph 1, a CONCATENATION input in subgraph 0 (TFLM needs a
    compressed tensor in every subgraph the metadata lists)."""
    from micronn.ir import RESOURCE

    f32 = "float32"
    main = Graph({"x": T((1, 8), f32), "h": T((), RESOURCE), "v": T((1, 8), f32), "s": T((1, 8), f32),
                  "c": T((1, 8), f32, data=levels((1, 8), 2).astype(np.float32)), "y": T((1, 16), f32)},
                 [Op("CALL_ONCE", [], [], {"init_subgraph_index": 1}),
                  Op("VAR_HANDLE", [], ["h"], {"shared_name": "s"}), Op("READ_VARIABLE", ["h"], ["v"]),
                  Op("ADD", ["x", "v"], ["s"]), Op("CONCATENATION", ["s", "c"], ["y"], {"axis": 1})], ["x"], ["y"])
    init = Graph({"h": T((), RESOURCE), "c": T((1, 8), f32, data=levels((1, 8), 3).astype(np.float32))},
                 [Op("VAR_HANDLE", [], ["h"], {"shared_name": "s"}), Op("ASSIGN_VARIABLE", ["h", "c"], [])], [], [])
    check(graph_model(main, init), [(0, 4), (1, 1)])
    with pytest.raises(ValueError, match="subgraph 0 has no LUT-compressed tensor"):
        compressed(graph_model(main, init), [(1, 1)])


def test_round_trip_keeps_the_tables() -> None:
    c = compressed(fc(True), [1, 2], 5)
    m = read(c)
    assert [t.index for t in m.main.tensors if t.lut is not None] == [1, 2]
    assert m.main.tensors[1].lut.bits == 5 and m.main.tensors[1].lut.axis == 0
    again = write(m)
    assert read(again) == m and "COMPRESSION_METADATA" not in m.metadata
    x = [RNG.integers(-128, 128, (1, 16), dtype=np.int8)]
    assert_identical(run_tflm(again, x)[0], run_tflm(c, x)[0])


def test_reader_decompresses_the_documented_example() -> None:
    """The int16 example of TFLM's compression docs: values [2, 4, 4, 10, 1, 7, 99, 10, 2, 4] at 3 bits."""
    data = np.array([2, 4, 4, 10, 1, 7, 99, 10, 2, 4], np.int16)
    table = np.array([[99, 2, 10, 4, 1, 7]], np.int16)
    assert pack_indices(Lut(table, 3).indices(data), 3) == int("00101101101010010100001000101100", 2).to_bytes(4, "big")
    m = read(op_model("CONCATENATION", [T((10,), "int16", 1.0, 0), T((10,), "int16", 1.0, 0, data=data)],
                      [T((20,), "int16", 1.0, 0)], {"axis": 0}))
    m.main.tensors[1].lut = Lut(table, 3)
    assert_identical(np.asarray(read(write(m)).main.tensors[1].data), data)


# ---- what TFLM would run on garbage, or refuse ------------------------------------------------------------------


def hostile(model: bytes, packed: bytes | None = None, table: bytes | None = None, bits: int = 2,
            entries: object = None, blob: bytes | None = None) -> bytes:
    """``fc``-like ``model`` with tensor 1 replaced by ``packed`` indices, a value buffer ``table`` and metadata
    listing ``entries`` (default: that one tensor; a callable gets the value buffer index) or the raw ``blob``."""
    m = read(model)
    w = _Writer(m)
    wt = np.asarray(m.main.tensors[1].data)
    t, _ = tables_for(wt, None)
    lut = Lut(t, max(1, (t.shape[1] - 1).bit_length()))
    buf = w.tensor_buffers[0][1]
    w.buffers.data[buf] = pack_indices(lut.indices(wt), lut.bits) if packed is None else packed
    vb = w.buffers.add(t.tobytes() if table is None else table)
    listed = [[(1, vb, bits if bits is not None else lut.bits)]] if entries is None else (
        entries(vb) if callable(entries) else entries)
    meta = _lut_metadata(listed) if blob is None else blob
    m.metadata = {"COMPRESSION_METADATA": meta}
    w.metadata_buffers = {"COMPRESSION_METADATA": w.buffers.add(meta)}
    return w.build()


def _model() -> bytes:
    return op_model("FULLY_CONNECTED", [T((1, 16), "int8", 0.5, 0),
                                        T((8, 16), "int8", 0.01, 0, data=RNG.choice([-5, 3, 9, 40], (8, 16))),
                                        T((8,), "int32", 0.005, 0, data=np.arange(8))], [T((1, 8), "int8", 0.3, 1)])


def test_hostile_tables_and_widths() -> None:
    model = _model()
    assert read(hostile(model)).main.tensors[1].lut is not None  # the well-formed base case reads
    cases = {
        "bit width 0": hostile(model, bits=0),
        "bit width 8": hostile(model, bits=8),
        "holds 31 bytes": hostile(model, packed=bytes(31)),
        "holds 0 bytes": hostile(model, table=b""),
        "index 3 but": hostile(model, table=bytes([1, 2, 3])),
        "tensor 99": hostile(model, entries=lambda vb: [[(1, vb, 2), (99, vb, 2)]]),
        "names tensor -1": hostile(model, entries=lambda vb: [[(-1, vb, 2)]]),
        "buffer index 999": hostile(model, entries=[[(1, 999, 2)]]),
        "listed twice": hostile(model, entries=lambda vb: [[(1, vb, 2), (1, vb, 2)]]),
        "describes 2 subgraphs": hostile(model, entries=lambda vb: [[(1, vb, 2)], []]),
        "lists no subgraphs": hostile(model, entries=[]),
        "subgraph 0 lists no tensor": hostile(model, entries=[[]]),
        "is not a constant": hostile(model, entries=lambda vb: [[(1, vb, 2), (0, vb, 2)]]),
        "malformed": hostile(model, blob=b"\xff\xff\xff\x7f" + bytes(8)),
    }
    for why, data in cases.items():
        with pytest.raises(ModelError, match=why):
            read(data)
    with pytest.raises(ModelError, match="'input1'"):  # errors about a tensor name it
        read(cases["bit width 8"])


def test_newer_schema_version_is_refused() -> None:
    model = _model()
    m = read(model)
    w = _Writer(m)
    wt = np.asarray(m.main.tensors[1].data)
    t, _ = tables_for(wt, None)
    w.buffers.data[w.tensor_buffers[0][1]] = pack_indices(Lut(t, 2).indices(wt), 2)
    blob = bytearray(_lut_metadata([[(1, w.buffers.add(t.tobytes()), 2)]]))
    version = blob.find(bytes([1, 0, 0, 0]), 4)  # the only uint32 1 written: schema_version
    blob[version] = 2
    m.metadata = {"COMPRESSION_METADATA": bytes(blob)}
    w.metadata_buffers = {"COMPRESSION_METADATA": w.buffers.add(bytes(blob))}
    with pytest.raises(ModelError, match="schema version 2"):
        read(w.build())


def test_per_channel_tables_must_divide_evenly() -> None:
    model = fc(True)
    m = read(model)
    wt = np.asarray(m.main.tensors[1].data)
    tables, _ = tables_for(wt, 0)
    lut = Lut(tables, 3, 0)
    with pytest.raises(ModelError, match="not 8 equal table"):
        read(hostile(model, packed=pack_indices(lut.indices(wt), 3), table=tables.tobytes()[:-1], bits=3))


def test_readers_that_do_not_decompress_are_refused() -> None:
    """TFLM's ADD would compute with the packed indices: micronn refuses instead."""
    model = op_model("ADD", [T((1, 16), "int8", 0.5, 0), T((1, 16), "int8", 0.5, 0, data=levels((1, 16), 4))],
                     [T((1, 16), "int8", 0.5, 0)])
    with pytest.raises(ModelError, match="does not decompress"):
        Interpreter(compressed(model, [1]))


def test_writer_refuses_values_missing_from_the_table() -> None:
    m = read(fc(False))
    m.main.tensors[1].lut = Lut(np.zeros((1, 4), np.int8), 2)
    with pytest.raises(ValueError, match="missing from value table"):
        write(m)


# ---- DECODE ---------------------------------------------------------------------------------------------------


def tool_compressed(model: bytes, tensors: list[int], bits: int) -> bytes:
    """The model compressed by the wheel's own tool, which inserts DECODE operators."""
    from tflite_micro.tensorflow.lite.micro import compression
    from tflite_micro.tensorflow.lite.micro.compression import spec

    m = read(model)
    specs = []
    for i in tensors:
        axis, _ = table_axis(m.main.tensors[i])
        mode = spec.PerTensor() if axis is None else spec.PerChannel(axis=axis)
        specs.append(spec.Tensor(0, i, [spec.LookUpTableCompression(bits, mode)]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bytes(compression.compress(model, specs))


@pytest.mark.parametrize("bits", [1, 4, 7])
def test_decode_made_by_the_wheels_tool(bits: int) -> None:
    for model, tensors in ((fc(True, 2), [1, 2]), (fc(False, 2), [1]),
                           (op_model("ADD", [T((1, 16), "int8", 0.5, 0),
                                             T((1, 16), "int8", 0.5, 0, data=levels((1, 16), 2))],
                                     [T((1, 16), "int8", 0.5, 0)]), [1])):
        c = tool_compressed(model, tensors, bits)
        assert "TFLM_DECODE" in read(c).op_names()
        assert_same_as_tflm(c, runs=2)
        it = Interpreter(c, planner="tflm")
        it.allocate_tensors()
        assert it.head == tflm_arena(c)["head"]
