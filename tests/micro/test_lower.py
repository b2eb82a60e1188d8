"""Lowering operators to device tasks: packing, what each model lowers to, and what cannot be lowered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import micronn
from micronn.errors import UnsupportedError
from micronn.micro import lower
from micronn.micro.lower import ConstRef, LowerError, ScratchRef, Task, TensorRef
from micronn.testing import Graph, Op, T, graph_model, op_model

MODELS = Path(micronn.__file__).parent / "models"


def interp(name: str, **kw) -> micronn.Interpreter:
    it = micronn.Interpreter(MODELS / f"{name}.tflite", **kw)
    it.allocate_tensors()
    return it


def test_pack_words() -> None:
    refs = {TensorRef(0, 3): 0x2000_0010, ScratchRef(1, 0): 0x2000_0100}
    c = ConstRef(np.arange(3, dtype="<i4"))
    task = Task("mn_x", [TensorRef(0, 3), -1, np.int32(7), ScratchRef(1, 0), c, 0xFFFF_FFFF], 0)
    resolve = {**refs, c: 0x1000}.__getitem__
    assert lower.pack(task, resolve, 4) == b"".join(v.to_bytes(4, "little") for v in
                                                    (0x2000_0010, 0xFFFF_FFFF, 7, 0x2000_0100, 0x1000, 0xFFFF_FFFF))
    words = np.frombuffer(lower.pack(task, resolve, 8), "<u8")
    assert words.tolist() == [0x2000_0010, 2**64 - 1, 7, 0x2000_0100, 0x1000, 0xFFFF_FFFF]
    assert np.int32(words[1].astype(np.uint32).view(np.int32)) == -1  # a kernel reads int32 back: sign intact


@pytest.mark.parametrize("value", [2**32, -(2**31) - 1])
def test_pack_refuses_what_a_word_cannot_hold(value: int) -> None:
    with pytest.raises(LowerError, match="does not fit"):
        lower.pack(Task("mn_x", [value], 4), lambda r: 0, 4)


def test_sources_and_header() -> None:
    names = {p.name for p in lower.sources()}
    assert {"conv_2d.c", "depthwise_conv_2d.c", "softmax.c", "svdf.c", "transpose_conv.c"} <= names
    assert (lower.include_dir() / "mn_kernels.h").is_file()
    assert all(p.parent == lower.include_dir() for p in lower.sources())


@pytest.mark.parametrize("name", ["person_detect", "micro_speech_quantized", "keyword_scrambled", "tiny_unet"])
def test_every_operator_lowers(name: str) -> None:
    it = interp(name)
    tasks = lower.lower_model(it)
    assert [t.op for t in tasks] == list(range(len(it._nodes)))  # one task per operator, in order
    for t in tasks:
        assert t.symbol.startswith("mn_")
        assert all(isinstance(a, (int, TensorRef, ScratchRef, ConstRef)) for a in t.args)
        assert lower.lower(it, t.op)[0].symbol == t.symbol


def test_fully_connected_folds_the_input_zero_point_into_the_bias() -> None:
    it = interp("micro_speech_quantized")
    op = next(i for i, n in enumerate(it._nodes) if n.op.op == "FULLY_CONNECTED")
    (task,) = lower.lower(it, op)
    node, k = it._nodes[op], it._kernels[op]
    w = node.input(1).astype(np.int64).reshape(k.units, -1)
    want = node.input(2).astype(np.int64) - k.in_zp * w.sum(axis=1)
    assert task.args[3].data.tolist() == want.tolist()
    assert task.args[4].data.tolist() == [k.mult64[0]] * k.units  # per-tensor multiplier broadcast per unit


@pytest.mark.parametrize("planner,rows", [("optimal", 1), ("tflm", None)])
def test_transpose_conv_takes_the_band_the_kernel_asked_for(planner: str, rows: int | None) -> None:
    it = interp("tiny_unet", planner=planner)
    for i, n in enumerate(it._nodes):
        if n.op.op == "TRANSPOSE_CONV":
            (task,) = lower.lower(it, i)
            assert task.args[6] == ScratchRef(i, it._kernels[i].scratch_id)
            assert task.args[7] == (rows or n.outputs[0].shape[1])


def test_unsupported_types_are_reported_all_at_once() -> None:
    q = (0.1, 0)
    model = graph_model(Graph({"x": T((4,), "int8", *q), "a": T((4,), "int8", *q), "b": T((4,), "float32"),
                               "c": T((4,), "float32")},
                              [Op("ABS", ["x"], ["a"]), Op("DEQUANTIZE", ["a"], ["b"]), Op("SQRT", ["b"], ["c"])],
                              ["x"], ["c"]))
    it = micronn.Interpreter(model)
    it.allocate_tensors()
    with pytest.raises(UnsupportedError) as e:
        lower.lower_model(it)
    assert e.value.pairs == [("ABS", "int8"), ("DEQUANTIZE", "int8"), ("SQRT", "float32")]


@pytest.mark.parametrize("model,what", [
    (op_model("PAD", [T((4,), "float32"), T((1, 2), "int32", data=[[-1, 2]])], [T((5,), "float32")]),
     "negative paddings"),
    (op_model("QUANTIZE", [T((4,), "float32")], [T((4,), "int8", 0.1, 0)]), "float32 -> int8"),
    (op_model("SQRT", [T((1, 4), "float32")], [T((1, 4), "float32")]), "float32"),
    (op_model("TANH", [T((1, 4), "int16", 1 / 4096, 0)], [T((1, 4), "int16", 1 / 32768, 0)]), "int16"),
    (op_model("ABS", [T((4,), "int16", 0.1, 0)], [T((4,), "int16", 0.1, 0)]), "int16"),
    (op_model("TRANSPOSE", [T((2, 3, 2, 3, 2), "int8", 0.1, 0), T((5,), "int32", data=[4, 3, 2, 1, 0])],
              [T((2, 3, 2, 3, 2), "int8", 0.1, 0)]), "more than 4 runs"),
])
def test_unsupported_ops(model: bytes, what: str) -> None:
    with pytest.raises(UnsupportedError, match=what):
        lower.lower(micronn.Interpreter(model), 0)


def test_overlap_only_where_the_kernel_streams() -> None:
    """A kernel that does not stream refuses an output placed over its input; a convolution stages instead."""
    it = interp("micro_speech_quantized")
    names = [n.op.op for n in it._nodes]
    fc, dw = names.index("FULLY_CONNECTED"), names.index("DEPTHWISE_CONV_2D")
    same = {t: (0, 64) for t in range(len(it.subgraph.tensors))}  # every tensor on the same bytes
    with pytest.raises(LowerError, match="overlaps an input"):
        lower._lower(it, fc, same)
    assert lower._lower(it, dw, same)[0].args[-1] == 1
    assert lower._lower(it, dw, {})[0].args[-1] == 0
    with pytest.raises(LowerError, match="out of range"):
        lower.lower(it, len(names))


@pytest.mark.parametrize("case, paths", [
    ("conv", {"MN_CONV_CUT", "MN_CONV_ONE"}), ("conv_1x1", {"MN_CONV_ONE"}), ("conv_valid", set()),
    ("conv_dilation", {"MN_DILATION", "MN_CONV_CUT", "MN_CONV_ONE"}),
    ("conv_grouped", {"MN_CONV_GROUPS", "MN_CONV_CUT", "MN_CONV_ONE"}),
    ("dw", {"MN_DW_TAIL"}), ("dw_mult", {"MN_DW_TAIL"}), ("dw_stride_dil", {"MN_DILATION", "MN_DW_TAIL"}),
])
def test_kernel_config_keeps_the_paths_the_calls_take(case: str, paths: set[str], tmp_path: Path) -> None:
    """An exported program compiles out the generic kernels' paths no call takes (mn_config.h), and still gives
    the interpreter's bytes; the depthwise kernel's plain bias word is written as 0 (it derives that bias)."""
    from test_kernels import CASES

    from micronn import export

    it = micronn.Interpreter(CASES[case])
    it.allocate_tensors()
    tasks = lower.lower_model(it)
    config = lower.kernel_config(tasks)
    paths |= {"MN_STAGE"} if any(t.args[-1] for t in tasks) else set()  # the STAGE word: as the plan placed the output
    assert set(config) == {"MN_STAGE", "MN_DILATION", "MN_CONV_GROUPS", "MN_CONV_CUT", "MN_CONV_ONE",
                           "MN_DW_TAIL"} - paths and set(config.values()) <= {0}
    for t in tasks:
        assert lower.read_args(t)[3] == (0 if t.symbol == "mn_depthwise_conv_2d_s8" else t.args[3])
    proj = export.export(CASES[case], tmp_path / "fw")
    assert all(f"#define {k} 0" in (proj.path / "mn_config.h").read_text() for k in config)
    for seed in (0, 3):
        assert export.run(proj, device="host", seed=seed).identical
