"""The Python API under misuse: every wrong call raises a MicronnError saying what was expected, never a numpy or
Python error, and the calls LiteRT and the tflite_micro runtime accept keep working (any memory layout, numpy
integer indices, calls before allocate_tensors, allocating twice)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import model_bytes

from micronn import Interpreter, InvokeError, MicronnError, ModelError
from micronn.ir import random_inputs
from micronn.tflite.reader import read

PERSON = model_bytes("person_detect")  # one int8[1, 96, 96, 1] input, one int8[1, 2] output
X = random_inputs(read(PERSON), 0)[0]


@pytest.fixture(scope="module")
def it() -> Interpreter:
    i = Interpreter(PERSON)
    i.allocate_tensors()
    return i


def _activation(it: Interpreter) -> int:
    return it.get_input_details(0)["index"]


BAD_DATA = {
    "float into int8": X.astype(np.float32),
    "int16": X.astype(np.int16),
    "wrong shape": X.reshape(96, 96),
    "one batch too many": np.concatenate([X, X]),
    "scalar": np.int8(3),
    "python int": 3,
    "none": None,
    "string": "pixels",
    "object array": np.array([None] * 4, object),
    "ragged list": [[1, 2], [3]],
    "list of ints (int64)": X.tolist(),
}


@pytest.mark.parametrize("data", BAD_DATA.values(), ids=BAD_DATA.keys())
def test_wrong_data_is_an_invoke_error(it: Interpreter, data: Any) -> None:
    with pytest.raises(InvokeError, match=r"input 0 \('input'\) expects int8\[1, 96, 96, 1\], got"):
        it.set_input(data, 0)
    with pytest.raises(InvokeError, match=r"expects int8\[1, 96, 96, 1\], got"):
        it.set_tensor(_activation(it), data)


BAD_INDICES = {"negative": -1, "past the end": 1, "huge": 2**70, "float": 0.0, "string": "0", "none": None,
               "bool": True, "list": [0]}


@pytest.mark.parametrize("index", BAD_INDICES.values(), ids=BAD_INDICES.keys())
def test_bad_io_indices(it: Interpreter, index: Any) -> None:
    calls = [lambda: it.set_input(X, index), lambda: it.get_output(index)]
    if index is not None:  # get_input_details() / (None) is LiteRT's: every input's details
        calls += [lambda: it.get_input_details(index), lambda: it.get_output_details(index)]
    for call in calls:
        with pytest.raises(MicronnError, match=r"(input|output) index (must be an integer|.* out of range)"):
            call()


@pytest.mark.parametrize("key", [-1, 10_000, 1.0, None, [0], b"input", "no such tensor"])
def test_bad_tensor_keys(it: Interpreter, key: Any) -> None:
    for call in (lambda: it.get_tensor(key), lambda: it.set_tensor(key, X), lambda: it.tensor(key),
                 lambda: it.view(key)):
        with pytest.raises(MicronnError, match="tensor index|no tensor named"):
            call()


def test_constants_cannot_be_set(it: Interpreter) -> None:
    const = next(t.index for t in it.subgraph.tensors if t.is_constant)
    before = it.get_tensor(const)
    with pytest.raises(InvokeError, match="is a constant of the model"):
        it.set_tensor(const, before)
    with pytest.raises(InvokeError, match="is a constant of the model"):
        it.set_tensor(const, "anything")
    assert np.array_equal(it.get_tensor(const), before)


def _output(it: Interpreter, x: Any) -> bytes:
    it.set_input(x, np.int64(0))  # numpy integers are indices too
    it.invoke()
    return it.get_output(np.uint8(0)).tobytes()


def test_any_memory_layout_is_accepted(it: Interpreter) -> None:
    """Values count, not layout: strided, Fortran-ordered, read-only or byte-swapped arrays give the same output."""
    want = _output(it, X)
    wide = np.zeros((1, 96, 192, 1), np.int8)
    wide[:, :, ::2] = X
    ro = np.frombuffer(X.tobytes(), np.int8).reshape(X.shape)
    for x in (wide[:, :, ::2], np.asfortranarray(X), ro, X.astype(X.dtype.newbyteorder(">"))):
        assert _output(it, x) == want
    f = Interpreter(model_bytes("hello_world_float"))
    x = np.array([[0.5]], np.float32)
    f.set_tensor(f.get_input_details()[0]["index"], x.astype(">f4"))
    f.invoke()
    y = f.get_output(0)
    f.set_input(x)
    f.invoke()
    assert f.get_output(0).tobytes() == y.tobytes()


def test_call_order() -> None:
    """No call needs allocate_tensors() first (the first that needs the arena allocates it, asking for the plan's
    figures too); reset before it does nothing; allocating twice prepares into a fresh arena, same outputs."""
    want = _output(Interpreter.from_bytes(PERSON), X)
    lazy = Interpreter(PERSON)
    lazy.reset()  # nothing to reset yet, and it does not allocate
    assert "not allocated" in repr(lazy)
    assert lazy.get_output(0).shape == (1, 2) and "head" in repr(lazy)
    asked = Interpreter(PERSON)
    assert asked.head == lazy.head and asked.arena_size == lazy.arena_size  # asking plans it
    with pytest.raises(AttributeError):
        getattr(asked, "no_such_figure")  # noqa: B009 - a name that is not the plan's is still an error
    assert _output(lazy, X) == want
    invoke_first = Interpreter(PERSON)
    invoke_first.invoke()  # on zeros
    assert _output(invoke_first, X) == want
    twice = Interpreter(PERSON)
    twice.allocate_tensors()
    twice.allocate_tensors()
    assert _output(twice, X) == want
    twice.reset()
    assert _output(twice, X) == want
    details = Interpreter(PERSON).get_input_details(0)  # model facts need no arena
    assert details["dtype"] is np.int8 and details["shape"].tolist() == [1, 96, 96, 1]
    fn = Interpreter(PERSON).tensor("input")  # checked now, read later
    assert fn().shape == (1, 96, 96, 1)


@pytest.mark.parametrize("make, error, match", [
    (lambda: Interpreter(None), ModelError, "a model is a path"),
    (lambda: Interpreter(123), ModelError, "not int"),
    (lambda: Interpreter(np.frombuffer(PERSON, np.uint8)), ModelError, "memoryview"),
    (lambda: Interpreter("/no/such/model.tflite"), ModelError, "cannot read model file"),
    (lambda: Interpreter(PERSON, 1.5), MicronnError, "arena_size must be a non-negative number"),
    (lambda: Interpreter(PERSON, "100"), MicronnError, "arena_size must be a non-negative number"),
    (lambda: Interpreter(PERSON, -1), MicronnError, "arena_size must be a non-negative number"),
    (lambda: Interpreter(PERSON, 2**62).allocate_tensors(), MicronnError, "cannot allocate an arena"),
    (lambda: Interpreter(PERSON, 10**30).allocate_tensors(), MicronnError, "cannot allocate an arena"),
    (lambda: Interpreter(PERSON, 100).allocate_tensors(), MicronnError, "arena too small"),
    (lambda: Interpreter(PERSON, 100, arena=bytearray(100)), MicronnError, "not both"),
    (lambda: Interpreter(PERSON, arena=bytes(200_000)).allocate_tensors(), MicronnError, "must be writable"),
    (lambda: Interpreter(PERSON, arena="arena").allocate_tensors(), MicronnError, "writable, contiguous buffer"),
    (lambda: Interpreter(PERSON, arena=np.zeros((2, 200_000), np.uint8)[:, ::2]).allocate_tensors(), MicronnError,
     "contiguous"),
    (lambda: Interpreter(PERSON, planner="nope"), MicronnError, "unknown planner"),
    (lambda: Interpreter(PERSON, sharing="yes"), MicronnError, "sharing must be"),
])
def test_bad_construction(make, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        make()
