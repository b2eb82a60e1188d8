"""Memory sharing: aliasing, in-place and streaming overlap stay byte-identical and below the live-set bound."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn import Interpreter, planners
from micronn.ir import Padding
from micronn.planners import Sharing
from micronn.planners.sharing import stream_gap, window_low_read
from micronn.testing import T, assert_same_as_tflm, op_model, random_inputs, run_tflm
from micronn.tflite.reader import read


def test_person_detect_goes_below_its_bound_byte_identical() -> None:
    data = model_bytes("person_detect")
    it = Interpreter(data)
    it.allocate_tensors()
    it.plan.check()
    assert it.head < 55_296 == it.arena_report()["lower_bound_bytes"]
    assert it.shared_groups  # the plan records who shares memory
    assert_same_as_tflm(data, seed=4, runs=2)


@pytest.mark.parametrize("off", ["alias", "inplace", "overlap"])
def test_each_kind_can_be_switched_off(off: str) -> None:
    data = model_bytes("person_detect")
    every = Interpreter(data)
    every.allocate_tensors()
    some = Interpreter(data, sharing=Sharing(**{off: False}))
    some.allocate_tensors()
    none = Interpreter(data, sharing=False)
    none.allocate_tensors()
    assert none.shared_groups == [] and none.head == 55_296
    assert every.head <= some.head <= none.head


def test_expanding_1x1_conv_gap_is_one_input_pixel_short_of_the_output() -> None:
    # P pixels, Cin -> Cout bytes per pixel: output starts (P - 1) * (Cout - Cin) bytes below the input
    p, cin, cout = 100, 8, 16
    assert stream_gap(np.arange(p) * cin, cout) == (p - 1) * (cout - cin)
    assert stream_gap(np.arange(p) * 4, 4) == 0  # same-size elementwise: exactly in place
    assert stream_gap(np.arange(p) * 16, 4) == 0  # shrinking: never runs ahead


def _conv_model(kind: str) -> bytes:
    rng = np.random.default_rng(0)
    if kind == "conv1x1":
        return op_model("CONV_2D", [T((1, 6, 7, 4), "int8", 0.05, 3), T((8, 1, 1, 4), "int8", 0.02, data=rng.integers(
            -127, 128, (8, 1, 1, 4))), T((8,), "int32", 0.001, data=rng.integers(-500, 500, 8))],
            [T((1, 6, 7, 8), "int8", 0.1, -2)], {"stride_w": 1, "stride_h": 1, "padding": Padding.VALID})
    if kind == "dw3x3":
        return op_model("DEPTHWISE_CONV_2D", [T((1, 7, 7, 6), "int8", 0.05, 0), T((1, 3, 3, 6), "int8", 0.02,
            data=rng.integers(-127, 128, (1, 3, 3, 6))), T((6,), "int32", 0.001, data=rng.integers(-99, 99, 6))],
            [T((1, 7, 7, 6), "int8", 0.1, 1)], {"stride_w": 1, "stride_h": 1, "depth_multiplier": 1,
                                                 "padding": Padding.SAME})
    return op_model("MAX_POOL_2D", [T((1, 8, 8, 5), "int8", 0.05, 0)], [T((1, 4, 4, 5), "int8", 0.05, 0)],
                    {"stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2, "padding": Padding.VALID})


@pytest.mark.parametrize("kind", ["conv1x1", "dw3x3", "maxpool"])
def test_streaming_in_raster_order_never_reads_overwritten_input(kind: str) -> None:
    """Replay the op as a device kernel would, pixel by pixel, in the planned arena: the gaps must hold."""
    data = _conv_model(kind)
    assert_same_as_tflm(data, runs=2)
    it = Interpreter(data)
    it.allocate_tensors()
    sg = it.subgraph
    op = sg.operators[0]
    x_t, y_t = op.inputs[0], op.outputs[0]
    assert any(x_t in g and y_t in g for g in it.shared_groups)
    x = random_inputs(data, 1)[0]
    it.set_input(x, 0)
    it.invoke()
    y = it.get_output(0).copy()
    offs = {b["tensor"]: b["offset"] for b in it.arena_report()["buffers"] if b["kind"] == "tensor"}
    arena = np.zeros(it.arena_size, np.uint8)
    xb, yb = x.view(np.uint8).reshape(-1), y.view(np.uint8).reshape(-1)
    arena[offs[x_t]:offs[x_t] + len(xb)] = xb
    low, out_unit = window_low_read(sg, op)
    pixels = len(low)
    in_pixel = x.shape[-1] * x.itemsize
    # the receptive field of pixel k spans at most from low[k] to the last input byte of its window
    _, h, w, _ = x.shape
    for k in range(pixels):
        lo = low[k]
        hi = min(len(xb), lo + (3 * w + 3) * in_pixel)  # a generous window end: up to 3 rows further
        if k + 1 < pixels:  # what this pixel reads must still be intact in the arena
            got = arena[offs[x_t] + lo:offs[x_t] + hi]
            assert np.array_equal(got, xb[lo:hi]) or k == pixels - 1, f"pixel {k} reads clobbered input"
        arena[offs[y_t] + k * out_unit:offs[y_t] + (k + 1) * out_unit] = yb[k * out_unit:(k + 1) * out_unit]
    assert np.array_equal(arena[offs[y_t]:offs[y_t] + len(yb)], yb)


def test_reshape_aliases_its_input() -> None:
    m = read(model_bytes("person_detect"))
    it = Interpreter(m)
    it.allocate_tensors()
    reshape = next(op for op in m.main.operators if op.op == "RESHAPE")
    x, y = reshape.inputs[0], reshape.outputs[0]
    if any(x in g and y in g for g in it.shared_groups):
        assert np.shares_memory(it.view(x), it.view(y))
    lone = Interpreter(m, sharing=Sharing(alias=True, inplace=False, overlap=False))
    lone.allocate_tensors()
    assert all(len(g) == 2 for g in lone.shared_groups)


def test_offline_plans_cannot_share() -> None:
    reqs = [planners.Request(32, 0, 1, tensor=0, offline=0), planners.Request(32, 1, 2, tensor=1)]
    sg = read(model_bytes("hello_world_int8")).main
    assert planners.share(sg, reqs, Sharing()) == (reqs, [])


def test_rom_keeps_per_channel_constants_out_of_the_arena() -> None:
    """Sharing(rom=True): per-channel multipliers and shifts live with the weights (flash), as the firmware export
    keeps them; the tail loses exactly those bytes, the head is unchanged, the bytes out are the wheel's, and the
    arrays cannot be written. Off by default (TFLM's tail holds them)."""
    data = model_bytes("person_detect")
    assert Sharing().rom is False
    base = Interpreter(data)
    base.allocate_tensors()
    rom = Interpreter(data, sharing=Sharing(rom=True))
    rom.allocate_tensors()
    assert rom.head == base.head and base.rom_bytes == 0
    assert rom.rom_bytes > 0 and rom.tail < base.tail and rom.tail + rom.rom_bytes <= base.tail
    assert rom.arena_size == rom.head + rom.tail and rom.arena_report()["rom_bytes"] == rom.rom_bytes
    kernel = next(k for k in rom._kernels if hasattr(k, "mults"))
    assert not kernel.mults.flags.writeable
    xs = random_inputs(data, 1)
    for i, x in enumerate(xs):
        rom.set_input(x, i)
    rom.invoke()
    want = run_tflm(data, xs)
    assert [rom.output(i).tobytes() for i in range(len(want))] == [o.tobytes() for o in want]


def _masked_spectrum() -> bytes:
    """x -> MUL -> slice [5:40] -> CONCATENATION(constant, slice, constant) -> ADD: audio_preprocessor's masking of
    the energy spectrum's ends, on int32 (the slot 20 bytes into the output: word-aligned only)."""
    from micronn.testing import Graph, Op, graph_model

    tensors = {
        "x": T((64,), "int32"), "two": T((), "int32", data=2), "t": T((64,), "int32"),
        "b": T((1,), "int32", data=[5]), "e": T((1,), "int32", data=[40]), "one": T((1,), "int32", data=[1]),
        "s": T((35,), "int32"), "head": T((5,), "int32", data=[7, -7, 70, -70, 0]),
        "tail": T((24,), "int32", data=np.arange(24) - 12), "y": T((64,), "int32"), "out": T((64,), "int32"),
    }
    ops = [Op("MUL", ["x", "two"], ["t"]), Op("STRIDED_SLICE", ["t", "b", "e", "one"], ["s"]),
           Op("CONCATENATION", ["head", "s", "tail"], ["y"], {"axis": 0}), Op("ADD", ["y", "two"], ["out"])]
    return graph_model(Graph(tensors, ops, ["x"], ["out"]))


def test_a_slice_into_a_concatenation_slot_copies_nothing() -> None:
    """A contiguous slice of a vector is a view of its bytes and the concatenation takes it in its slot (its constant
    parts copied as usual): no slice kernel, no copy of the slice, and the same bytes as TFLM and as without."""
    from micronn.export.native import NativeModel
    from micronn.micro import lower

    model = _masked_spectrum()
    sg = read(model).main
    t, s, y = sg.operators[1].inputs[0], sg.operators[1].outputs[0], sg.operators[2].outputs[0]
    xs = [np.random.default_rng(3).integers(-2**20, 2**20, (64,), dtype=np.int32)]
    want = run_tflm(model, xs)[0]
    joined = Interpreter(model, sharing=Sharing(ties=True, align=4))
    joined.allocate_tensors()
    assert any({t, s, y} <= set(g) for g in joined.shared_groups)
    assert np.shares_memory(joined.view(t), joined.view(s)) and np.shares_memory(joined.view(s), joined.view(y))
    assert "mn_strided_slice" not in [task.symbol for task in lower.lower_model(joined)]
    apart = Interpreter(model, sharing=Sharing(ties=True, slices=False))
    aligned = Interpreter(model, sharing=Sharing(ties=True))  # TFLM's 16-byte alignment: 20 bytes in is no view
    aligned.allocate_tensors()
    assert not any({t, s} <= set(g) for g in aligned.shared_groups)
    for it in (joined, apart):
        it.set_input(xs[0])
        it.invoke()
        assert it.get_output(0).tobytes() == want.tobytes()
    for host_ports in (True, False):
        native = NativeModel(model, host_ports=host_ports)  # (plans with Sharing(ties=True, align=4))
        assert "mn_strided_slice(" not in native.program.files["mn_native.c"]
        assert native.run(xs)[0].tobytes() == want.tobytes()


@pytest.mark.parametrize(("shape", "begin", "end", "offset"), [
    ((64,), [4], [40], 16), ((3, 8), [1, 0], [3, 8], 32), ((3, 8), [1, 2], [2, 6], 40), ((3, 8), [0, 2], [2, 6], None),
    ((2, 3, 4), [1, 1, 0], [2, 3, 4], 64), ((2, 3, 4), [0, 1, 0], [2, 2, 4], None), ((64,), [4], [99], 16),
])
def test_contiguous_slices_are_views(shape: tuple[int, ...], begin: list[int], end: list[int],
                                     offset: int | None) -> None:
    from micronn.planners.sharing import _slice_view
    from micronn.tflite import schema

    stop = np.minimum(end, shape)
    out = tuple(int(v) for v in stop - np.array(begin))
    n = len(shape)
    m = read(op_model("STRIDED_SLICE", [T(shape, "int32"), T((n,), "int32", data=begin), T((n,), "int32", data=end),
                                        T((n,), "int32", data=[1] * n)], [T(out, "int32")],
                      schema.options("STRIDED_SLICE")))
    assert _slice_view(m.main, m.main.operators[0]) == offset
