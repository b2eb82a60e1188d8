"""NativeModel: the exported C run natively on the host gives the interpreter's (and the wheel's) bytes."""

from __future__ import annotations

import numpy as np
import pytest
from test_export import FIRMWARE, path_of

from micronn import Interpreter
from micronn.errors import MicronnError, UnsupportedError
from micronn.export import NativeModel
from micronn.ir import random_inputs
from micronn.testing import T, _Tflm, op_model


@pytest.mark.parametrize("name", FIRMWARE)
def test_same_bytes_as_the_interpreter_and_the_wheel(name: str) -> None:
    data = path_of(name).read_bytes()
    native, it = NativeModel(data), Interpreter(data)
    wheel = _Tflm(data)
    for seed in range(2):  # twice: recurrent state (keyword_scrambled's SVDF) carries over in all three
        xs = random_inputs(it.model, seed)
        for i, x in enumerate(xs):
            it.set_input(x, i)
        it.invoke()
        want = [it.get_output(i) for i in range(len(it.subgraph.outputs))]
        got = native.run(xs)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want], (name, seed)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in wheel.run(xs)], (name, seed)


def test_instances_keep_their_own_state_and_reset() -> None:
    data = path_of("keyword_scrambled").read_bytes()
    a, b = NativeModel(data), NativeModel(data)
    xs = random_inputs(Interpreter(data).model, 5)
    first = a.run(xs)[0]
    a.run(xs)
    assert b.run(xs)[0].tobytes() == first.tobytes()  # b's state is untouched by a's invokes
    a.reset()
    assert a.run(xs)[0].tobytes() == first.tobytes()


def test_set_input_invoke_get_output_and_errors() -> None:
    native = NativeModel(path_of("hello_world_int8").read_bytes())
    native.set_input(np.array([[7]], np.int8))
    native.invoke()
    y = native.get_output(0)
    assert y.shape == (1, 1) and y.dtype == np.int8
    with pytest.raises(MicronnError, match=r"expects int8\[1, 1\]"):
        native.set_input(np.zeros((1, 2), np.int8))
    with pytest.raises(MicronnError, match="out of range"):
        native.get_output(3)
    with pytest.raises(MicronnError, match="1 inputs, 2 given"):
        native.run([y, y])
    with pytest.raises(UnsupportedError):
        NativeModel(op_model("SQRT", [T((4,), "float32")], [T((4,), "float32")]))  # SQRT has no C kernel
