"""Hostile and malformed models end in a clear micronn error naming the culprit, never a crash or a hang."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from conftest import model_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from micronn import Interpreter, MicronnError, ModelError, OpResolver, UnsupportedError, read
from micronn.tflite.writer import write


def _mutated(name: str, change) -> bytes:
    m = read(model_bytes(name))
    change(m)
    return write(m)


def test_input_index_out_of_range_names_the_operator() -> None:
    data = _mutated("hello_world_int8", lambda m: m.main.operators[1].inputs.__setitem__(0, 999))
    with pytest.raises(ModelError, match=r"operator 1 \(FULLY_CONNECTED\): input tensor index 999 out of range"):
        read(data)


def test_unsorted_operators_are_refused() -> None:
    def swap(m):
        ops = m.main.operators
        ops[0], ops[1] = ops[1], ops[0]
    with pytest.raises(ModelError, match="unsorted or cyclic"):
        read(_mutated("hello_world_int8", swap))


def test_cycle_is_refused() -> None:
    def cycle(m):  # operator 0 reads what operator 2 writes
        m.main.operators[0].inputs[0] = m.main.operators[2].outputs[0]
    with pytest.raises(ModelError, match="unsorted or cyclic"):
        read(_mutated("hello_world_int8", cycle))


def test_buffer_smaller_than_shape_names_tensor_and_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    from micronn.tflite import writer  # the writer refuses such IR; write the raw bytes to forge the file

    monkeypatch.setattr(writer, "_tensor_bytes", lambda t: np.asarray(t.data).tobytes())

    def shrink(m):
        t = next(t for t in m.main.tensors if t.is_constant and t.data.size > 4)
        t.shape = (t.shape[0] * 2,) + tuple(t.shape[1:])
    data = _mutated("hello_world_int8", shrink)
    with pytest.raises(ModelError, match=r"tensor \d+ .* buffer \d+ holds \d+ bytes but shape"):
        read(data)


def test_absurd_shape_is_refused_before_allocating() -> None:
    def huge(m):
        t = m.main.tensors[m.main.operators[0].outputs[0]]
        t.shape = (1 << 20, 1 << 20)
    with pytest.raises(ModelError, match="beyond any microcontroller"):
        read(_mutated("hello_world_int8", huge))


def test_negative_dimension_is_refused() -> None:
    data = _mutated("hello_world_int8", lambda m: setattr(m.main.tensors[m.main.inputs[0]], "shape", (1, -5)))
    with pytest.raises(ModelError, match="invalid shape"):
        read(data)


def test_huge_vector_length_does_not_hang() -> None:
    data = bytearray(model_bytes("hello_world_int8"))
    # Find the subgraph's operator vector length field by patching every uint32 that equals the op count (3)
    # in turn; at least one corrupts a vector length to 2**31 and must be refused quickly.
    hits = 0
    for off in range(8, len(data) - 4, 4):
        if struct.unpack_from("<I", data, off)[0] == 3:
            bad = bytearray(data)
            struct.pack_into("<I", bad, off, 0x7FFFFFF0)
            try:
                read(bytes(bad))
            except MicronnError:
                hits += 1
    assert hits > 0


def test_unsupported_lists_every_pair() -> None:
    def exotic(m):
        m.main.operators[0].op = "HARD_SWISH_X"
        m.main.operators[0].custom = True
        m.main.operators[2].op = "ROUND_X"
        m.main.operators[2].custom = True
    with pytest.raises(UnsupportedError) as e:
        Interpreter(_mutated("hello_world_int8", exotic), resolver=OpResolver())
    assert e.value.pairs == [("FULLY_CONNECTED", "int8"), ("HARD_SWISH_X", "int8"), ("ROUND_X", "int8")]
    assert "HARD_SWISH_X (int8)" in str(e.value)


# -- bounded fuzzing: random corruption of real models must end in MicronnError or run cleanly --------------

SMALL = ["hello_world_int8", "hello_world_float", "micro_speech_quantized", "keyword_scrambled"]


def _exercise(data: bytes) -> None:
    try:
        it = Interpreter(data)
        it.allocate_tensors()
        it.invoke()
    except MicronnError:
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(SMALL), flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
                                                     min_size=1, max_size=8))
def test_fuzz_bit_flips(name: str, flips: list[tuple[float, int]]) -> None:
    data = bytearray(model_bytes(name))
    for pos, bit in flips:
        data[int(pos * len(data))] ^= 1 << bit
    _exercise(bytes(data))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SMALL), frac=st.floats(0, 1, exclude_max=True))
def test_fuzz_truncation(name: str, frac: float) -> None:
    data = model_bytes(name)
    _exercise(data[: int(frac * len(data))])


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(SMALL), pos=st.floats(0, 1, exclude_max=True),
       value=st.sampled_from([0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE]))
def test_fuzz_index_corruption(name: str, pos: float, value: int) -> None:
    data = bytearray(model_bytes(name))
    off = int(pos * (len(data) - 4)) & ~3
    struct.pack_into("<I", data, off, value)
    _exercise(bytes(data))
