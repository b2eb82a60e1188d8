"""The C kernels against micronn's Python kernels, byte for byte, on the host.

All kernels are compiled once with the host gcc into a shared library and called through ctypes over the
interpreter's own arena: every operator runs in Python, the arena is put back as it was, the operator's tasks
run in C, and the output (and any variable state) must hold the same bytes. The arena keeps the plan's real
placements, so outputs the planner streams over their inputs are checked too. The last test cross-compiles
every kernel for a Cortex-M4 to check they are freestanding.
"""

from __future__ import annotations

import ctypes
import hashlib
import inspect
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import micronn
from micronn.micro import lower
from micronn.micro.toolchain import LIBCALLS_RISCV
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

MODELS = Path(micronn.__file__).parent / "models"
FLAGS = ["-std=c99", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror"]


def host_library(name: str, files: list[Path], deps: list[Path] = (), extra: tuple[str, ...] = ()) -> Path:
    """A host shared library of C ``files`` (gcc with ``FLAGS``), cached in the temporary directory by the hash of
    the flags, the files and their ``deps``; built under a name of this process's own, then moved into place, so
    that test processes running side by side agree."""
    key = hashlib.sha256(" ".join(FLAGS + list(extra)).encode()
                         + b"".join(f.read_bytes() for f in [*files, *deps])).hexdigest()[:16]
    so = Path(tempfile.gettempdir()) / f"micronn-{name}-{key}.so"
    if not so.exists():
        tmp = so.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(["gcc", *FLAGS, f"-I{lower.include_dir()}", *map(str, files), "-o", str(tmp), *extra],
                       check=True, capture_output=True, timeout=120)
        tmp.replace(so)
    return so


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    """Every kernel in one host library."""
    return ctypes.CDLL(str(host_library("kernels", lower.sources(), sorted(lower.include_dir().glob("*.h")))))


class Host:
    """Runs tasks on the host over an interpreter's arena (word size 8)."""

    def __init__(self, lib: ctypes.CDLL, it: micronn.Interpreter):
        self.lib, self.it, self.keep = lib, it, []

    def resolve(self, ref: lower.TensorRef | lower.ScratchRef | lower.ConstRef) -> int:
        if isinstance(ref, lower.TensorRef):
            return self.it._all_views[ref.subgraph][ref.tensor].ctypes.data
        if isinstance(ref, lower.ScratchRef):
            return self.it._nodes[ref.op].scratch_views[ref.scratch].ctypes.data
        self.keep.append(ref.data)
        return ref.data.ctypes.data

    def run(self, tasks: list[lower.Task]) -> None:
        for task in tasks:
            args = ctypes.create_string_buffer(lower.pack(task, self.resolve, 8))
            getattr(self.lib, task.symbol)(args)


def check_ops(lib: ctypes.CDLL, it: micronn.Interpreter, inputs: list[np.ndarray]) -> int:
    """Each operator in turn: Python, then C from the same arena; returns how many ran in C."""
    it._ensure()
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    host, arena = Host(lib, it), it._arena.buf
    for i, (kernel, node) in enumerate(zip(it._kernels, it._nodes)):
        tasks = lower.lower(it, i)
        written = node.op.outputs + [t for t in node.op.inputs if t >= 0 and it.subgraph.tensors[t].is_variable]
        before = arena.copy()
        kernel.invoke(node)
        want = [it._views[t].copy() for t in written]
        arena[...] = before
        host.run(tasks)
        for t, w in zip(written, want):
            w, g = w.reshape(-1).view(np.uint8), it._views[t].reshape(-1).view(np.uint8)
            bad = np.flatnonzero(w != g)
            if len(bad):
                pytest.fail(f"operator {i} ({node.op.op}), tensor {t}: {len(bad)} of {len(w)} bytes differ, first "
                            f"at {bad[:5]}: want {w[bad[:5]]}, got {g[bad[:5]]}")
    return len(it._nodes)


@pytest.mark.parametrize("name", ["person_detect", "micro_speech_quantized", "keyword_scrambled", "tiny_unet"])
@pytest.mark.parametrize("planner", ["optimal", "tflm"])
def test_models(lib: ctypes.CDLL, name: str, planner: str) -> None:
    """Every operator of the four models, with the streaming plan and with TFLM's (whole-output scratch)."""
    it = micronn.Interpreter(MODELS / f"{name}.tflite", planner=planner)
    inputs = random_inputs(it.model, seed=1)
    check_ops(lib, it, inputs)
    if name == "keyword_scrambled":  # the SVDF state carries over: a second inference from the C state
        check_ops(lib, it, random_inputs(it.model, seed=2))


def test_streamed_outputs_are_staged() -> None:
    """person_detect's default plan streams its convolutions over their inputs, so those tasks stage their pixels;
    TFLM's plan never overlaps them."""
    stages = {planner: [t.args[-1] for t in lower.lower_model(micronn.Interpreter(MODELS / "person_detect.tflite",
                                                                                    planner=planner))
                        if t.symbol in ("mn_conv_2d_s8", "mn_depthwise_conv_2d_s8")] for planner in ("optimal", "tflm")}
    assert sum(stages["optimal"]) > 0 and sum(stages["tflm"]) == 0


# ---- single-op models: the edge cases the four models do not reach ---------------------------------------------


def out_size(pad: int, size: int, f: int, stride: int, dil: int = 1) -> int:
    return (size + stride - 1) // stride if pad == 0 else (size + stride - (f - 1) * dil - 1) // stride


def conv(*, n=1, h=7, w=6, cin=3, cout=4, fh=3, fw=2, stride=(1, 1), dil=(1, 1), pad=0, act=0, per_channel=True,
         bias=True, groups=1, in_zp=3, depthwise=False, mult=1, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    cout = cin * mult if depthwise else cout
    oh, ow = out_size(pad, h, fh, stride[0], dil[0]), out_size(pad, w, fw, stride[1], dil[1])
    shape = (1, fh, fw, cout) if depthwise else (cout, fh, fw, cin // groups)
    scales = list(rng.uniform(0.002, 0.02, cout)) if per_channel else 0.01
    wt = T(shape, "int8", scales, 0, axis=3 if depthwise else 0, data=rng.integers(-127, 128, shape))
    b = T((cout,), "int32", data=rng.integers(-30000, 30000, cout)) if bias else None
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    extra = {"depth_multiplier": mult} if depthwise else {}
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act, **extra)
    return op_model(op, [T((n, h, w, cin), "int8", 0.05, in_zp), wt, b], [T((n, oh, ow, cout), "int8", 0.3, -5)], opts)


def fully_connected(*, batches=1, depth=10, units=5, per_channel=False, bias=True, act=0, in_zp=-7, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.02, units)) if per_channel else 0.01
    wt = T((units, depth), "int8", scales, 0, data=rng.integers(-127, 128, (units, depth)))
    b = T((units,), "int32", data=rng.integers(-3000, 3000, units)) if bias else None
    return op_model("FULLY_CONNECTED", [T((batches, depth), "int8", 0.05, in_zp), wt, b],
                    [T((batches, units), "int8", 0.1, 2)],
                    schema.options("FULLY_CONNECTED", fused_activation_function=act))


def pool(op: str, *, n=1, h=7, w=6, c=3, fh=3, fw=2, stride=(2, 2), pad=0, act=0) -> bytes:
    oh, ow = out_size(pad, h, fh, stride[0]), out_size(pad, w, fw, stride[1])
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], filter_height=fh, filter_width=fw,
                          fused_activation_function=act)
    return op_model(op, [T((n, h, w, c), "int8", 0.05, 3)], [T((n, oh, ow, c), "int8", 0.05, 3)], opts)


def softmax(shape=(3, 10), out="int8", scale=0.1, beta=1.0) -> bytes:
    q = (1 / 256, -128) if out == "int8" else (1 / 65536, -32768)
    return op_model("SOFTMAX", [T(shape, "int8", scale, 4)], [T(shape, out, *q)], {"beta": beta})


def svdf(*, batch=1, n_input=12, filters=8, rank=2, memory=4, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    units = filters // rank
    s_in, s_wf, s_wt = 0.059, 0.0091, 0.5 / 32767
    s_state = float(np.sqrt(n_input) * 74 * 74 * s_in * s_wf * 3 / 32767)
    s_out = float(np.sqrt(memory * rank) * (32767 / 3) * (32767 / 2) * s_state * s_wt * 3 / 127)
    return op_model("SVDF", [
        T((batch, n_input), "int8", s_in, -3),
        T((filters, n_input), "int8", s_wf, 0, data=rng.integers(-127, 128, (filters, n_input))),
        T((filters, memory), "int16", s_wt, 0, data=rng.integers(-32767, 32767, (filters, memory))),
        T((units,), "int32", float(np.float32(s_state) * np.float32(s_wt)), 0,
          data=rng.integers(-50_000, 50_000, units)),
        T((batch, memory * filters), "int16", s_state, 0, variable=True),
    ], [T((batch, units), "int8", s_out, 5)], {"rank": rank, "fused_activation_function": 1})


def transpose_conv(*, n=1, h=3, w=4, cin=3, cout=2, fh=3, fw=3, stride=(2, 2), pad=0, out_hw=None, bias=True,
                   act=0, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    oh, ow = out_hw or (h * stride[0], w * stride[1])
    wt = T((cout, fh, fw, cin), "int8", list(rng.uniform(0.005, 0.02, cout)), 0,
           data=rng.integers(-127, 128, (cout, fh, fw, cin)))
    b = T((cout,), "int32", data=rng.integers(-3000, 3000, cout)) if bias else None
    opts = schema.options("TRANSPOSE_CONV", padding=pad, stride_h=stride[0], stride_w=stride[1],
                          fused_activation_function=act)
    return op_model("TRANSPOSE_CONV", [T((4,), "int32", data=[n, oh, ow, cout]), wt, T((n, h, w, cin), "int8", 0.05, 3),
                                       b], [T((n, oh, ow, cout), "int8", 0.1, -5)], opts)


def quantize(src: str, dst: str) -> bytes:
    dst_zero_point = {"int16": 0, "int32": 0, "uint8": 9}.get(dst, -9)  # within the storage type's range
    return op_model("QUANTIZE", [T((3, 7), src, 0.07, 0 if src in ("int16", "int32") else 5)],
                    [T((3, 7), dst, 0.05 if dst != "int32" else 0.001, dst_zero_point)])


def strided_slice(shape, begin, end, strides, dtype="int8", out_shape=None, **opts) -> bytes:
    """Without masks the output shape is numpy's for the same slice."""
    if out_shape is None:
        out_shape = np.zeros(shape)[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))].shape
    n = len(shape)
    return op_model("STRIDED_SLICE", [T(shape, dtype, 0.1, 1), T((n,), "int32", data=begin), T((n,), "int32", data=end),
                                      T((n,), "int32", data=strides)], [T(out_shape, dtype, 0.1, 1)],
                    schema.options("STRIDED_SLICE", **opts))


def transpose(shape, perm, dtype="int8") -> bytes:
    q = (0.1, 1) if dtype == "int8" else (None, None)
    return op_model("TRANSPOSE", [T(shape, dtype, *q), T((len(perm),), "int32", data=perm)],
                    [T(tuple(shape[p] for p in perm), dtype, *q)])


def pad(dtype, shape, paddings, value=None) -> bytes:
    pads = np.array(paddings, np.int32)
    out = tuple(int(d + a + b) for d, (a, b) in zip(shape, pads))
    q = (0.1, 3) if dtype == "int8" else (None, None)
    inputs = [T(shape, dtype, *q), T(pads.shape, "int32", data=pads)]
    if value is not None:
        inputs.append(T((), dtype, *q, data=value))
    return op_model("PADV2" if value is not None else "PAD", inputs, [T(out, dtype, *q)])


def concat(shapes, axis, dtype="int8", pack=False) -> bytes:
    q = (0.1, 1) if dtype == "int8" else (None, None)
    if pack:
        out = list(shapes[0])
        out.insert(axis, len(shapes))
        opts = schema.options("PACK", values_count=len(shapes), axis=axis)
        return op_model("PACK", [T(s, dtype, *q) for s in shapes], [T(tuple(out), dtype, *q)], opts)
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return op_model("CONCATENATION", [T(s, dtype, *q) for s in shapes], [T(tuple(out), dtype, *q)],
                    schema.options("CONCATENATION", axis=axis))


CASES = {
    "conv": conv(), "conv_same": conv(pad=0, h=6, w=7), "conv_valid": conv(pad=1),
    "conv_stride": conv(stride=(2, 3), pad=0), "conv_dilation": conv(dil=(2, 3), h=9, w=10, pad=0),
    "conv_relu": conv(act=1), "conv_relu6": conv(act=3), "conv_n1_1": conv(act=2), "conv_no_bias": conv(bias=False),
    "conv_per_tensor": conv(per_channel=False), "conv_batch": conv(n=2), "conv_1x1": conv(fh=1, fw=1, cin=8, cout=7),
    "conv_grouped": conv(cin=4, cout=6, groups=2), "conv_odd_out": conv(cout=5, cin=5, fh=3, fw=3, in_zp=-128),
    "dw": conv(depthwise=True), "dw_mult": conv(depthwise=True, mult=3, cin=2), "dw_valid": conv(depthwise=True, pad=1),
    "dw_stride_dil": conv(depthwise=True, stride=(2, 1), dil=(1, 2), h=9, w=8, act=1),
    "dw_batch": conv(depthwise=True, n=2, per_channel=False, bias=False),
    "fc": fully_connected(), "fc_per_channel": fully_connected(per_channel=True, units=7, batches=3),
    "fc_no_bias_relu": fully_connected(bias=False, act=1, in_zp=0), "fc_one_unit": fully_connected(units=1),
    "avg": pool("AVERAGE_POOL_2D"), "avg_valid": pool("AVERAGE_POOL_2D", pad=1, act=1),
    "avg_stride1": pool("AVERAGE_POOL_2D", stride=(1, 1), n=2, fh=2, fw=3),
    "max": pool("MAX_POOL_2D"), "max_valid": pool("MAX_POOL_2D", pad=1, act=3), "max_1": pool("MAX_POOL_2D", fh=1),
    "softmax": softmax(), "softmax_beta": softmax(beta=0.4, scale=0.3), "softmax_16": softmax((2, 2, 9), "int16"),
    "softmax_one": softmax((1, 1)), "softmax_long": softmax((1, 100), scale=0.02),
    "svdf": svdf(), "svdf_batch": svdf(batch=3), "svdf_rank1": svdf(rank=1, filters=6, memory=1),
    "svdf_big": svdf(batch=2, n_input=40, filters=32, memory=10),
    "tconv": transpose_conv(), "tconv_same": transpose_conv(pad=0, out_hw=(5, 7)),
    "tconv_valid": transpose_conv(pad=1, out_hw=(7, 9)), "tconv_stride1": transpose_conv(stride=(1, 1), act=1),
    "tconv_odd": transpose_conv(stride=(3, 1), fh=4, fw=2, out_hw=(11, 3), pad=1, bias=False, n=2),
    "pad": pad("int8", (1, 3, 4, 2), [[0, 0], [1, 2], [2, 0], [0, 0]]),
    "pad_channels": pad("int8", (2, 3, 2), [[1, 0], [0, 1], [2, 3]]),
    "pad_int16_5d": pad("int16", (1, 2, 1, 2, 3), [[0, 1], [1, 0], [0, 0], [1, 1], [0, 2]]),
    "padv2_f32": pad("float32", (3, 4), [[1, 1], [0, 3]], value=2.5), "padv2_i8": pad("int8", (4,), [[2, 1]], 7),
    "slice": strided_slice((3, 4, 5, 6), [0, 1, 4, 1], [3, 4, 0, 6], [1, 2, -2, 2]),
    "slice_runs": strided_slice((2, 3, 9), [1, 0, 2], [2, 3, 8], [1, 2, 1], "int16"),
    "slice_shrink": strided_slice((4,), [1], [2], [1], "int32", shrink_axis_mask=1, out_shape=()),
    "slice_masks": strided_slice((5, 6), [1, 5], [0, 2], [2, -1], "int16", begin_mask=1, end_mask=1,
                                 out_shape=(3, 3)),
    "transpose": transpose((2, 3, 4), [2, 0, 1]), "transpose_f32": transpose((3, 1, 5, 2), [2, 1, 3, 0], "float32"),
    "transpose_runs": transpose((2, 3, 4, 5, 2), [3, 4, 0, 1, 2], "int16"),  # two runs of the input: 2 axes
    "transpose_4": transpose((2, 3, 2, 3), [3, 1, 2, 0]),
    "concat_c": concat([(1, 2, 3, 4), (1, 2, 3, 2)], 3), "concat_0": concat([(1, 3), (2, 3), (4, 3)], 0, "int32"),
    "concat_mid": concat([(2, 1, 3), (2, 4, 3)], 1, "float32"),
    "pack": concat([(2, 3)] * 3, 1, "int16", pack=True), "pack_0": concat([(4,)] * 2, 0, "int32", pack=True),
    "pack_last": concat([(2, 3)] * 4, 2, "int8", pack=True),
    "shape": op_model("SHAPE", [T((2, 5, 7), "int8", 0.1, 0)], [T((3,), "int32")], schema.options("SHAPE", out_type=2)),
    "reshape": op_model("RESHAPE", [T((2, 6), "int16"), T((3,), "int32", data=[3, 2, 2])], [T((3, 2, 2), "int16")]),
    **{f"quantize_{a}_{b}": quantize(a, b) for a, b in [("uint8", "int8"), ("int8", "uint8"), ("int16", "int8"),
                                                        ("int16", "int32"), ("int8", "int16"), ("int8", "int8"),
                                                        ("int32", "int16"), ("int16", "int16")]},
}


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(CASES[case], planner=planner)
    for seed in (0, 1):
        check_ops(lib, it, random_inputs(it.model, seed=seed))


# ---- freestanding on a Cortex-M4 and an RV32 ------------------------------------------------------------------


@pytest.mark.parametrize("target,cpu", [("thumb-freestanding-eabi", "cortex_m4"),
                                        ("riscv32-freestanding-none", "generic_rv32+m+c")])
def test_kernels_cross_compile_freestanding(tmp_path: Path, target: str, cpu: str) -> None:
    """Each kernel builds for a Cortex-M4 (its DSP paths) and an RV32IMC (the portable paths: an Arm builtin
    reached there would not compile) with zig as freestanding C, defines the symbols the lowering emits and needs
    nothing but memcpy, memset and the soft-float / 64-bit helpers the runtime carries (EABI names on Arm,
    compiler-rt names on RISC-V)."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    wanted = set(re.findall(r'"(mn_\w+)"', inspect.getsource(lower)))  # every kernel a lowering can emit
    defined: set[str] = set()
    for src in lower.sources():
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", target, f"-mcpu={cpu}", "-O2",
                        "-ffreestanding", "-fno-builtin", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wno-vla",
                        f"-I{lower.include_dir()}", "-c", str(src), "-o", str(obj)],
                       check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            symbols = list(elffile.ELFFile(f).get_section_by_name(".symtab").iter_symbols())
        undefined = {s.name for s in symbols if s.name and s["st_shndx"] == "SHN_UNDEF"}
        helpers = {u for u in undefined if u not in ("memcpy", "memset")}
        allowed = set(LIBCALLS_RISCV) if cpu.startswith("generic_rv32") else {u for u in helpers if "__aeabi_" in u}
        assert helpers <= allowed, src.name  # RV32: only compiler-rt helpers the runtime carries
        defined |= {s.name for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert len(wanted) >= 13 and wanted <= defined

