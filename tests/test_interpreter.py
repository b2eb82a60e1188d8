"""The interpreter's phases, arena, state and the two APIs it speaks (tflite_micro runtime and LiteRT)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import model_bytes, model_path

import micronn
from micronn import ArenaTooSmallError, Interpreter, InvokeError, OpResolver, UnsupportedError
from micronn.testing import T, op_model, random_inputs, run_tflm


def test_arena_too_small_states_needs() -> None:
    it = Interpreter(model_bytes("person_detect"))
    it.allocate_tensors()
    need = it.head + it.tail
    with pytest.raises(ArenaTooSmallError) as e:
        Interpreter.from_file(str(model_path("person_detect")), arena_size=need - 1)
    assert (e.value.needed, e.value.head, e.value.tail) == (need, it.head, it.tail)
    assert f"{need} bytes needed" in str(e.value) and f"head {it.head}" in str(e.value)
    Interpreter.from_file(str(model_path("person_detect")), arena_size=need).invoke()  # exactly enough is enough


def test_tensors_live_in_the_users_arena() -> None:
    arena = bytearray(100_000)
    it = Interpreter(model_bytes("person_detect"), arena=arena)
    it.allocate_tensors()
    base = np.frombuffer(arena, np.uint8)
    assert np.shares_memory(it.input(0), base) and np.shares_memory(it.output(0), base)
    x = random_inputs(model_bytes("person_detect"), 0)[0]
    it.set_input(x, 0)
    views = list(it._views)
    it.invoke()
    assert all(a is b for a, b in zip(views, it._views))  # invoke made no new tensors


def test_auto_sized_arena_is_exactly_what_is_needed() -> None:
    it = Interpreter(model_bytes("micro_speech_quantized"))
    it.allocate_tensors()
    assert it.arena_size == it.head + it.tail


def test_reset_restores_variable_state() -> None:
    data = model_bytes("keyword_scrambled")
    xs = random_inputs(data, 3)
    it = Interpreter.from_bytes(data)
    it.set_input(xs[0], 0)
    it.invoke()
    first = it.get_output(0)
    it.invoke()  # state carried over
    it.reset()
    it.invoke()
    assert np.array_equal(it.get_output(0), first)


def test_wrong_input_is_a_clear_error() -> None:
    it = Interpreter.from_bytes(model_bytes("person_detect"))
    with pytest.raises(InvokeError, match=r"expects int8\[1, 96, 96, 1\], got float32\[1, 96, 96, 1\]"):
        it.set_input(np.zeros((1, 96, 96, 1), np.float32), 0)
    with pytest.raises(InvokeError, match="expects int8"):
        it.set_input(np.zeros((96, 96), np.int8), 0)
    with pytest.raises(micronn.MicronnError, match="input index 3 out of range"):
        it.set_input(np.zeros((1, 96, 96, 1), np.int8), 3)


def test_details_match_the_tflm_wheel() -> None:
    from tflite_micro.python.tflite_micro import runtime

    data = model_bytes("person_detect")
    theirs = runtime.Interpreter.from_bytes(data, arena_size=200_000)
    ours = Interpreter.from_bytes(data)
    for mine, ref in ((ours.get_input_details(0), theirs.get_input_details(0)),
                      (ours.get_output_details(0), theirs.get_output_details(0))):
        assert mine["dtype"] == ref["dtype"]
        assert np.array_equal(mine["shape"], ref["shape"])
        for k in ("scales", "zero_points"):
            assert np.array_equal(mine["quantization_parameters"][k], ref["quantization_parameters"][k])


def test_litert_style_api() -> None:
    it = Interpreter(model_bytes("hello_world_float"))
    it.allocate_tensors()
    (inp,), (out,) = it.get_input_details(), it.get_output_details()
    it.set_tensor(inp["index"], np.full(inp["shape"], 0.5, inp["dtype"]))
    it.invoke()
    assert it.get_tensor(out["index"]).shape == tuple(out["shape"])
    assert np.array_equal(it.tensor(out["index"])(), it.get_tensor(out["name"]))


def test_interpreters_are_independent_across_threads() -> None:
    data = model_bytes("micro_speech_quantized")
    xs = [random_inputs(data, s) for s in range(4)]
    expected = [run_tflm(data, x) for x in xs]
    results: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        it = Interpreter.from_bytes(data)
        for _ in range(3):
            it.set_input(xs[i][0], 0)
            it.invoke()
        results[i] = [it.get_output(0)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert results[i][0].tobytes() == expected[i][0].tobytes()


def test_resolver_subset_and_custom_op() -> None:
    model = op_model("TIMES_TWO", [T((1, 4), "float32")], [T((1, 4), "float32")])
    with pytest.raises(UnsupportedError, match=r"TIMES_TWO \(float32\)"):
        Interpreter(model)

    class TimesTwo(micronn.Kernel):
        op, dtypes = "TIMES_TWO", frozenset({"float32"})

        def invoke(self, node: micronn.Node) -> None:
            node.output(0)[...] = node.input(0) * 2

    it = Interpreter(model, resolver=OpResolver.all().add(TimesTwo))
    it.set_input(np.arange(4, dtype=np.float32).reshape(1, 4), 0)
    it.invoke()
    assert it.get_output(0).tolist() == [[0, 2, 4, 6]]
    with pytest.raises(UnsupportedError, match="SOFTMAX"):
        Interpreter(model_bytes("person_detect"), resolver=OpResolver(["CONV_2D", "DEPTHWISE_CONV_2D"]))


def test_reprs_say_what_it_is() -> None:
    it = Interpreter(model_bytes("hello_world_int8"))
    assert repr(it) == ("<micronn.Interpreter: 3 ops, inputs int8[1, 1], outputs int8[1, 1]; optimal planner, "
                        "not allocated>")
    it.allocate_tensors()
    assert repr(it).endswith(f"head {it.head} B + tail {it.tail} B>")
    assert it._repr_html_().count("<tr>") == 4 and "FULLY_CONNECTED" in it._repr_html_()
    assert repr(it.plan) == f"Plan('optimal': {len(it.plan.requests)} buffers, head {it.head} B)"
    assert it.plan._repr_html_().count("<tr>") == len(it.plan.requests) + 1
