"""VAR_HANDLE, READ_VARIABLE and ASSIGN_VARIABLE (with CALL_ONCE initializing them) against the TFLM wheel:
state kept across invokes, what a reset does, ids passed into subgraphs, and the planned head."""

from __future__ import annotations

import numpy as np
import pytest
from _subgraph_util import Q8, Sub, act, check

from micronn import Interpreter, ir
from micronn.errors import InvokeError, PrepareError
from micronn.testing import Op, T, TflmError, assert_identical, graph_model, random_inputs, run_tflm
from micronn.tflite.reader import read
from micronn.tflite.writer import write

R = ir.RESOURCE


def history_model(dtype: str, init: bool = True, width: int = 8) -> bytes:
    """A running window: state = state[1:] + [x] kept in a resource variable, which CALL_ONCE fills first."""
    main = Sub()
    main.t("x", act(dtype, (1, 1)))
    main.t("h", T((), R))
    main.t("old", act(dtype, (1, width)))
    main.t("tail", act(dtype, (1, width - 1)))
    main.t("new", act(dtype, (1, width)))
    if init:
        main.op("CALL_ONCE", [], [], init_subgraph_index=1)
    main.op("VAR_HANDLE", [], ["h"], shared_name="window")
    main.op("READ_VARIABLE", ["h"], ["old"])
    main.slice("old", "tail", [0, 1], [1, width])
    main.op("CONCATENATION", ["tail", "x"], ["new"], axis=1)
    main.op("ASSIGN_VARIABLE", ["h", "new"], [])
    graphs = [main.graph(["x"], ["new"])]
    if init:
        start = Sub()
        start.t("h", T((), R))
        values = np.arange(1, width + 1).reshape(1, width)
        start.const(values.astype(dtype) if dtype == "float32" else values * 3, dtype,
                    **({"scale": Q8[0], "zero_point": Q8[1]} if dtype == "int8" else {}))
        start.op("VAR_HANDLE", [], ["h"], shared_name="window")
        start.op("ASSIGN_VARIABLE", ["h", next(n for n in start.tensors if n.startswith("const"))], [])
        graphs.append(start.graph([], []))
    return graph_model(*graphs)


@pytest.mark.parametrize("init", [True, False], ids=["call_once", "default"])
@pytest.mark.parametrize("dtype", ["int8", "float32", "int16"])
def test_state_persists_across_invokes(dtype: str, init: bool) -> None:
    """The window shifts by one every invoke; without CALL_ONCE it starts at the default (int8: zero point)."""
    check(history_model(dtype, init), runs=5)


def run_both(model: bytes, steps: list[str | np.ndarray]) -> None:
    """Run the same steps (an input array to invoke on, or "reset") on TFLM and micronn; compare every output."""
    from tflite_micro.python.tflite_micro import runtime

    tflm = runtime.Interpreter.from_bytes(model, arena_size=1 << 16)
    mine = Interpreter.from_bytes(model)
    for i, step in enumerate(steps):
        if isinstance(step, str):
            tflm.reset()
            mine.reset()
            continue
        tflm.set_input(step, 0)
        mine.set_input(step, 0)
        tflm.invoke()
        mine.invoke()
        assert_identical(mine.get_output(0), tflm.get_output(0), f"step {i}")


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_reset_restores_defaults_and_call_once_stays_done(dtype: str) -> None:
    """TFLM's reset puts every resource variable back to its default bytes (the int8 zero point, else 0)
    and does not run CALL_ONCE's init subgraph again."""
    model = history_model(dtype)
    xs = random_inputs(model, 1)[0], random_inputs(model, 2)[0]
    run_both(model, [xs[0], xs[1], "reset", xs[0], xs[1], "reset", "reset", xs[1]])
    it = Interpreter.from_bytes(model)
    it.set_input(xs[0], 0)
    it.invoke()
    it.reset()
    it.set_input(xs[1], 0)
    it.invoke()
    default = Q8[1] if dtype == "int8" else 0
    assert (it.get_output(0)[0, :-1] == default).all()  # the test can fail: the init values are nonzero


def loop_model(iterations: int = 6) -> bytes:
    """A WHILE whose state carries the variable's id (a RESOURCE tensor): the body reads the variable, rotates it
    and assigns it back, with an id known only at invoke; main assigned (and so allocated) it before the loop."""
    n = iterations + 1
    main = Sub()
    main.t("flags", T((n,), "bool"))
    main.t("x", act("float32"))
    main.t("h", T((), R))
    main.t("f_out", T((n,), "bool"))
    main.t("h_out", T((), R))
    main.t("y", act("float32"))
    main.op("VAR_HANDLE", [], ["h"], shared_name="state")
    main.op("ASSIGN_VARIABLE", ["h", "x"], [])
    main.op("WHILE", ["flags", "h"], ["f_out", "h_out"], cond_subgraph_index=1, body_subgraph_index=2)
    main.op("READ_VARIABLE", ["h_out"], ["y"])
    cond = Sub()
    cond.t("f", T((n,), "bool"))
    cond.t("h", T((), R))
    cond.t("go", T((1,), "bool"))
    cond.slice("f", "go", [0], [1])
    body = Sub()
    body.t("f", T((n,), "bool"))
    body.t("h", T((), R))
    body.t("rest", T((n - 1,), "bool"))
    body.t("f2", T((n,), "bool"))
    body.slice("f", "rest", [1], [n])
    body.op("CONCATENATION", ["rest", body.const([False], "bool")], ["f2"], axis=0)
    body.t("v", act("float32"))
    body.t("v2", act("float32"))
    body.op("READ_VARIABLE", ["h"], ["v"])
    body.rotate("v", "v2", act("float32"), k=3)
    body.op("ASSIGN_VARIABLE", ["h", "v2"], [])
    return graph_model(main.graph(["flags", "x"], ["y"]), cond.graph(["f", "h"], ["go"]),
                       body.graph(["f", "h"], ["f2", "h"]))


def test_variable_id_passed_through_a_loop() -> None:
    model = loop_model()
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    for k in (0, 1, 4):
        (out,) = run_tflm(model, [np.arange(7) < k, x])
        assert_identical(out, np.roll(x, -3 * k, axis=1))  # the test can fail
    check(model, runs=4)


def test_same_name_shares_one_variable_across_subgraphs() -> None:
    """VAR_HANDLEs with one shared_name (here in main and in an IF branch) give the same id."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32"))
    main.t("h", T((), R))
    main.t("y", act("float32"))
    main.t("z", act("float32"))
    main.op("VAR_HANDLE", [], ["h"], shared_name="v")
    main.op("ASSIGN_VARIABLE", ["h", "x"], [])
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=1)
    main.op("READ_VARIABLE", ["h"], ["z"])
    branch = Sub()
    branch.t("a", act("float32"))
    branch.t("h", T((), R))
    branch.t("old", act("float32"))
    branch.t("b", act("float32"))
    branch.op("VAR_HANDLE", [], ["h"], shared_name="v")
    branch.op("READ_VARIABLE", ["h"], ["old"])
    branch.rotate("old", "b", act("float32"), k=2)
    branch.op("ASSIGN_VARIABLE", ["h", "b"], [])
    model = graph_model(main.graph(["c", "x"], ["z", "y"]), branch.graph(["a"], ["b"]))
    check(model, runs=4)
    # a container after a VAR_HANDLE without one: TFLM compares the string with a null pointer (segfault)
    branch.ops[0] = Op("VAR_HANDLE", [], ["h"], {"shared_name": "v", "container": "c"})
    with pytest.raises(PrepareError, match="container"):
        Interpreter.from_bytes(graph_model(main.graph(["c", "x"], ["z", "y"]), branch.graph(["a"], ["b"])))


def test_assign_without_allocation_fails_the_invoke_like_tflm() -> None:
    """An id known only at invoke allocates nothing in prepare: assigning it fails the invoke in both."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32"))
    main.t("h", T((), R))
    main.op("VAR_HANDLE", [], ["h"], shared_name="v")
    main.op("IF", ["c", "h", "x"], [], then_subgraph_index=1, else_subgraph_index=1)
    branch = Sub()
    branch.t("h", T((), R))
    branch.t("a", act("float32"))
    branch.op("ASSIGN_VARIABLE", ["h", "a"], [])
    model = graph_model(main.graph(["c", "x"], ["x"]), branch.graph(["h", "a"], []))
    inputs = [np.array([True]), np.zeros((1, 8), np.float32)]
    with pytest.raises(TflmError, match="invoking"):
        run_tflm(model, inputs)
    it = Interpreter.from_bytes(model)
    it.set_input(inputs[0], 0)
    it.set_input(inputs[1], 1)
    with pytest.raises(InvokeError, match="never allocated"):
        it.invoke()


def test_read_before_any_assignment_is_refused() -> None:
    """TFLM copies nothing into the output (it keeps whatever the arena held); micronn refuses instead."""
    main = Sub()
    main.t("h", T((), R))
    main.t("x", act("float32"))
    main.t("y", act("float32"))
    main.op("VAR_HANDLE", [], ["h"], shared_name="v")
    main.op("READ_VARIABLE", ["h"], ["y"])
    model = graph_model(main.graph(["x"], ["y"]))
    run_tflm(model, [np.zeros((1, 8), np.float32)])  # runs, output undefined
    with pytest.raises(InvokeError, match="before any ASSIGN_VARIABLE"):
        Interpreter.from_bytes(model).invoke()


def test_size_mismatch_is_refused() -> None:
    """Reading into (or assigning from) a tensor of another size than the variable: TFLM overruns or leaves
    bytes unwritten, micronn refuses at invoke."""
    main = Sub()
    main.t("h", T((), R))
    main.t("x", act("float32"))
    main.t("y", act("float32", (1, 4)))
    main.op("VAR_HANDLE", [], ["h"], shared_name="v")
    main.op("ASSIGN_VARIABLE", ["h", "x"], [])
    main.op("READ_VARIABLE", ["h"], ["y"])
    with pytest.raises(InvokeError, match="holds 32 bytes"):
        Interpreter.from_bytes(graph_model(main.graph(["x"], ["y"]))).invoke()


def test_prepare_errors() -> None:
    """Wrong operand counts or id types fail TFLM's prepare and micronn's; a VAR_HANDLE without a
    shared_name (TFLM crashes comparing it) only micronn's."""
    def model(assign_inputs: list[str], id_shape: tuple[int, ...] = ()) -> bytes:
        main = Sub()
        main.t("h", T(id_shape, R))
        main.t("x", act("float32"))
        main.op("VAR_HANDLE", [], ["h"], shared_name="v")
        main.op("ASSIGN_VARIABLE", assign_inputs, [])
        return graph_model(main.graph(["x"], ["x"]))

    for bad in (model(["h", "x", "x"]), model(["h", "x"], (2,))):
        with pytest.raises(TflmError):
            run_tflm(bad, [np.zeros((1, 8), np.float32)])
        with pytest.raises(PrepareError):
            Interpreter.from_bytes(bad)
    main = Sub()
    main.t("h", T((), R))
    main.t("x", act("float32"))
    main.op("VAR_HANDLE", [], ["h"])
    main.op("ASSIGN_VARIABLE", ["h", "x"], [])
    with pytest.raises(PrepareError, match="shared_name"):
        Interpreter.from_bytes(graph_model(main.graph(["x"], ["x"])))


def test_resource_tensors_and_var_handle_options_round_trip() -> None:
    """RESOURCE tensors (type 13) and VarHandleOptions' strings survive read(write(...))."""
    model = read(history_model("float32"))
    again = read(write(model))
    assert again == model
    assert again.main.tensors[1].dtype == R and again.main.tensors[1].nbytes == 4
    handle = next(op for op in again.main.operators if op.op == "VAR_HANDLE")
    assert handle.options.shared_name == "window" and handle.options.container is None
