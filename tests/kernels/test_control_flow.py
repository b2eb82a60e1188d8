"""IF, WHILE and CALL_ONCE against the TFLM wheel: outputs byte for byte and the planned head of the one
timeline TFLM lays all subgraphs on, plus the models TFLM refuses or crashes on."""

from __future__ import annotations

import numpy as np
import pytest
from _subgraph_util import Q8, Sub, act, check

from micronn import Interpreter
from micronn.errors import InvokeError, ModelError, PrepareError
from micronn.planners import tensor_requests
from micronn.testing import Graph, Op, T, TflmError, assert_same_as_tflm, graph_ir, graph_model, run_tflm, tflm_arena
from micronn.tflite.reader import read
from micronn.tflite.writer import write

# ---- IF -------------------------------------------------------------------------------------------------------


def if_model(dtype: str, n: int = 8) -> bytes:
    """out = then(x) if c else else(x): a fully connected layer, or a rotation followed by another one."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act(dtype, (1, n)))
    main.t("y", act(dtype, (1, n)))
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=2)
    then = Sub()
    then.t("a", act(dtype, (1, n)))
    then.t("b", act(dtype, (1, n)))
    then.fc("a", "b", n, dtype, seed=1)
    other = Sub()
    other.t("a", act(dtype, (1, n)))
    other.t("r", act(dtype, (1, n)))
    other.t("b", act(dtype, (1, n)))
    other.rotate("a", "r", act(dtype, (1, n)), k=3)
    other.fc("r", "b", n, dtype, seed=2)
    return graph_model(main.graph(["c", "x"], ["y"]), then.graph(["a"], ["b"]), other.graph(["a"], ["b"]))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_if_takes_each_branch(dtype: str) -> None:
    model = if_model(dtype)
    for c in (True, False):
        x = np.arange(8, dtype=dtype).reshape(1, 8)
        out = assert_same_as_tflm(model, inputs=[np.array([c]), x])
        assert out  # ran
    check(model, runs=4)  # random conditions, one interpreter


def test_if_branches_differ() -> None:
    """The two branches really compute different things (the test can fail)."""
    model = if_model("float32")
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    a = run_tflm(model, [np.array([True]), x])[0]
    b = run_tflm(model, [np.array([False]), x])[0]
    assert a.tobytes() != b.tobytes()


def test_if_between_other_ops_and_with_constant_inputs() -> None:
    """Tensors of the main subgraph live across the branch: the plan must keep them apart from it."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("int8", (1, 16)))
    main.t("h", act("int8", (1, 16)))
    main.t("y", act("int8", (1, 16)))
    main.t("z", act("int8", (1, 32)))
    k = main.const(np.arange(16, dtype=np.int8).reshape(1, 16), "int8", scale=Q8[0], zero_point=Q8[1])
    main.fc("x", "h", 16, "int8", seed=3)
    main.op("IF", ["c", "h", k], ["y"], then_subgraph_index=1, else_subgraph_index=2)
    main.op("CONCATENATION", ["y", "x"], ["z"], axis=1)
    branches = []
    for s in (1, 2):
        b = Sub()
        b.t("a", act("int8", (1, 16)))
        b.t("k", act("int8", (1, 16)))
        b.t("s", act("int8", (1, 32)))
        b.t("o", act("int8", (1, 16)))
        b.op("CONCATENATION", ["a", "k"] if s == 1 else ["k", "a"], ["s"], axis=1)
        b.slice("s", "o", [0, 8], [1, 24])
        branches.append(b.graph(["a", "k"], ["o"]))
    check(graph_model(main.graph(["c", "x"], ["z"]), *branches), runs=4)


def test_if_branch_output_is_its_input() -> None:
    """A branch may hand an input straight back as its output (no operator at all in the else branch)."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32"))
    main.t("y", act("float32"))
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=2)
    then = Sub()
    then.t("a", act("float32"))
    then.t("b", act("float32"))
    then.fc("a", "b", 8, "float32", seed=4)
    empty = Sub()
    empty.t("a", act("float32"))
    check(graph_model(main.graph(["c", "x"], ["y"]), then.graph(["a"], ["b"]), empty.graph(["a"], ["a"])), runs=4)


def test_nested_if() -> None:
    """An IF inside a branch of an IF: TFLM plans the inner branches inside the outer one's scope."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("d", T((1,), "bool"))
    main.t("x", act("int8"))
    main.t("y", act("int8"))
    main.op("IF", ["c", "d", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=2)
    outer_then = Sub()
    outer_then.t("d", T((1,), "bool"))
    outer_then.t("a", act("int8"))
    outer_then.t("b", act("int8"))
    outer_then.op("IF", ["d", "a"], ["b"], then_subgraph_index=3, else_subgraph_index=4)
    outer_else = Sub()
    outer_else.t("d", T((1,), "bool"))
    outer_else.t("a", act("int8"))
    outer_else.t("b", act("int8"))
    outer_else.rotate("a", "b", act("int8"), k=1)
    leaves = []
    for seed in (5, 6):
        leaf = Sub()
        leaf.t("a", act("int8"))
        leaf.t("b", act("int8"))
        leaf.fc("a", "b", 8, "int8", seed=seed)
        leaves.append(leaf.graph(["a"], ["b"]))
    model = graph_model(main.graph(["c", "d", "x"], ["y"]), outer_then.graph(["d", "a"], ["b"]),
                        outer_else.graph(["d", "a"], ["b"]), *leaves)
    check(model, runs=6)


def test_subgraph_called_twice_keeps_its_last_lifetimes() -> None:
    """Two IFs share their branches; TFLM re-marks a subgraph's tensors at every call, keeping the last."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32", (1, 32)))
    main.t("y", act("float32", (1, 32)))
    main.t("z", act("float32", (1, 32)))
    main.t("w", act("float32", (1, 64)))
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=2)
    main.op("IF", ["c", "y"], ["z"], then_subgraph_index=2, else_subgraph_index=1)
    main.op("CONCATENATION", ["z", "x"], ["w"], axis=1)
    subs = []
    for seed in (7, 8):
        b = Sub()
        b.t("a", act("float32", (1, 32)))
        b.t("h", act("float32", (1, 32)))
        b.t("b", act("float32", (1, 32)))
        b.fc("a", "h", 32, "float32", seed=seed)
        b.rotate("h", "b", act("float32", (1, 32)), k=5)
        subs.append(b.graph(["a"], ["b"]))
    check(graph_model(main.graph(["c", "x"], ["w"]), *subs), runs=4)


def test_unreached_subgraph_is_planned_at_time_minus_one() -> None:
    """TFLM prepares and plans every subgraph; tensors nothing reaches overlap only each other."""
    main = Sub()
    main.t("x", act("float32", (1, 4)))
    main.t("y", act("float32", (1, 4)))
    main.fc("x", "y", 4, "float32", seed=9)
    spare = Sub()
    spare.t("a", act("float32", (1, 64)))
    spare.t("b", act("float32", (1, 64)))
    spare.fc("a", "b", 64, "float32", seed=10)
    model = graph_model(main.graph(["x"], ["y"]), spare.graph(["a"], ["b"]))
    check(model)
    assert tflm_arena(model)["head"] == 2 * 64 * 4


def test_if_prepare_errors_match_tflm() -> None:
    def model(cond: T, then_inputs: int = 1) -> bytes:
        main = Sub()
        main.t("c", cond)
        main.t("x", act("float32"))
        main.t("y", act("float32"))
        main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=1)
        b = Sub()
        names = [b.t(f"a{i}", act("float32")) for i in range(then_inputs)]
        return graph_model(main.graph(["c", "x"], ["y"]), b.graph(names, [names[0]]))

    for bad in (model(T((1,), "int32")), model(T((2,), "bool")), model(T((1,), "bool"), then_inputs=2)):
        with pytest.raises(TflmError):
            run_tflm(bad, [np.zeros(read(bad).main.tensors[0].shape, read(bad).main.tensors[0].dtype),
                           np.zeros((1, 8), np.float32)])
        with pytest.raises(PrepareError):
            Interpreter.from_bytes(bad)


def if_with_else(branch: Graph) -> bytes:
    """c ? x reinterpreted as int32 and reshaped : ``branch``(x), over a float [1, 8] x."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32"))
    main.t("y", act("float32"))
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=2)
    bits = Sub()
    bits.t("a", T((2, 4), "int32"))
    bits.t("b", T((1, 8), "int32"))
    bits.op("RESHAPE", ["a"], ["b"])
    return graph_model(main.graph(["c", "x"], ["y"]), bits.graph(["a"], ["b"]), branch)


def test_if_copies_raw_bytes_between_types() -> None:
    """TFLM checks byte counts, not types: an int32 branch sees the float bits."""
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    empty = Sub()
    empty.t("a", act("float32"))
    (out,) = assert_same_as_tflm(if_with_else(empty.graph(["a"], ["a"])), inputs=[np.array([True]), x])
    assert out[0].tobytes() == x.tobytes()


def test_if_without_branch_outputs_leaves_its_outputs() -> None:
    """A branch without outputs copies nothing back: the IF's output keeps its bytes (in TFLM whatever its
    arena held, so only that it runs is compared)."""
    silent = Sub()
    silent.t("a", act("float32"))
    model = if_with_else(silent.graph(["a"], []))
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    run_tflm(model, [np.array([False]), x])
    it = Interpreter.from_bytes(model)
    for c in (True, False):
        it.set_input(np.array([c]), 0)
        it.set_input(x, 1)
        it.invoke()
        assert it.get_output(0).tobytes() == x.tobytes()  # still the then branch's result


@pytest.mark.parametrize("case", ["fewer bytes", "two inputs", "two outputs"])
def test_if_checks_counts_and_bytes_only_in_the_branch_taken(case: str) -> None:
    """A bad else branch fails the invoke that takes it (in TFLM too), not the model."""
    wrong = Sub()
    if case == "fewer bytes":
        wrong.t("a", T((1, 4), "float32"))
        branch = wrong.graph(["a"], ["a"])
    else:
        wrong.t("a", act("float32"))
        wrong.t("a2", act("float32"))
        branch = wrong.graph(["a", "a2"], ["a"]) if case == "two inputs" else wrong.graph(["a"], ["a", "a"])
    model = if_with_else(branch)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    assert_same_as_tflm(model, inputs=[np.array([True]), x])
    with pytest.raises(TflmError, match="invoking"):
        run_tflm(model, [np.array([False]), x])
    it = Interpreter.from_bytes(model)
    it.set_input(np.array([False]), 0)
    it.set_input(x, 1)
    with pytest.raises(InvokeError, match="subgraph 2"):
        it.invoke()


def test_branch_index_out_of_range_and_recursion_are_refused() -> None:
    """TFLM refuses an index past the last subgraph; it recurses forever on a subgraph calling itself."""
    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32"))
    main.t("y", act("float32"))
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=5)
    leaf = Sub()
    leaf.t("a", act("float32"))
    model = graph_model(main.graph(["c", "x"], ["y"]), leaf.graph(["a"], ["a"]))
    with pytest.raises(TflmError):
        run_tflm(model, [np.array([True]), np.ones((1, 8), np.float32)])
    with pytest.raises(PrepareError, match="else_subgraph_index is 5"):
        Interpreter.from_bytes(model)
    selfish = Sub()
    selfish.t("x", act("float32"))
    selfish.op("CALL_ONCE", [], [], init_subgraph_index=1)
    loop = graph_ir(selfish.graph(["x"], ["x"]), selfish.graph(["x"], ["x"]))  # subgraph 1 calls itself
    with pytest.raises(ModelError, match="calls itself"):
        tensor_requests(loop)
    with pytest.raises(ModelError, match="calls itself"):
        Interpreter(loop).allocate_tensors()


# ---- WHILE ----------------------------------------------------------------------------------------------------


def while_model(dtype: str, n: int = 24, width: int = 8, fc: bool = True) -> bytes:
    """Loop while flags[0]: the body shifts the bool flags left (a False comes in) and transforms the state.

    The iteration count is the number of leading True flags; a float counter counts the iterations.
    """
    main = Sub()
    main.t("flags", T((n,), "bool"))
    main.t("x", act(dtype, (1, width)))
    zero = main.const([0.0], "float32")
    for name, spec in (("flags_out", T((n,), "bool")), ("x_out", act(dtype, (1, width))),
                       ("count", T((1,), "float32"))):
        main.t(name, spec)
    main.op("WHILE", ["flags", "x", zero], ["flags_out", "x_out", "count"], cond_subgraph_index=1,
            body_subgraph_index=2)
    cond = Sub()
    cond.t("f", T((n,), "bool"))
    cond.t("s", act(dtype, (1, width)))
    cond.t("k", T((1,), "float32"))
    cond.t("go", T((1,), "bool"))
    cond.slice("f", "go", [0], [1])
    body = Sub()
    body.t("f", T((n,), "bool"))
    body.t("s", act(dtype, (1, width)))
    body.t("k", T((1,), "float32"))
    body.t("rest", T((n - 1,), "bool"))
    body.t("f2", T((n,), "bool"))
    body.slice("f", "rest", [1], [n])
    body.op("CONCATENATION", ["rest", body.const([False], "bool")], ["f2"], axis=0)
    body.t("r", act(dtype, (1, width)))
    body.t("s2", act(dtype, (1, width)))
    body.rotate("s", "r", act(dtype, (1, width)), k=1)
    if fc:
        body.fc("r", "s2", width, dtype, seed=11)
    else:
        body.slice("r", "s2", [0, 0], [1, width])
    body.t("pair", T((2,), "float32"))
    body.t("k2", T((1,), "float32"))
    body.op("CONCATENATION", ["k", body.const([1.0], "float32")], ["pair"], axis=0)
    body.op("SUM", ["pair", body.const([0], "int32")], ["k2"], keep_dims=True)
    return graph_model(main.graph(["flags", "x"], ["x_out", "count", "flags_out"]),
                       cond.graph(["f", "s", "k"], ["go"]), body.graph(["f", "s", "k"], ["f2", "s2", "k2"]))


@pytest.mark.parametrize("iterations", [0, 1, 5, 24])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_while_counts_iterations(dtype: str, iterations: int) -> None:
    model = while_model(dtype)
    flags = np.arange(24) < iterations
    x = np.linspace(-2, 2, 8).astype(dtype).reshape(1, 8)
    (out,) = assert_same_as_tflm(model, inputs=[flags, x])
    assert out[1][0] == iterations


def test_while_with_random_iteration_counts() -> None:
    """Random leading runs of True (about one per run) over one interpreter, and TFLM's head."""
    check(while_model("int8", fc=False), runs=5, seed=3)


def test_while_in_a_while_body_with_an_if() -> None:
    """Nested control flow: an outer WHILE whose body runs an inner WHILE and an IF."""
    n = 6
    main = Sub()
    main.t("flags", T((n,), "bool"))
    main.t("inner", T((n,), "bool"))
    main.t("x", act("float32"))
    for name, spec in (("f_out", T((n,), "bool")), ("i_out", T((n,), "bool")), ("x_out", act("float32"))):
        main.t(name, spec)
    main.op("WHILE", ["flags", "inner", "x"], ["f_out", "i_out", "x_out"], cond_subgraph_index=1,
            body_subgraph_index=2)

    def cond_graph(state: list[tuple[str, T]]) -> Graph:
        c = Sub()
        for name, spec in state:
            c.t(name, spec)
        c.t("go", T((1,), "bool"))
        c.slice(state[0][0], "go", [0], [1])
        return c.graph([name for name, _ in state], ["go"])

    def shift(b: Sub, src: str, dst: str) -> None:
        b.t(f"{dst}_rest", T((n - 1,), "bool"))
        b.t(dst, T((n,), "bool"))
        b.slice(src, f"{dst}_rest", [1], [n])
        b.op("CONCATENATION", [f"{dst}_rest", b.const([False], "bool")], [dst], axis=0)

    outer = [("f", T((n,), "bool")), ("i", T((n,), "bool")), ("s", act("float32"))]
    body = Sub()
    for name, spec in outer:
        body.t(name, spec)
    shift(body, "f", "f2")
    body.t("i_done", T((n,), "bool"))
    body.t("s_inner", act("float32"))
    body.op("WHILE", ["i", "s"], ["i_done", "s_inner"], cond_subgraph_index=3, body_subgraph_index=4)
    body.t("odd", T((1,), "bool"))
    body.slice("f", "odd", [1], [2])
    body.t("s2", act("float32"))
    body.op("IF", ["odd", "s_inner"], ["s2"], then_subgraph_index=5, else_subgraph_index=6)
    inner = [("i", T((n,), "bool")), ("s", act("float32"))]
    inner_body = Sub()
    for name, spec in inner:
        inner_body.t(name, spec)
    shift(inner_body, "i", "i2")
    inner_body.t("s2", act("float32"))
    inner_body.rotate("s", "s2", act("float32"), k=1)
    branches = []
    for seed in (12, 13):
        b = Sub()
        b.t("a", act("float32"))
        b.t("o", act("float32"))
        b.fc("a", "o", 8, "float32", seed=seed)
        branches.append(b.graph(["a"], ["o"]))
    model = graph_model(main.graph(["flags", "inner", "x"], ["x_out"]), cond_graph(outer),
                        body.graph(["f", "i", "s"], ["f2", "i", "s2"]), cond_graph(inner),
                        inner_body.graph(["i", "s"], ["i2", "s2"]), *branches)
    check(model, runs=4, seed=5)


def test_while_prepare_errors_match_tflm() -> None:
    """Input, output and subgraph counts must agree; TFLM refuses the model in prepare."""
    main = Sub()
    main.t("flags", T((4,), "bool"))
    main.t("a", T((4,), "bool"))
    main.t("b", T((4,), "bool"))
    main.op("WHILE", ["flags"], ["a", "b"], cond_subgraph_index=1, body_subgraph_index=1)
    leaf = Sub()
    leaf.t("f", T((4,), "bool"))
    leaf.t("go", T((1,), "bool"))
    leaf.slice("f", "go", [0], [1])
    model = graph_model(main.graph(["flags"], ["a", "b"]), leaf.graph(["f"], ["go"]))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(4, bool)])
    with pytest.raises(PrepareError, match="1 inputs but 2 outputs"):
        Interpreter.from_bytes(model)


def test_while_byte_count_mismatch_fails_the_invoke_like_tflm() -> None:
    """Copies between the loop and its subgraphs need equal byte counts (TFLM checks them at invoke)."""
    main = Sub()
    main.t("flags", T((4,), "bool"))
    main.t("out", T((4,), "bool"))
    main.op("WHILE", ["flags"], ["out"], cond_subgraph_index=1, body_subgraph_index=1)
    cond = Sub()
    cond.t("f", T((5,), "bool"))
    cond.t("go", T((1,), "bool"))
    cond.slice("f", "go", [0], [1])
    model = graph_model(main.graph(["flags"], ["out"]), cond.graph(["f"], ["go"]))
    with pytest.raises(TflmError, match="invoking"):
        run_tflm(model, [np.zeros(4, bool)])
    it = Interpreter.from_bytes(model)
    with pytest.raises(InvokeError, match="5 bytes"):
        it.invoke()


# ---- CALL_ONCE ------------------------------------------------------------------------------------------------


def test_call_once_prepare_errors() -> None:
    main = Sub()
    main.t("x", act("float32"))
    main.op("CALL_ONCE", [], [], init_subgraph_index=3)
    model = graph_model(main.graph(["x"], ["x"]))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((1, 8), np.float32)])
    with pytest.raises(PrepareError, match="init_subgraph_index is 3"):
        Interpreter.from_bytes(model)
    main.ops[0] = Op("CALL_ONCE", ["x"], [], {"init_subgraph_index": 0})
    model = graph_model(main.graph(["x"], ["x"]))
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros((1, 8), np.float32)])
    with pytest.raises(PrepareError, match="no inputs or outputs"):
        Interpreter.from_bytes(model)


# ---- the core: planning and interpreter state ------------------------------------------------------------------


def test_single_subgraph_requests_unchanged_by_model_walk() -> None:
    """Walking a one-subgraph model gives the same requests as the subgraph alone."""
    m = read(if_model("float32"))
    one = graph_ir(Graph({"x": act("float32"), "y": act("float32"), "w": T((8, 8), "float32", data=0.5)},
                         [Op("FULLY_CONNECTED", ["x", "w", None], ["y"])], ["x"], ["y"]))
    key = [(r.size, r.first, r.last, r.tensor, r.scratch) for r in tensor_requests(one.main, {0: [40]})]
    assert key == [(r.size, r.first, r.last, r.tensor, r.scratch) for r in tensor_requests(one, {(0, 0): [40]})]
    # IF at scope 1; its then branch enters scope 2 (one operator: 3), its else branch 4 (four operators: 5-8);
    # the IF's tensors live until the branches are done, the else input until its two slices
    reqs = {(r.subgraph, r.tensor): (r.first, r.last) for r in tensor_requests(m)}
    assert reqs[0, 1] == (0, 8) and reqs[0, 2] == (1, 8)
    assert reqs[1, 0] == (2, 3) and reqs[1, 1] == (3, 3) and reqs[2, 0] == (4, 6)


def test_arena_report_names_subgraphs() -> None:
    it = Interpreter.from_bytes(if_model("int8"), planner="tflm")
    report = it.arena_report()
    assert {b["subgraph"] for b in report["buffers"]} == {0, 1, 2}
    assert report["head_bytes"] == tflm_arena(if_model("int8"))["head"]


@pytest.mark.parametrize("offsets", [[1024, 0, 512, -1, -1, -1, -1], [-1, -1, -1, 2048, 4096, -1, -1]],
                         ids=["main", "branch"])
def test_offline_offsets_of_called_subgraphs(offsets: list[int]) -> None:
    """OfflineMemoryAllocation lists the tensors of all subgraphs in order; TFLM fixes a branch's too."""
    from micronn.planners import OFFLINE_KEY

    main = Sub()
    main.t("c", T((1,), "bool"))
    main.t("x", act("float32", (1, 32)))
    main.t("y", act("float32", (1, 32)))
    main.op("IF", ["c", "x"], ["y"], then_subgraph_index=1, else_subgraph_index=1)
    branch = Sub()
    branch.t("a", act("float32", (1, 32)))
    branch.t("o", act("float32", (1, 32)))
    branch.fc("a", "o", 32, "float32", seed=14)
    m = graph_ir(main.graph(["c", "x"], ["y"]), branch.graph(["a"], ["o"]))
    m.metadata = {OFFLINE_KEY: np.array([1, 2, len(offsets), *offsets], "<i4").tobytes()}
    model = write(m)
    check(model, runs=2)
    assert Interpreter.from_bytes(model, planner="tflm").head == (1040 if offsets[0] >= 0 else 4224)


def test_while_counter_as_the_converter_writes_it() -> None:
    """The TF converter's loop: an int32 counter from a constant 0, ``i < n`` in cond, ``i + 1`` in the body.

    The limit is min(n, 30) for an input n, so one interpreter runs a different number of iterations every invoke.
    """
    main = Sub()
    main.t("n", T((1,), "int32"))
    main.t("x", act("int8"))
    for name, spec in (("limit", T((1,), "int32")), ("i_out", T((1,), "int32")), ("n_out", T((1,), "int32")),
                       ("x_out", act("int8"))):
        main.t(name, spec)
    main.op("MINIMUM", ["n", main.const([30], "int32")], ["limit"])
    zero = main.const([0], "int32")
    main.op("WHILE", [zero, "limit", "x"], ["i_out", "n_out", "x_out"], cond_subgraph_index=1,
            body_subgraph_index=2)
    cond = Sub()
    for name, spec in (("i", T((1,), "int32")), ("n", T((1,), "int32")), ("s", act("int8")),
                       ("go", T((1,), "bool"))):
        cond.t(name, spec)
    cond.op("LESS", ["i", "n"], ["go"])
    body = Sub()
    for name, spec in (("i", T((1,), "int32")), ("n", T((1,), "int32")), ("s", act("int8")),
                       ("i2", T((1,), "int32")), ("s2", act("int8"))):
        body.t(name, spec)
    body.op("ADD", ["i", body.const([1], "int32")], ["i2"])
    body.fc("s", "s2", 8, "int8", seed=15)
    model = graph_model(main.graph(["n", "x"], ["x_out", "i_out"]), cond.graph(["i", "n", "s"], ["go"]),
                        body.graph(["i", "n", "s"], ["i2", "n", "s2"]))
    x = np.arange(-4, 4, dtype=np.int8).reshape(1, 8)
    for n in (-5, 0, 3, 30, 1 << 30):
        (out,) = assert_same_as_tflm(model, inputs=[np.array([n], np.int32), x])
        assert out[1][0] == min(max(n, 0), 30)
    tflm = run_tflm(model, [np.array([7], np.int32), x])
    check(model, runs=3)
    assert tflm[0].tobytes() != x.tobytes()  # the body really ran


def test_tensor_no_operator_touches_is_planned_like_tflm() -> None:
    """TFLM plans a tensor nothing uses too (alive at time -1 only); micronn's own planners leave it out."""
    g = Graph({"x": act("float32", (1, 64)), "y": act("float32", (64,)), "junk": act("float32", (1, 1000))},
              [Op("RESHAPE", ["x"], ["y"])], ["x"], ["y"])
    model = graph_model(g)
    assert tflm_arena(model)["head"] == 4000
    assert Interpreter.from_bytes(model, planner="tflm").head == 4000
    assert Interpreter.from_bytes(model).head <= 512


def test_endless_while_is_an_invoke_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """TFLM spins forever on a condition that stays true; micronn stops after While.max_iterations."""
    from micronn.kernels.while_ import While

    monkeypatch.setattr(While, "max_iterations", 20)
    it = Interpreter(while_model("int8", fc=False))
    it.allocate_tensors()
    it.set_input(np.ones(24, bool), 0)  # 24 leading Trues: more iterations than the limit allows
    it.set_input(np.zeros((1, 8), np.int8), 1)
    with pytest.raises(InvokeError, match="20 iterations"):
        it.invoke()
