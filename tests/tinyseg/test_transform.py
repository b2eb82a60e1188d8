"""Every TinySeg transformation returns a valid model (validate, write, read) whose outputs equal the original's
byte for byte, with the operators the paper describes."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.ir import random_inputs
from micronn.models import bundled_model
from micronn.storage import MemoryStorage
from micronn.testing import Graph, Op, T, graph_ir
from micronn.tflite.reader import read
from micronn.tflite.writer import write
from micronn.tinyseg import cold_ranges, transform

Q = dict(scale=0.05, zero_point=-3)


def small_unet(h: int = 12, w: int = 10, seed: int = 0) -> Graph:
    """conv -> skip (4 ch) -> pool -> conv -> upsample -> concat(skip, up) -> conv: one long skip connection."""
    rng = np.random.default_rng(seed)

    def conv(cin: int, cout: int) -> dict:
        return dict(w=T((cout, 3, 3, cin), "int8", list(rng.uniform(0.01, 0.03, cout)), 0,
                        data=rng.integers(-127, 128, (cout, 3, 3, cin))),
                    b=T((cout,), "int32", data=rng.integers(-500, 500, cout)))

    c1, c2, c3 = conv(3, 4), conv(4, 8), conv(12, 4)
    t = {"x": T((1, h, w, 3), "int8", **Q), "w1": c1["w"], "b1": c1["b"], "skip": T((1, h, w, 4), "int8", **Q),
         "p": T((1, h // 2, w // 2, 4), "int8", **Q), "w2": c2["w"], "b2": c2["b"],
         "d": T((1, h // 2, w // 2, 8), "int8", **Q), "size": T((2,), "int32", data=[h, w]),
         "up": T((1, h, w, 8), "int8", **Q), "cat": T((1, h, w, 12), "int8", **Q), "w3": c3["w"], "b3": c3["b"],
         "y": T((1, h, w, 4), "int8", 0.2, 5)}
    one = {"stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}
    ops = [Op("CONV_2D", ["x", "w1", "b1"], ["skip"], {**one, "fused_activation_function": 1}),
           Op("MAX_POOL_2D", ["skip"], ["p"], {"filter_height": 2, "filter_width": 2, "stride_h": 2, "stride_w": 2}),
           Op("CONV_2D", ["p", "w2", "b2"], ["d"], one),
           Op("RESIZE_NEAREST_NEIGHBOR", ["d", "size"], ["up"]),
           Op("CONCATENATION", ["skip", "up"], ["cat"], {"axis": 3}),
           Op("CONV_2D", ["cat", "w3", "b3"], ["y"], one)]
    return Graph(t, ops, ["x"], ["y"])


def outputs(model, inputs, storage=None) -> list[bytes]:
    it = Interpreter(read(write(model)), storage=storage or MemoryStorage())  # through the file, as shipped
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i).tobytes() for i in range(len(model.main.outputs))]


def same(a, b) -> None:
    b.validate()
    xs = random_inputs(a, 1)
    assert outputs(a, xs) == outputs(b, xs)


def skip_range(m):
    return next(c for c in cold_ranges(m) if m.main.tensors[c.tensor].name == "skip")


def test_spill_inserts_spill_and_fetch_at_the_ends_of_the_cold_range():
    m = graph_ir(small_unet())
    c = skip_range(m)
    assert (c.start, c.end) == (1, 4)
    s = transform.spill(m, c.tensor, c.start, c.end)
    assert [op.op for op in s.main.operators] == ["CONV_2D", "MAX_POOL_2D", "Spill", "CONV_2D",
                                                  "RESIZE_NEAREST_NEIGHBOR", "Fetch", "CONCATENATION", "CONV_2D"]
    same(m, s)
    early = transform.spill(m, c.tensor, c.start, c.end, early=True)
    assert [op.op for op in early.main.operators][:3] == ["CONV_2D", "Spill", "MAX_POOL_2D"]
    same(m, early)


def test_fused_fetching_removes_the_concatenation_then_the_convolution_input():
    m = graph_ir(small_unet())
    c = skip_range(m)
    s = transform.spill(m, c.tensor, c.start, c.end)
    fetch = [op.op for op in s.main.operators].index("Fetch")
    f1 = transform.fuse(s, fetch)
    assert "CONCATENATION" not in [op.op for op in f1.main.operators]
    same(m, f1)
    f2 = transform.fuse(f1, fetch)
    assert [op.op for op in f2.main.operators][-1] == "FetchConv2D"
    assert all(t.name != "cat" for t in f2.main.tensors)  # the concatenation never exists
    same(m, f2)
    with pytest.raises(transform.TransformError):
        transform.fuse(f2, fetch)
    streamed = transform.stream_input(f2, fetch, f2.main.operators[fetch].inputs[0])
    assert [op.op for op in streamed.main.operators].count("Spill") == 2
    same(m, streamed)


def test_partial_spilling_splits_whole_channels_sized_to_the_need():
    m = graph_ir(small_unet())
    c = skip_range(m)
    s = transform.spill(m, c.tensor, c.start, c.end, nbytes=150)  # 120 B per channel: 2 channels go
    ops = [op.op for op in s.main.operators]
    assert ops.count("SPLIT_V") == 1 and ops.count("CONCATENATION") == 2
    spilled = s.main.tensors[s.main.operators[ops.index("Spill")].inputs[0]]
    assert spilled.shape == (1, 12, 10, 2) and spilled.quant == m.main.tensors[c.tensor].quant
    same(m, s)
    fetch = ops.index("Fetch")
    f = transform.fuse(transform.fuse(transform.fuse(s, fetch), fetch), fetch)  # restore, concat, conv
    assert [op.op for op in f.main.operators][-1] == "FetchConv2D" and "CONCATENATION" not in \
        [op.op for op in f.main.operators]
    same(m, f)


def test_ranges_that_are_not_cold_are_refused():
    m = graph_ir(small_unet())
    c = skip_range(m)
    with pytest.raises(transform.TransformError):
        transform.spill(m, c.tensor, 0, 4)  # op 1 reads it in between
    with pytest.raises(transform.TransformError):
        transform.spill(m, m.main.outputs[0], 4, 5)
    with pytest.raises(transform.TransformError):
        transform.fuse(m, 0)


def test_folding_and_identity_pads_on_tiny_unet_keep_the_bytes():
    m = read(bundled_model("tiny_unet"))
    f = transform.drop_identities(transform.fold_constants(m))
    names = [op.op for op in f.main.operators]
    assert "SHAPE" not in names and "STRIDED_SLICE" not in names and "PAD" not in names
    assert len(f.main.tensors) < len(m.main.tensors)
    same(m, f)
