"""TinySeg's spill operators (Spill, Fetch, FetchConv2D) in C against micronn's Python kernels, byte for byte.

On the host, operator by operator over the interpreter's own arena: every operator runs in Python (its Spill and
Fetch through the interpreter's storage), and each spill operator runs again in C from the same arena, its storage
``mn_storage_memory`` (``kernels/storage.c``) over host buffers: a Spill must leave the bytes the Python storage
got, a Fetch or FetchConv2D the bytes of the Python kernel's output. Hand-built models reach the edge cases
(concatenation along every axis, several victims, every part spilled, ``drop``, padding, strides, dilations,
groups, batches); TinySeg's own transformations and ``optimize`` give the real ones. Then whole models on the
emulated Cortex-M4 through ``micronn.micro.run_model``, failing storage, and freestanding cross-compilation.
"""

from __future__ import annotations

import ctypes
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_kernels import Host, host_library, out_size

import micronn
from micronn import tinyseg
from micronn.errors import UnsupportedError
from micronn.ir import random_inputs
from micronn.kernels._custom_options import custom_options
from micronn.micro import lower, lower_tinyseg, run_model
from micronn.micro.toolchain import LIBCALLS_RISCV
from micronn.storage import MemoryStorage
from micronn.testing import Graph, Op, T, graph_ir
from micronn.tflite.reader import read
from micronn.tflite.writer import write
from micronn.tinyseg import transform

TINY_UNET = Path("/work/shared/models/tiny_unet.tflite")
FILES = ["spill.c", "fetch.c", "fetch_conv_2d.c", "storage.c"]
SYMBOLS = set(re.findall(r'"(mn_\w+)"', inspect.getsource(lower_tinyseg)))  # every kernel the lowerings emit
Q = dict(scale=0.05, zero_point=-3)  # the quantization every int8 part of a concatenation shares


def sources() -> list[Path]:
    return [lower.include_dir() / f for f in FILES]


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    """The spill kernels and the memory storage in one host library (gcc -Wall -Wextra -Werror), cached by hash."""
    return ctypes.CDLL(str(host_library("kernels-tinyseg", sources(), [lower.include_dir() / "mn_kernels.h"])))


class Storage:
    """``mn_storage_memory``'s table over host buffers: one per id, sized as ``sizes`` says."""

    def __init__(self, lib: ctypes.CDLL, sizes: dict[int, int]):
        self.lib, self.bufs = lib, {k: np.zeros(n, np.uint8) for k, n in sizes.items()}
        self.table = np.array([v for k, b in sorted(self.bufs.items()) for v in (k, b.ctypes.data, b.size)] or [0],
                              np.uintp)
        ctypes.c_void_p.in_dll(lib, "mn_storage_table").value = self.table.ctypes.data
        ctypes.c_size_t.in_dll(lib, "mn_storage_count").value = len(self.bufs)
        self.fn = ctypes.cast(lib.mn_storage_memory, ctypes.c_void_p).value


class SpillHost(Host):
    """Runs tasks on the host; a StorageRef is ``mn_storage_memory`` over ``storage``."""

    def __init__(self, lib: ctypes.CDLL, it: micronn.Interpreter, storage: Storage):
        super().__init__(lib, it)
        self.storage = storage

    def resolve(self, ref: lower.TensorRef | lower.ScratchRef | lower.ConstRef | lower.StorageRef) -> int:
        return self.storage.fn if isinstance(ref, lower.StorageRef) else super().resolve(ref)


def victim_sizes(it: micronn.Interpreter) -> dict[int, int]:
    return {k.id: n.inputs[0].nbytes for n, k in zip(it._nodes, it._kernels) if n.op.op == "Spill"}


def check_spill_ops(lib: ctypes.CDLL, it: micronn.Interpreter, inputs: list[np.ndarray]) -> dict[str, int]:
    """Every operator in Python; each spill operator again in C from the same arena. Returns how many of each ran
    in C. The interpreter's storage is a fresh MemoryStorage, kept so that each Spill can be compared."""
    it._storage = MemoryStorage()
    it._ensure()
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    storage = Storage(lib, victim_sizes(it))
    host, arena, ran = SpillHost(lib, it, storage), it._arena.buf, {}
    for i, (kernel, node) in enumerate(zip(it._kernels, it._nodes)):
        name = node.op.op
        if name not in transform.SPILL_OPS:
            kernel.invoke(node)
            continue
        tasks = lower.lower(it, i)
        before = arena.copy()
        kernel.invoke(node)
        want = [it._views[t].copy() for t in node.op.outputs]
        if name == "Spill":
            stored = np.zeros(node.inputs[0].nbytes, np.uint8)
            it.storage.get(kernel.id, 0, stored)
            want.append(stored)
        arena[...] = before
        host.run(tasks)
        got = [it._views[t] for t in node.op.outputs] + ([storage.bufs[kernel.id]] if name == "Spill" else [])
        for j, (w, g) in enumerate(zip(want, got)):
            w, g = w.reshape(-1).view(np.uint8), g.reshape(-1).view(np.uint8)
            bad = np.flatnonzero(w != g)
            if len(bad):
                pytest.fail(f"operator {i} ({name}), {'storage' if name == 'Spill' else 'output'} {j}: {len(bad)} "
                            f"of {len(w)} bytes differ, first at {bad[:5]}: want {w[bad[:5]]}, got {g[bad[:5]]}")
        if name == "Spill":  # the next Fetch reads the C storage; what the Python one holds must agree
            assert np.array_equal(storage.bufs[kernel.id], want[-1])
        ran[name] = ran.get(name, 0) + 1
    return ran


def interpreter_outputs(model: bytes | micronn.ir.Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    it = micronn.Interpreter(model, storage=MemoryStorage())
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i).copy() for i in range(len(it.subgraph.outputs))]


# ---- hand-built models ------------------------------------------------------------------------------------------


def spec(shape: tuple[int, ...], dtype: str) -> T:
    return T(shape, dtype, **Q) if dtype == "int8" else T(shape, dtype)


def fetch_model(dtype: str = "int8", axis: int = 3, parts: str = "vr", shape: tuple[int, ...] = (2, 4, 5, 3),
                drop: int = 1) -> bytes:
    """Inputs ``p0``, ``p1``...; each ``v`` part is spilled (id 10 + its place) and the Fetch concatenates every
    part along ``axis`` in the order ``parts`` gives (``r``: still in the arena). Part k has extent k + 1 there."""
    rank = len(shape)
    ax = axis % rank
    tensors, ops, ram, victims, sizes, positions = {}, [], [], [], [], []
    for k, kind in enumerate(parts):
        s = tuple(k + 1 if d == ax else n for d, n in enumerate(shape))
        tensors[f"p{k}"] = spec(s, dtype)
        if kind == "v":
            ops.append(Op("Spill", [f"p{k}"], [], custom_options=custom_options(id=10 + k)))
            victims.append(10 + k), sizes.append(k + 1), positions.append(k)
        else:
            ram.append(f"p{k}")
    total = sum(range(1, len(parts) + 1))
    tensors["y"] = spec(tuple(total if d == ax else n for d, n in enumerate(shape)), dtype)
    ops.append(Op("Fetch", ram, ["y"], custom_options=custom_options(victims=victims, positions=positions,
                                                                      sizes=sizes, axis=axis, drop=drop)))
    return write(graph_ir(Graph(tensors, ops, list(tensors)[:-1], ["y"])))


def refetch_model(dtype: str = "int8") -> bytes:
    """One spilled tensor fetched twice: first with ``drop=0`` (kept in storage), then fused with a concatenation."""
    t = {"a": spec((1, 3, 4, 2), dtype), "z": spec((1, 3, 4, 3), dtype), "y1": spec((1, 3, 4, 2), dtype),
         "y2": spec((1, 3, 4, 7), dtype)}
    ops = [Op("Spill", ["a"], [], custom_options=custom_options(id=3)),
           Op("Fetch", [], ["y1"], custom_options=custom_options(victims=[3], positions=[0], sizes=[1], axis=0,
                                                                  drop=0)),
           Op("Fetch", ["z", "y1"], ["y2"], custom_options=custom_options(victims=[3], positions=[2], sizes=[2],
                                                                          axis=3))]
    return write(graph_ir(Graph(t, ops, ["a", "z"], ["y1", "y2"])))


def fetch_conv_model(parts: str = "rv", n: int = 1, h: int = 7, w: int = 6, cout: int = 5, fh: int = 3, fw: int = 3,
                     stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1), pad: int = 0, act: int = 0,
                     groups: int = 1, bias: bool = True, in_zp: int = 3, seed: int = 0, dtype: str = "int8") -> bytes:
    """A FetchConv2D over parts of 2, 3, 4... channels (``r``: in the arena, ``v``: spilled), as TinySeg's fused
    fetching makes it: int8 with per-channel weights (or float32)."""
    rng = np.random.default_rng(seed)
    q = dict(scale=0.05, zero_point=in_zp) if dtype == "int8" else {}
    tensors, ops, ram, victims, sizes, positions = {}, [], [], [], [], []
    for k, kind in enumerate(parts):
        tensors[f"p{k}"] = T((n, h, w, k + 2), dtype, **q)
        if kind == "v":
            ops.append(Op("Spill", [f"p{k}"], [], custom_options=custom_options(id=20 + k)))
            victims.append(20 + k), sizes.append(k + 2), positions.append(k)
        else:
            ram.append(f"p{k}")
    cin = sum(k + 2 for k in range(len(parts)))
    fc = cin // groups
    oh, ow = out_size(pad, h, fh, stride[0], dil[0]), out_size(pad, w, fw, stride[1], dil[1])
    if dtype == "int8":
        tensors["w"] = T((cout, fh, fw, fc), "int8", list(rng.uniform(0.002, 0.02, cout)), 0,
                         data=rng.integers(-127, 128, (cout, fh, fw, fc)))
        tensors["b"] = T((cout,), "int32", data=rng.integers(-30000, 30000, cout)) if bias else None
        tensors["y"] = T((n, oh, ow, cout), "int8", 0.3, -5)
    else:
        tensors["w"] = T((cout, fh, fw, fc), dtype, data=rng.uniform(-1, 1, (cout, fh, fw, fc)))
        tensors["b"] = T((cout,), dtype, data=rng.uniform(-1, 1, cout)) if bias else None
        tensors["y"] = T((n, oh, ow, cout), dtype)
    opts = dict(victims=victims, positions=positions, sizes=sizes, axis=3, drop=1, padding=pad, stride_h=stride[0],
                stride_w=stride[1], dilation_h_factor=dil[0], dilation_w_factor=dil[1], fused_activation_function=act,
                height=h, width=w, **q)
    ops.append(Op("FetchConv2D", [*ram, "w", "b" if bias else None], ["y"], custom_options=custom_options(**opts)))
    tensors = {k: v for k, v in tensors.items() if v is not None}
    return write(graph_ir(Graph(tensors, ops, [f"p{k}" for k in range(len(parts))], ["y"])))


FETCH_CASES = {
    **{f"{dtype}_axis{axis}": fetch_model(dtype, axis) for dtype in ("int8", "int16", "float32")
       for axis in (0, 1, 2, 3, -1)},
    "int8_victims_around_ram": fetch_model("int8", 3, "vrv"),
    "int8_victims_in_a_row": fetch_model("int8", 2, "rvvr"),
    "int8_all_spilled": fetch_model("int8", 3, "vv"),
    "float32_all_spilled_axis1": fetch_model("float32", 1, "vvv"),
    "int8_plain": fetch_model("int8", 0, "v", shape=(1, 3, 4, 2)),
    "uint8_plain_no_drop": fetch_model("uint8", 0, "v", shape=(3, 5), drop=0),
    "int32_rank2_columns": fetch_model("int32", 1, "rv", shape=(6, 2)),
    "int16_refetch": refetch_model("int16"),
    "int8_refetch": refetch_model("int8"),
}

CONV_CASES = {
    "ram_then_victim": fetch_conv_model("rv"),
    "victim_then_ram": fetch_conv_model("vr", pad=1),
    "all_spilled": fetch_conv_model("vv"),
    "three_victims_valid": fetch_conv_model("vrvv", cout=9, pad=1, act=1),
    "stride2": fetch_conv_model("rv", stride=(2, 2), h=9, w=8),
    "stride_beyond_window": fetch_conv_model("vr", fh=1, fw=2, stride=(3, 2), h=10),
    "dilation": fetch_conv_model("rv", dil=(2, 2), h=9, w=8),
    "tall_filter": fetch_conv_model("vr", fh=5, fw=1, h=4),  # more filter rows than input rows: ring = in_h
    "groups": fetch_conv_model("vr", groups=5, cout=10),
    "groups_split_parts": fetch_conv_model("rvr", groups=3, cout=6),  # a group spans two parts
    "batches": fetch_conv_model("vr", n=2, cout=7, act=3, pad=1),
    "no_bias_zp": fetch_conv_model("rv", bias=False, in_zp=-128),
    "one_by_one": fetch_conv_model("vv", fh=1, fw=1, cout=4),
}


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(FETCH_CASES))
def test_fetch_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(FETCH_CASES[case], planner=planner)
    ran = check_spill_ops(lib, it, random_inputs(it.model, seed=1))
    assert ran["Fetch"] >= 1 and ran["Spill"] >= 1
    assert ran.get("Spill", 0) == sum(op.op == "Spill" for op in it.model.main.operators)


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_fetch_conv_2d_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(CONV_CASES[case], planner=planner)
    for seed in (0, 1):
        assert check_spill_ops(lib, it, random_inputs(it.model, seed=seed))["FetchConv2D"] == 1


def test_fetch_line_buffer_is_the_scratch_the_kernel_requested() -> None:
    """A channel concatenation reads its spilled part a line at a time through prepare's scratch buffer; a plain
    fetch lands straight in the output and needs none."""
    for model, scratch in ((FETCH_CASES["int8_axis3"], True), (FETCH_CASES["int8_plain"], False)):
        it = micronn.Interpreter(model)
        it.allocate_tensors()
        fetch = next(i for i, n in enumerate(it._nodes) if n.op.op == "Fetch")
        (task,) = lower.lower(it, fetch)
        assert task.symbol == "mn_fetch" and isinstance(task.args[2], lower.StorageRef)
        assert isinstance(task.args[1], lower.ScratchRef) == scratch


# ---- TinySeg's own transformations -------------------------------------------------------------------------------


def small_unet(h: int = 12, w: int = 10, seed: int = 0) -> Graph:
    """conv -> skip -> pool -> conv -> resize -> concat(skip, up) -> conv: one long-lived skip connection."""
    rng = np.random.default_rng(seed)

    def conv(cin: int, cout: int, name: str) -> dict[str, T]:
        return {f"w{name}": T((cout, 3, 3, cin), "int8", list(rng.uniform(0.01, 0.03, cout)), 0,
                              data=rng.integers(-127, 128, (cout, 3, 3, cin))),
                f"b{name}": T((cout,), "int32", data=rng.integers(-500, 500, cout))}

    t = {"x": T((1, h, w, 3), "int8", **Q), **conv(3, 4, "1"), "skip": T((1, h, w, 4), "int8", **Q),
         "p": T((1, h // 2, w // 2, 4), "int8", **Q), **conv(4, 8, "2"), "d": T((1, h // 2, w // 2, 8), "int8", **Q),
         "size": T((2,), "int32", data=[h, w]), "up": T((1, h, w, 8), "int8", **Q),
         "cat": T((1, h, w, 12), "int8", **Q), **conv(12, 4, "3"), "y": T((1, h, w, 4), "int8", 0.2, 5)}
    one = {"stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}
    ops = [Op("CONV_2D", ["x", "w1", "b1"], ["skip"], {**one, "fused_activation_function": 1}),
           Op("MAX_POOL_2D", ["skip"], ["p"], {"filter_height": 2, "filter_width": 2, "stride_h": 2, "stride_w": 2}),
           Op("CONV_2D", ["p", "w2", "b2"], ["d"], one),
           Op("RESIZE_NEAREST_NEIGHBOR", ["d", "size"], ["up"]),
           Op("CONCATENATION", ["skip", "up"], ["cat"], {"axis": 3}),
           Op("CONV_2D", ["cat", "w3", "b3"], ["y"], one)]
    return Graph(t, ops, ["x"], ["y"])


def transformed() -> dict[str, micronn.ir.Model]:
    """small_unet after each of TinySeg's steps: spill, fused concatenation, FetchConv2D, a streamed arena input,
    and a partial spill (whole channels) restored by a fetch fused all the way into the convolution."""
    m = graph_ir(small_unet())
    c = next(c for c in tinyseg.cold_ranges(m) if m.main.tensors[c.tensor].name == "skip")
    spilled = transform.spill(m, c.tensor, c.start, c.end)
    fetch = [op.op for op in spilled.main.operators].index("Fetch")
    concat = transform.fuse(spilled, fetch)
    conv = transform.fuse(concat, fetch)
    partial = transform.spill(m, c.tensor, c.start, c.end, nbytes=150)
    f = [op.op for op in partial.main.operators].index("Fetch")
    return {"spill": spilled, "spill_early": transform.spill(m, c.tensor, c.start, c.end, early=True),
            "fused_concat": concat, "fetch_conv": conv,
            "streamed": transform.stream_input(conv, fetch, conv.main.operators[fetch].inputs[0]),
            "partial": transform.fuse(transform.fuse(transform.fuse(partial, f), f), f)}


TRANSFORMED = transformed()


@pytest.mark.parametrize("case", sorted(TRANSFORMED))
def test_transformed_small_unet(lib: ctypes.CDLL, case: str) -> None:
    model = read(write(TRANSFORMED[case]))
    it = micronn.Interpreter(model)
    inputs = random_inputs(model, seed=2)
    ran = check_spill_ops(lib, it, inputs)
    assert ran["Spill"] >= 1 and ran.get("Fetch", 0) + ran.get("FetchConv2D", 0) >= 1
    orig = graph_ir(small_unet())
    assert [o.tobytes() for o in interpreter_outputs(orig, inputs)] == [it.get_output(0).tobytes()]


@pytest.fixture(scope="module")
def optimized() -> micronn.ir.Model:
    if not TINY_UNET.exists():
        pytest.skip(f"{TINY_UNET} is not here")
    return tinyseg.optimize(TINY_UNET, latency=False).model


def test_optimized_tiny_unet_ops_on_the_host(lib: ctypes.CDLL, optimized: micronn.ir.Model) -> None:
    ran = check_spill_ops(lib, micronn.Interpreter(optimized), random_inputs(optimized, seed=4))
    assert ran.get("Spill", 0) >= 2 and ran.get("FetchConv2D", 0) >= 1


def test_optimized_tiny_unet_on_the_host_device(optimized: micronn.ir.Model) -> None:
    """The whole optimized model through the host-driven runtime (``mn_storage_memory`` in the session's RAM)."""
    inputs = random_inputs(optimized, seed=5)
    got = run_model(optimized, "host", inputs)["outputs"]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in interpreter_outputs(optimized, inputs)]


def test_optimized_tiny_unet_on_cortex_m4(optimized: micronn.ir.Model) -> None:
    """TinySeg's result of the bundled U-Net, every operator on the emulated Cortex-M4 (~300M instructions)."""
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    ops = {op.op for op in optimized.main.operators}
    assert {"Spill", "FetchConv2D"} <= ops
    inputs = random_inputs(optimized, seed=6)
    res = run_model(optimized, "cortex-m4", inputs)
    assert [g.tobytes() for g in res["outputs"]] == [w.tobytes() for w in interpreter_outputs(optimized, inputs)]


@pytest.mark.parametrize("case", ["int8_axis3", "float32_all_spilled_axis1", "int16_refetch", "uint8_plain_no_drop",
                                  "int8_victims_around_ram"])
def test_fetch_models_on_cortex_m4(case: str) -> None:
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    model = FETCH_CASES[case]
    inputs = random_inputs(read(model), seed=7)
    got = run_model(model, "cortex-m4", inputs)["outputs"]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in interpreter_outputs(model, inputs)]


@pytest.mark.parametrize("case", ["three_victims_valid", "batches", "groups_split_parts", "stride_beyond_window"])
def test_fetch_conv_2d_models_on_cortex_m4(case: str) -> None:
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    model = CONV_CASES[case]
    inputs = random_inputs(read(model), seed=8)
    got = run_model(model, "cortex-m4", inputs)["outputs"]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in interpreter_outputs(model, inputs)]


@pytest.mark.parametrize("target", ["cortex-m0", "riscv32"])
def test_spill_models_on_other_targets(target: str) -> None:
    """The portable C paths (no DSP extension) and a RISC-V calling convention for the storage function."""
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    for model in (CONV_CASES["three_victims_valid"], FETCH_CASES["int8_victims_around_ram"]):
        inputs = random_inputs(read(model), seed=9)
        got = run_model(model, target, inputs)["outputs"]
        assert [g.tobytes() for g in got] == [w.tobytes() for w in interpreter_outputs(model, inputs)]


# ---- what is refused, and a storage that fails -------------------------------------------------------------------


def test_fetch_conv_2d_of_other_types_is_unsupported() -> None:
    """Only the int8 FetchConv2D has a kernel: a float32 one is reported as unsupported, not mislowered."""
    it = micronn.Interpreter(fetch_conv_model("rv", dtype="float32"))
    it.allocate_tensors()
    with pytest.raises(UnsupportedError, match="FetchConv2D"):
        lower.lower_model(it)


def test_memory_storage_bounds(lib: ctypes.CDLL) -> None:
    """mn_storage_memory: reads what was written, at any offset; an unknown id or a range past the object fails."""
    st = Storage(lib, {5: 8, 9: 3})
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32,
                          ctypes.c_uint32)(st.fn)
    data = np.arange(1, 9, dtype=np.uint8)
    assert fn(5, 0, data.ctypes.data, 8, 1) == 0 and np.array_equal(st.bufs[5], data)
    out = np.zeros(3, np.uint8)
    assert fn(5, 5, out.ctypes.data, 3, 0) == 0 and list(out) == [6, 7, 8]
    assert fn(5, 6, out.ctypes.data, 3, 0) != 0 and fn(5, 9, out.ctypes.data, 0, 0) != 0
    assert fn(5, 0xFFFFFFFF, out.ctypes.data, 2, 0) != 0  # no wrap-around of offset + n
    assert fn(4, 0, out.ctypes.data, 1, 0) != 0 and fn(9, 0, out.ctypes.data, 3, 1) == 0
    assert list(out) == [6, 7, 8]  # failed reads leave the buffer alone


FAILING = {"fetch": FETCH_CASES["int8_axis3"], "plain": FETCH_CASES["int8_plain"], "conv": CONV_CASES["all_spilled"]}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_failing_storage_stops_the_kernel(lib: ctypes.CDLL, case: str) -> None:
    """With an empty storage table every call fails: Spill and the fetching kernels return without touching the
    spilled part's place in the output (nor crashing), and leave the storage function's code in mn_status."""
    it = micronn.Interpreter(FAILING[case])
    it._ensure()
    for i, x in enumerate(random_inputs(it.model, seed=3)):
        it.set_input(x, i)
    host = SpillHost(lib, it, Storage(lib, {}))
    for i, node in enumerate(it._nodes):
        before = [it._views[t].copy() for t in node.op.outputs]
        sentinel = [np.full_like(b, 0x5A if b.dtype == np.int8 else 1) for b in before]
        for t, s in zip(node.op.outputs, sentinel):
            it._views[t][...] = s
        host.run(lower.lower(it, i))
        status = ctypes.c_int32.in_dll(lib, "mn_status")
        reaches_storage = node.op.op in ("Spill", "Fetch", "FetchConv2D") and any(
            isinstance(a, lower.StorageRef) for t in lower.lower(it, i) for a in t.args)
        assert (status.value != 0) == reaches_storage, node.op.op
        status.value = 0
        if node.op.op == "Fetch":
            y = it._views[node.op.outputs[0]]
            spilled = y[..., :1] if case == "fetch" else y  # int8_axis3: the spilled p0 is channel 0
            assert (spilled == 0x5A).all()
        if node.op.op == "FetchConv2D":
            assert (it._views[node.op.outputs[0]] == 0x5A).all()


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_failing_storage_is_an_error_of_the_device_run(target: str) -> None:
    """The host-driven runtime reads mn_status after the flush: a storage that fails ends the invoke in a
    StorageError, not in outputs that silently lack the spilled tensors; the next good invoke works."""
    if target != "host":
        pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    from micronn.micro.runtime import DeviceModel
    from micronn.micro.session import Session
    from micronn.storage.base import StorageError

    model = CONV_CASES["three_victims_valid"]
    inputs = random_inputs(read(model), seed=11)
    with Session(target) as sess:
        dm = DeviceModel(model, sess)
        table = sess.read(dm._module.symbols["mn_storage_count"], 4)
        sess.write(dm._module.symbols["mn_storage_count"], bytes(4))  # no object known: every call fails
        with pytest.raises(StorageError, match="storage call failed on the device with code 1"):
            dm.invoke(inputs)
        sess.write(dm._module.symbols["mn_storage_count"], table)
        got = dm.invoke(inputs)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in interpreter_outputs(model, inputs)]


# ---- freestanding on a Cortex-M0, a Cortex-M4 and an RV32 ---------------------------------------------------------


@pytest.mark.parametrize("target,cpu", [("thumb-freestanding-eabi", "cortex_m0"),
                                        ("thumb-freestanding-eabi", "cortex_m4"),
                                        ("riscv32-freestanding-none", "generic_rv32+m+c")])
def test_cross_compile_freestanding(tmp_path: Path, target: str, cpu: str) -> None:
    """Each file builds as freestanding C with zig, needs nothing but memcpy/memset and the runtime's helpers, and
    defines every kernel the lowerings emit and the memory storage."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    defined: set[str] = set()
    for src in sources():
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", target, f"-mcpu={cpu}", "-O2",
                        "-ffreestanding", "-fno-builtin", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wno-vla",
                        f"-I{lower.include_dir()}", "-c", str(src), "-o", str(obj)],
                       check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            symbols = list(elffile.ELFFile(f).get_section_by_name(".symtab").iter_symbols())
        undefined = {s.name for s in symbols if s.name and s["st_shndx"] == "SHN_UNDEF"} - {"memcpy", "memset"}
        allowed = set(LIBCALLS_RISCV) if cpu.startswith("generic_rv32") else {u for u in undefined if "__aeabi_" in u}
        assert undefined <= allowed, src.name
        defined |= {s.name for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert SYMBOLS == {"mn_spill", "mn_fetch", "mn_fetch_conv_2d_s8"}
    assert SYMBOLS | {"mn_storage_memory", "mn_storage_table", "mn_storage_count"} <= defined
