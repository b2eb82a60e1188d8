"""The writer: read(write(m)) == m on every real model, and TFLM runs the rewritten files identically."""

from __future__ import annotations

import importlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import ALL_MODELS, model_bytes, model_path

from micronn import ir
from micronn.testing import T, _Tflm, assert_identical, op_model, random_inputs, run_tflm
from micronn.tflite import schema
from micronn.tflite.reader import read
from micronn.tflite.writer import DATA_ALIGNMENT, save, write

_FbModel = importlib.import_module("tflite.Model").Model

@pytest.fixture(params=ALL_MODELS)
def original(request: pytest.FixtureRequest) -> bytes:
    return model_bytes(request.param)


def test_round_trip_preserves_the_ir(original: bytes) -> None:
    model = read(original)
    written = write(model)
    assert written[4:8] == b"TFL3"
    again = read(written)
    assert again == model
    assert write(again) == written  # deterministic: a second pass writes the same bytes


def test_rewritten_model_runs_identically_on_tflm(original: bytes) -> None:
    written = write(read(original))
    a, b = _Tflm(original), _Tflm(written)
    for seed in range(2):  # two invokes on the same interpreters also compare the state of stateful models
        xs = random_inputs(original, seed)
        for i, (x, y) in enumerate(zip(a.run(xs), b.run(xs), strict=True)):
            assert_identical(y, x, f"seed {seed}, output {i}")


def test_constant_data_is_aligned_and_shared_like_the_source(original: bytes) -> None:
    source = read(original)
    written = write(source)
    model = read(written)
    base = np.frombuffer(written, np.uint8).ctypes.data
    for sg_src, sg in zip(source.subgraphs, model.subgraphs, strict=True):
        groups: dict[int, set[int]] = defaultdict(set)
        for t_src, t in zip(sg_src.tensors, sg.tensors, strict=True):
            if t.data is None:
                assert t.buffer == 0
                continue
            assert (t.data.ctypes.data - base) % DATA_ALIGNMENT == 0, t.name
            groups[t_src.buffer].add(t.buffer)
        # a source buffer maps to one written buffer (they all hold identical bytes in these models) ...
        assert all(len(g) == 1 for g in groups.values())
        # ... and distinct source buffers stay distinct
        assert len({b for g in groups.values() for b in g}) == len(groups)


def test_operator_codes_are_deduplicated() -> None:
    original = model_bytes("keyword_scrambled")
    assert _FbModel.GetRootAs(original, 0).OperatorCodesLength() == 15  # the source repeats codes
    model = read(original)
    fb = _FbModel.GetRootAs(write(model), 0)
    codes = [fb.OperatorCodes(i) for i in range(fb.OperatorCodesLength())]
    written = [(schema.BUILTIN_NAMES[c.BuiltinCode()], c.Version()) for c in codes]
    assert sorted(written) == sorted({(op.op, op.version) for op in model.main.operators})
    assert len(written) == 4  # QUANTIZE, SVDF, FULLY_CONNECTED, SOFTMAX (an unused code is dropped)


def test_identical_vectors_are_written_once() -> None:
    """person_detect repeats an all-zero int64 zero-point vector per channel of every weight and bias (44 KB):
    the writer points every equal vector at one copy, which TFLM reads like any other (see the runs above)."""
    original = model_bytes("person_detect")
    written = write(read(original))
    fb = _FbModel.GetRootAs(written, 0).Subgraphs(0)
    starts: dict[bytes, set[int]] = defaultdict(set)
    for i in range(fb.TensorsLength()):
        q = fb.Tensors(i).Quantization()
        if q is not None and q.ZeroPointLength():
            zp = q.ZeroPointAsNumpy()
            starts[zp.tobytes()].add(zp.ctypes.data)
    assert starts and all(len(s) == 1 for s in starts.values())
    assert len(original) - len(written) > 40_000


def test_op_codes_above_127_use_the_placeholder_and_run_on_tflm() -> None:
    model = op_model("BROADCAST_TO", [T((1, 3), "float32"), T((2,), "int32", data=[2, 3])], [T((2, 3), "float32")])
    code = _FbModel.GetRootAs(model, 0).OperatorCodes(0)
    assert (code.BuiltinCode(), code.DeprecatedBuiltinCode()) == (schema.BUILTIN_CODES["BROADCAST_TO"], 127)
    assert read(model).main.operators[0].op == "BROADCAST_TO"
    x = np.array([[1.0, -2.0, 3.5]], np.float32)
    assert_identical(run_tflm(model, [x])[0], np.broadcast_to(x, (2, 3)))


def _features_model() -> ir.Model:
    """A model using what the real models do not: custom ops, min/max, variables with data, several subgraphs."""
    main = ir.Subgraph(
        tensors=[
            ir.Tensor("x", (1, 4), np.dtype(np.int8), ir.Quantization(np.array([0.5], np.float32),
                                                                     np.array([-3], np.int64), 0,
                                                                     np.array([-1.5], np.float32),
                                                                     np.array([2.5], np.float32)),
                      shape_signature=(-1, 4), index=0),
            ir.Tensor("w", (3, 4), np.dtype(np.int8),
                      ir.Quantization(np.array([0.1, 0.2, 0.3], np.float32), np.zeros(3, np.int64), 0),
                      data=np.arange(12, dtype=np.int8).reshape(3, 4), buffer=5, index=1),
            ir.Tensor("w_again", (3, 4), np.dtype(np.int8), data=np.arange(12, dtype=np.int8).reshape(3, 4),
                      buffer=5, index=2),
            ir.Tensor("state", (1, 3), np.dtype(np.int16), data=np.array([[1, 2, 3]], np.int16), is_variable=True,
                      index=3),
            ir.Tensor("y", (1, 3), np.dtype(np.float32), index=4),
            ir.Tensor("scratch", (2,), np.dtype(np.float32), index=5),
        ],
        operators=[
            ir.Operator("FULLY_CONNECTED", [0, 1, -1], [4], schema.options("FULLY_CONNECTED", keep_num_dims=True),
                        version=4, intermediates=[5], index=0),
            ir.Operator("MyCustomOp", [4, 2, 3], [], None, b"\x01\x02\x03", custom=True, version=2, index=1),
        ],
        inputs=[0], outputs=[4], name="main",
    )
    other = ir.Subgraph([ir.Tensor("a", (), np.dtype(np.bool_), index=0)], [], [0], [0], "cond", 1)
    return ir.Model(
        [main, other], description="features", metadata={"min_runtime_version": b"1.5.0\0", "empty": b""},
        signature_defs=[ir.SignatureDef("serving_default", 0, {"in": 0}, {"out": 4})],
    )


def test_round_trip_of_every_field() -> None:
    model = _features_model()
    written = write(model)
    again = read(written, validate=False)
    assert again == model
    main = again.main
    assert main.tensors[1].buffer == main.tensors[2].buffer != 0  # same source buffer and bytes: shared
    assert main.tensors[3].buffer not in (0, main.tensors[1].buffer)  # the variable keeps its initial data
    assert_identical(main.tensors[3].data, np.array([[1, 2, 3]], np.int16))
    fb = _FbModel.GetRootAs(written, 0)
    custom = fb.OperatorCodes(1)  # FULLY_CONNECTED came first
    assert (custom.BuiltinCode(), custom.CustomCode(), custom.Version()) == (32, b"MyCustomOp", 2)


def test_same_source_buffer_with_different_data_is_not_shared() -> None:
    model = _features_model()
    model.main.tensors[2].data = np.ones((3, 4), np.int8)
    again = read(write(model), validate=False)
    assert again.main.tensors[1].buffer != again.main.tensors[2].buffer
    assert_identical(again.main.tensors[2].data, np.ones((3, 4), np.int8))


def test_save(tmp_path: Path) -> None:
    model = read(model_path("hello_world_int8"))
    save(model, tmp_path / "m.tflite")
    assert read(tmp_path / "m.tflite") == model


def test_bad_models_are_refused() -> None:
    model = _features_model()
    model.main.tensors[1].data = np.zeros(5, np.int8)
    with pytest.raises(ValueError, match="'w'.*5 elements"):
        write(model)
    model = _features_model()
    model.main.operators[0].op = "NOT_AN_OP"
    with pytest.raises(ValueError, match="unknown builtin op 'NOT_AN_OP'"):
        write(model)
