"""Several interpreters in one shared arena (multitenancy): tails stack, heads overlap, outputs stay right."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes

from micronn import ArenaTooSmallError, Interpreter, SharedArena
from micronn.testing import random_inputs, run_tflm


def test_two_models_alternate_in_one_arena() -> None:
    a_data, b_data = model_bytes("person_detect"), model_bytes("micro_speech_quantized")
    shared = SharedArena.sized_for(a_data, b_data)
    a = Interpreter(a_data, arena=shared)
    a.allocate_tensors()
    b = Interpreter(b_data, arena=shared)
    b.allocate_tensors()
    base = shared.arena.buf
    assert np.shares_memory(a.input(0), base) and np.shares_memory(b.input(0), base)
    for seed in range(3):
        for it, data in ((a, a_data), (b, b_data), (a, a_data)):
            x = random_inputs(data, seed)
            it.set_input(x[0], 0)
            it.invoke()
            assert it.get_output(0).tobytes() == run_tflm(data, x)[0].tobytes()
    rep = shared.report()
    assert rep["shared_bytes"] == max(a.head, b.head) + a.tail + b.tail <= shared.size
    assert rep["saved_bytes"] == min(a.head, b.head) > 0


def test_shared_arena_too_small() -> None:
    a_data = model_bytes("person_detect")
    shared = SharedArena(SharedArena.sized_for(a_data).size)
    Interpreter(a_data, arena=shared).allocate_tensors()
    # a small model fits in the head the first one leaves free between invokes...
    Interpreter(model_bytes("hello_world_int8"), arena=shared).allocate_tensors()
    # ...but a second tail as large as the first does not
    with pytest.raises(ArenaTooSmallError, match="bytes needed"):
        Interpreter(a_data, arena=shared).allocate_tensors()
