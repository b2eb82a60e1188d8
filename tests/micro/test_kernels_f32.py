"""The float32 C kernels (family ``f32``) against micronn's Python kernels, byte for byte.

On the host, operator by operator over the interpreter's own arena (``check_ops`` of ``test_kernels``): the two
float models (hello_world_float, float_cnn) and single-op models for the edge cases they do not reach (padding,
strides, dilations, groups, depth multipliers, activations, missing biases, batches, non-finite and subnormal
values). The C expf is checked on its own against C's expf. Then each model whole on the
emulated Cortex-M4 (soft-float), and every f32 kernel cross-compiled as freestanding C.
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
from test_kernels import Host, check_ops, out_size
from test_kernels import lib as lib  # noqa: F401  (the fixture: every kernel in one host library)

import micronn
from micronn.micro import lower, lower_f32
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

HELLO = Path(micronn.__file__).parent / "models" / "hello_world_float.tflite"  # the same bytes as shared/models'
FLOAT_CNN = Path(__file__).parents[1] / "models" / "float_cnn.tflite"
MODELS = {"hello_world_float": HELLO, "float_cnn": FLOAT_CNN}
SYMBOLS = set(re.findall(r'"(mn_\w+)"', inspect.getsource(lower_f32)))  # every kernel the family's lowerings emit


def symbols(tasks: list[lower.Task]) -> set[str]:
    return {t.symbol for t in tasks}


# ---- the real models ----------------------------------------------------------------------------------------------


def test_models_lower_completely() -> None:
    """Both float models lower without UnsupportedError, every float op to an f32 kernel (RESHAPE to mn_copy)."""
    hello = lower.lower_model(micronn.Interpreter(MODELS["hello_world_float"]))
    assert [t.symbol for t in hello] == ["mn_fully_connected_f32"] * 3
    cnn = lower.lower_model(micronn.Interpreter(MODELS["float_cnn"]))
    assert [t.symbol for t in cnn] == ["mn_conv_2d_f32", "mn_max_pool_2d_f32", "mn_depthwise_conv_2d_f32",
                                       "mn_conv_2d_f32", "mn_average_pool_2d_f32", "mn_copy",
                                       "mn_fully_connected_f32", "mn_fully_connected_f32", "mn_softmax_f32"]


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_ops(lib: ctypes.CDLL, name: str, planner: str) -> None:
    """Each operator of the model, with the streaming plan and with TFLM's."""
    it = micronn.Interpreter(MODELS[name], planner=planner)
    for seed in (1, 2, 3):
        assert check_ops(lib, it, random_inputs(it.model, seed=seed)) == len(it._nodes)


def test_float_cnn_wide_inputs(lib: ctypes.CDLL) -> None:
    """Inputs 30 times wider than random_inputs' [-1, 1): larger logits, so the softmax's exps reach far below 1."""
    it = micronn.Interpreter(MODELS["float_cnn"])
    for seed in (4, 5):
        check_ops(lib, it, [x * np.float32(30) for x in random_inputs(it.model, seed=seed)])


def test_streamed_outputs_are_staged() -> None:
    """float_cnn's default plan streams some windowed outputs over their inputs, so those tasks stage their pixels;
    TFLM's plan never overlaps them."""
    windowed = {"mn_conv_2d_f32", "mn_depthwise_conv_2d_f32", "mn_average_pool_2d_f32", "mn_max_pool_2d_f32"}
    stages = {planner: [t.args[-1] for t in lower.lower_model(micronn.Interpreter(MODELS["float_cnn"],
                                                                                    planner=planner))
                        if t.symbol in windowed] for planner in ("optimal", "tflm")}
    assert sum(stages["optimal"]) > 0 and sum(stages["tflm"]) == 0


# ---- single-op models: the edge cases the two models do not reach -----------------------------------------------


def conv(*, n=1, h=7, w=6, cin=3, cout=4, fh=3, fw=2, stride=(1, 1), dil=(1, 1), pad=0, act=0, bias=True, groups=1,
         depthwise=False, mult=1, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    cout = cin * mult if depthwise else cout
    oh, ow = out_size(pad, h, fh, stride[0], dil[0]), out_size(pad, w, fw, stride[1], dil[1])
    shape = (1, fh, fw, cout) if depthwise else (cout, fh, fw, cin // groups)
    wt = T(shape, "float32", data=rng.standard_normal(shape).astype(np.float32))
    b = T((cout,), "float32", data=rng.standard_normal(cout).astype(np.float32)) if bias else None
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    extra = {"depth_multiplier": mult} if depthwise else {}
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act, **extra)
    return op_model(op, [T((n, h, w, cin), "float32"), wt, b], [T((n, oh, ow, cout), "float32")], opts)


def fully_connected(*, batches=1, depth=10, units=5, bias=True, act=0, constant=True, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((units, depth)).astype(np.float32) if constant else None
    b = T((units,), "float32", data=rng.standard_normal(units).astype(np.float32)) if bias else None
    return op_model("FULLY_CONNECTED", [T((batches, depth), "float32"), T((units, depth), "float32", data=data), b],
                    [T((batches, units), "float32")], schema.options("FULLY_CONNECTED", fused_activation_function=act))


def pool(op: str, *, n=1, h=7, w=6, c=3, fh=3, fw=2, stride=(2, 2), pad=0, act=0) -> bytes:
    oh, ow = out_size(pad, h, fh, stride[0]), out_size(pad, w, fw, stride[1])
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], filter_height=fh, filter_width=fw,
                          fused_activation_function=act)
    return op_model(op, [T((n, h, w, c), "float32")], [T((n, oh, ow, c), "float32")], opts)


def softmax(shape=(3, 10), beta=1.0) -> bytes:
    return op_model("SOFTMAX", [T(shape, "float32")], [T(shape, "float32")], {"beta": beta})


CASES = {
    "conv": conv(), "conv_same": conv(pad=0, h=6, w=7), "conv_valid": conv(pad=1),
    "conv_stride": conv(stride=(2, 3)), "conv_dilation": conv(dil=(2, 3), h=9, w=10),
    "conv_relu": conv(act=1), "conv_relu6": conv(act=3), "conv_n1_1": conv(act=2), "conv_no_bias": conv(bias=False),
    "conv_batch": conv(n=2, pad=1, h=5, w=4), "conv_1x1": conv(fh=1, fw=1, cin=8, cout=7),
    "conv_grouped": conv(cin=4, cout=6, groups=2, stride=(2, 1)), "conv_odd": conv(cout=5, cin=5, fh=3, fw=3),
    "conv_big_filter": conv(h=5, w=4, fh=7, fw=6, cin=2, cout=3),  # every window cut by the padding on all sides
    "dw": conv(depthwise=True), "dw_mult": conv(depthwise=True, mult=3, cin=2),
    "dw_valid": conv(depthwise=True, pad=1), "dw_stride_dil": conv(depthwise=True, stride=(2, 1), dil=(1, 2), h=9,
                                                                   w=8, act=1),
    "dw_batch": conv(depthwise=True, n=2, bias=False), "dw_3x3_relu6": conv(depthwise=True, cin=5, fh=3, fw=3, act=3),
    "dw_mult_n1_1": conv(depthwise=True, mult=2, cin=3, act=2, stride=(2, 2)),
    "fc": fully_connected(), "fc_batches": fully_connected(units=7, batches=3),
    "fc_no_bias_relu": fully_connected(bias=False, act=1), "fc_one_unit": fully_connected(units=1),
    "fc_relu6": fully_connected(act=3, depth=33), "fc_n1_1": fully_connected(act=2, batches=2),
    "fc_long": fully_connected(depth=700, units=3), "fc_runtime_weights": fully_connected(constant=False, batches=2),
    "avg": pool("AVERAGE_POOL_2D"), "avg_valid": pool("AVERAGE_POOL_2D", pad=1, act=1),
    "avg_stride1": pool("AVERAGE_POOL_2D", stride=(1, 1), n=2, fh=2, fw=3),
    "avg_global": pool("AVERAGE_POOL_2D", h=25, w=5, c=4, fh=25, fw=5, pad=1, stride=(25, 5)),
    "avg_relu6": pool("AVERAGE_POOL_2D", act=3, fh=3, fw=3),
    "max": pool("MAX_POOL_2D"), "max_valid": pool("MAX_POOL_2D", pad=1, act=3), "max_1": pool("MAX_POOL_2D", fh=1),
    "max_n1_1": pool("MAX_POOL_2D", act=2, n=2, stride=(1, 2)),
    "softmax": softmax(), "softmax_beta": softmax(beta=0.4), "softmax_3d": softmax((2, 2, 9)),
    "softmax_one": softmax((1, 1)), "softmax_long": softmax((1, 300), beta=7.0),
    "softmax_negative_beta": softmax((4, 6), beta=-2.5),
    "exp": op_model("EXP", [T((5, 7), "float32")], [T((5, 7), "float32")]),
}


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(CASES[case], planner=planner)
    tasks = lower.lower_model(it)
    assert symbols(tasks) <= SYMBOLS
    for seed in (0, 1):
        check_ops(lib, it, random_inputs(it.model, seed=seed))


def test_cases_reach_each_kernel() -> None:
    assert set().union(*(symbols(lower.lower_model(micronn.Interpreter(m))) for m in CASES.values())) == SYMBOLS


def special_values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values of every magnitude with infinities, signed zeros, subnormals and FLT_MAX mixed in."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-140, 120, shape))).astype(np.float32)
    specials = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e-39, np.finfo(np.float32).max,
                         np.finfo(np.float32).min, 88.72283, 88.72284, -103.97, -87.5], np.float32)
    flat = x.reshape(-1)
    picks = rng.random(flat.size) < 0.3
    flat[picks] = rng.choice(specials, int(picks.sum()))
    return x


@pytest.mark.parametrize("case", ["conv_valid", "conv_no_bias", "dw_mult", "fc_batches", "fc_runtime_weights",
                                  "avg_valid", "max_valid", "softmax", "softmax_negative_beta", "exp"])
def test_special_values(lib: ctypes.CDLL, case: str) -> None:
    """Overflow to infinity, inf - inf NaNs, subnormal products and signed zeros: the same bits as the reference
    wherever the inputs hold no NaN (see test_nan_inputs)."""
    it = micronn.Interpreter(CASES[case])
    for seed in (0, 1, 2):
        check_ops(lib, it, [special_values(x.shape, seed) for x in random_inputs(it.model)])


@pytest.mark.parametrize("case", ["max_valid", "softmax", "exp"])
def test_nan_inputs(lib: ctypes.CDLL, case: str) -> None:
    """NaN inputs where each step has one NaN operand: max pooling and softmax's maximum skip them, exp returns
    them quieted. (Which of two NaNs an addition keeps is up to the compiler's operand order, and a NaN that
    inf - inf creates is the FPU's default NaN, whose sign differs between x86 and Arm's soft-float: not checked.)"""
    it = micronn.Interpreter(CASES[case])
    for seed in (0, 1):
        x = random_inputs(it.model, seed=seed)[0]
        rng = np.random.default_rng(seed)
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.2] = np.float32(np.nan)
        if case == "softmax":  # one NaN per row: the maximum and the exps see it, the sum becomes NaN
            flat[...] = np.where(np.isnan(flat), 0, flat)
            x.reshape(x.shape[0], -1)[:, 3] = np.nan
        check_ops(lib, it, [x])


# ---- expf -----------------------------------------------------------------------------------------------------------


def test_expf_is_the_c_librarys(lib: ctypes.CDLL) -> None:
    """The EXP kernel (mn_libm.h's expf) on a million inputs over expf's whole finite range and a dense grid around
    0 gives the reference's bits (C's expf, which is not correctly rounded: a correctly rounded exp differs from it
    on about 1 in 13,000 floats in [-104, 100])."""
    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.uniform(-104, 89, 600_000), rng.uniform(-1, 1, 200_000),
                         rng.uniform(-1e-3, 1e-3, 200_000)]).astype(np.float32)
    model = op_model("EXP", [T((xs.size,), "float32")], [T((xs.size,), "float32")])
    it = micronn.Interpreter(model)
    it.set_input(xs, 0)
    before = it._arena.buf.copy()  # the output may lie over the input: run both from the same arena
    it.invoke()
    want = it.get_output(0).copy()
    it._arena.buf[...] = before
    Host(lib, it).run(lower.lower_model(it))
    got = it.get_output(0).copy()
    differ = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
    assert len(differ) == 0, f"{len(differ)} of {xs.size} differ, e.g. at x = {xs[differ[:3]]}"


def test_expf_limits(lib: ctypes.CDLL) -> None:
    """Overflow, underflow into the subnormals and to zero, infinities and NaN: C's expf's bits."""
    f = np.float32
    edges = [f(88.72283), f(88.72284), f(89), f(100), f(101), f(1e30), f(np.inf), f(-87.33654), f(-87.4), f(-100),
             f(-103.27893), f(-103.97207), f(-103.97208), f(-104), f(-109.9), f(-110), f(-111), f(-1e30), f(-np.inf),
             f(0), f(-0.0), f(1e-45), f(-1e-45), f(np.nan)]
    xs = np.array(edges, np.float32)
    xs = np.concatenate([xs, np.nextafter(xs, f(np.inf)), np.nextafter(xs, f(-np.inf))]).astype(np.float32)
    model = op_model("EXP", [T((xs.size,), "float32")], [T((xs.size,), "float32")])
    it = micronn.Interpreter(model)
    check_ops(lib, it, [xs])


# ---- on a device --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_on_cortex_m4(name: str) -> None:
    """The whole model on the emulated Cortex-M4 (soft-float: the compiler's IEEE single-precision helpers) gives
    the interpreter's bytes."""
    pytest.importorskip("unicorn", reason="the Cortex-M4 emulator needs unicorn (pip install unicorn capstone)")
    pytest.importorskip("ziglang", reason="cross-compiling the kernels needs ziglang")
    path = MODELS[name]
    it = micronn.Interpreter(path)
    inputs = random_inputs(it.model, seed=5)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    want = [it.get_output(i).copy() for i in range(len(it.model.main.outputs))]
    got = micronn.micro.run_model(path, "cortex-m4", inputs)["outputs"]
    assert len(got) == len(want) == 1
    assert got[0].dtype == np.float32 and got[0].tobytes() == want[0].tobytes()


# ---- freestanding on Cortex-M0 and M4 ----------------------------------------------------------------------------


def f32_sources() -> list[Path]:
    return [p for p in lower.sources() if p.stem.endswith("_f32")]


@pytest.mark.parametrize("cpu", ["cortex_m0", "cortex_m4"])
def test_kernels_cross_compile_freestanding(tmp_path: Path, cpu: str) -> None:
    """Each f32 kernel builds as freestanding C99 for a Cortex-M0 and M4, defines the symbols the lowerings emit and
    needs nothing but memcpy, memset and the helpers the device runtime links in (soft-float, division)."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    from micronn.micro.toolchain import COMMON, LIBCALLS

    provided = {"memcpy", "memset", "__aeabi_idiv", "__aeabi_uidiv", "__aeabi_idivmod", "__aeabi_uidivmod",
                *LIBCALLS}
    defined: set[str] = set()
    for src in f32_sources():
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "thumb-freestanding-eabi", f"-mcpu={cpu}",
                        "-O2", "-ffreestanding", "-fno-builtin", "-std=c99", *COMMON, "-Wextra", "-Werror",
                        "-Wno-vla", f"-I{lower.include_dir()}", "-c", str(src), "-o", str(obj)],
                       check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            syms = list(elffile.ELFFile(f).get_section_by_name(".symtab").iter_symbols())
        undefined = {s.name for s in syms if s.name and s["st_shndx"] == "SHN_UNDEF"}
        assert undefined <= provided, (src.name, undefined - provided)
        defined |= {s.name for s in syms if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert SYMBOLS <= defined


def test_no_fused_multiply_add(tmp_path: Path) -> None:
    """Built where clang does contract by default (AArch64, whose FPU has FMADD: the Cortex-M targets are
    soft-float and never can), the kernels hold no fused multiply-add, each product is rounded on its own; a control
    function written as one expression ``a * b + c`` shows that contraction happens and is seen."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    capstone = pytest.importorskip("capstone")
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    fused = {"fmadd", "fmsub", "fnmadd", "fnmsub", "fmla", "fmls"}
    control = tmp_path / "control.c"
    control.write_text("float control(float a, float b, float c) { return a * b + c; }\n")

    def mnemonics(src: Path) -> set[str]:
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-freestanding-none", "-O3",
                        "-ffreestanding", "-fno-builtin", "-std=c99", "-Wno-vla", f"-I{lower.include_dir()}", "-c",
                        str(src), "-o", str(obj)], check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            return {i.mnemonic for sec in elffile.ELFFile(f).iter_sections()
                    if sec.name.startswith(".text") and sec.data_size for i in md.disasm(sec.data(), 0)}

    assert mnemonics(control) & fused
    multiplies = set()
    for src in f32_sources():
        found = mnemonics(src)
        assert not found & fused, src.name
        multiplies |= found & {"fmul"}
    assert multiplies  # the products are there, rounded apart
