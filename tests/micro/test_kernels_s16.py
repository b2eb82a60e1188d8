"""The int16x8 C kernels (family ``s16``) against micronn's Python kernels, byte for byte.

On the host, operator by operator over the interpreter's own arena (``check_ops`` of ``test_kernels``): the
int16x8 DS-CNN keyword spotter and single-op models for the edge cases it does not reach (padding, strides,
dilations, groups, activations, int32 and int64 biases, sums beyond int32, extreme multipliers, softmax sums that
wrap). Then the whole model on the emulated Cortex-M4, and every kernel cross-compiled as freestanding C.
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
from test_kernels import check_ops, host_library, out_size

import micronn
from micronn.errors import UnsupportedError
from micronn.micro import lower, lower_s16
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

MODELS = Path(__file__).parents[1] / "models"
KWS = MODELS / "kws_ds_cnn_int16x8.tflite"
SYMBOLS = set(re.findall(r'"(mn_\w+)"', inspect.getsource(lower_s16)))  # every kernel the family's lowerings emit


def sources() -> list[Path]:
    return sorted(lower.include_dir().glob("*_s16.c"))


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    """The family's kernels in one host library (gcc -Wall -Wextra -Werror), cached by the hash of the sources.

    Only this family's files: the other families' kernels, written beside them, do not enter these tests."""
    return ctypes.CDLL(str(host_library("kernels-s16", sources(), [lower.include_dir() / "mn_kernels.h"])))


def symbols(tasks: list[lower.Task]) -> set[str]:
    return {t.symbol for t in tasks}


# ---- the real model -----------------------------------------------------------------------------------------------


def test_kws_lowers_completely() -> None:
    """Every operator of the int16x8 DS-CNN now lowers (it raised UnsupportedError for all six kinds of op)."""
    tasks = lower.lower_model(micronn.Interpreter(KWS))
    assert len(tasks) == 12
    assert symbols(tasks) == SYMBOLS - {"mn_max_pool_2d_s16"}


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
def test_kws_ops(lib: ctypes.CDLL, planner: str) -> None:
    """Each operator of the DS-CNN, with the streaming plan and with TFLM's."""
    it = micronn.Interpreter(KWS, planner=planner)
    for seed in (1, 2):
        assert check_ops(lib, it, random_inputs(it.model, seed=seed)) == 12


def test_kws_ops_on_a_speech_like_input(lib: ctypes.CDLL) -> None:
    """Random full-range inputs saturate most activations; a smooth, small input keeps them in range."""
    it = micronn.Interpreter(KWS)
    t = np.arange(49 * 10).reshape(1, 49, 10, 1)
    check_ops(lib, it, [(3000 * np.sin(t / 7.0) + 500 * np.cos(t / 3.0)).astype(np.int16)])


# ---- single-op models ---------------------------------------------------------------------------------------------


def conv(*, n=1, h=7, w=6, cin=3, cout=4, fh=3, fw=2, stride=(1, 1), dil=(1, 1), pad=0, act=0, per_channel=True,
         bias="int64", groups=1, in_zp=0, depthwise=False, mult=1, scales=(0.002, 0.02), in_scale=0.002,
         out_scale=0.01, wmax=127, positive=False, bias_max=3_000_000, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    cout = cin * mult if depthwise else cout
    oh, ow = out_size(pad, h, fh, stride[0], dil[0]), out_size(pad, w, fw, stride[1], dil[1])
    shape = (1, fh, fw, cout) if depthwise else (cout, fh, fw, cin // groups)
    w_scales = list(rng.uniform(*scales, cout)) if per_channel else scales[0]
    wt = T(shape, "int8", w_scales, 0, axis=3 if depthwise else 0,
           data=rng.integers(0 if positive else -wmax, wmax + 1, shape))
    b = T((cout,), bias, data=rng.integers(-bias_max, bias_max, cout, dtype=np.int64)) if bias else None
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    extra = {"depth_multiplier": mult} if depthwise else {}
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dil[0],
                          dilation_w_factor=dil[1], fused_activation_function=act, **extra)
    return op_model(op, [T((n, h, w, cin), "int16", in_scale, in_zp), wt, b],
                    [T((n, oh, ow, cout), "int16", out_scale, 0)], opts)


def fully_connected(*, batches=1, depth=10, units=5, per_channel=False, bias=True, act=0, in_zp=0, out_zp=0,
                    out_scale=0.01, wmax=127, positive=False, bias_max=300_000, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.02, units)) if per_channel else 0.01
    wt = T((units, depth), "int8", scales, 0, data=rng.integers(0 if positive else -wmax, wmax + 1, (units, depth)))
    b = T((units,), "int64", data=rng.integers(-bias_max, bias_max, units, dtype=np.int64)) if bias else None
    return op_model("FULLY_CONNECTED", [T((batches, depth), "int16", 0.002, in_zp), wt, b],
                    [T((batches, units), "int16", out_scale, out_zp)],
                    schema.options("FULLY_CONNECTED", fused_activation_function=act))


def pool(op: str, *, n=1, h=7, w=6, c=3, fh=3, fw=2, stride=(2, 2), pad=0, act=0) -> bytes:
    oh, ow = out_size(pad, h, fh, stride[0]), out_size(pad, w, fw, stride[1])
    opts = schema.options(op, padding=pad, stride_h=stride[0], stride_w=stride[1], filter_height=fh, filter_width=fw,
                          fused_activation_function=act)
    return op_model(op, [T((n, h, w, c), "int16", 0.001, 0)], [T((n, oh, ow, c), "int16", 0.001, 0)], opts)


def softmax(shape=(3, 10), scale=0.001, beta=1.0) -> bytes:
    return op_model("SOFTMAX", [T(shape, "int16", scale, 0)], [T(shape, "int16", 1 / 32768, 0)], {"beta": beta})


CASES = {
    "conv": conv(), "conv_valid": conv(pad=1), "conv_stride": conv(stride=(2, 3)),
    "conv_dilation": conv(dil=(2, 3), h=9, w=10), "conv_relu": conv(act=1), "conv_relu6": conv(act=3, out_scale=1e-3),
    "conv_n1_1": conv(act=2, out_scale=1e-4), "conv_no_bias": conv(bias=None),
    "conv_per_tensor": conv(per_channel=False),
    "conv_batch": conv(n=2, pad=1, h=5, w=4), "conv_1x1": conv(fh=1, fw=1, cin=8, cout=7),
    "conv_grouped": conv(cin=4, cout=6, groups=2, stride=(2, 1)),
    "conv_grouped_5": conv(cin=4, cout=10, groups=2), "conv_odd": conv(cout=5, cin=5, fh=3, fw=3),
    "conv_in_zp": conv(in_zp=77),  # the 16x8 kernels ignore the zero points
    "conv_bias32": conv(bias="int32"), "conv_bias32_no_wrap": conv(bias="int32", pad=1, per_channel=False),
    "conv_bias32_wrap": conv(bias="int32", cin=64, cout=3, h=7, w=6, fh=5, fw=5, bias_max=2**31 - 1, out_scale=4.0,
                             positive=True),  # see test_sums_beyond_int32
    "conv_wide": conv(cin=64, cout=3, h=6, w=6, fh=5, fw=5, out_scale=4.0, positive=True),  # int64 sums
    "conv_wide_same": conv(cin=40, cout=2, h=9, w=7, fh=7, fw=6, stride=(2, 2), out_scale=1.0),
    "conv_huge_bias": conv(bias_max=2**62),  # acc * multiplier wraps int64 as the reference does
    "conv_big_multiplier": conv(in_scale=1.0, scales=(1.0, 1.5), out_scale=2**-17),  # shifts past Q15's 15
    "conv_tiny_multiplier": conv(in_scale=2**-20, scales=(2**-10, 2**-9), out_scale=1.0, bias_max=2**40),
    "dw": conv(depthwise=True), "dw_mult": conv(depthwise=True, mult=3, cin=2),
    "dw_valid": conv(depthwise=True, pad=1), "dw_stride_dil": conv(depthwise=True, stride=(2, 1), dil=(1, 2), h=9,
                                                                   w=8, act=1),
    "dw_batch": conv(depthwise=True, n=2, per_channel=False, bias=None), "dw_3x3": conv(depthwise=True, cin=5, fh=3,
                                                                                        fw=3, in_zp=-9),
    "dw_wide": conv(depthwise=True, cin=2, h=33, w=34, fh=33, fw=33, pad=1, out_scale=4.0, positive=True),
    "dw_big_multiplier": conv(depthwise=True, in_scale=1.0, scales=(1.0, 1.5), out_scale=2**-17),
    "fc": fully_connected(), "fc_per_channel": fully_connected(per_channel=True, units=7, batches=3),
    "fc_no_bias_relu": fully_connected(bias=False, act=1), "fc_one_unit": fully_connected(units=1),
    "fc_zero_points": fully_connected(in_zp=-300, out_zp=250, batches=2),
    "fc_relu6": fully_connected(act=3, out_scale=1e-3),
    "fc_wide": fully_connected(depth=1200, units=3, out_scale=4.0, positive=True),
    "fc_wide_zp": fully_connected(depth=1300, units=2, in_zp=-1234, out_scale=4.0, per_channel=True, positive=True),
    "fc_huge_bias": fully_connected(bias_max=2**62, in_zp=5),
    "avg": pool("AVERAGE_POOL_2D"), "avg_valid": pool("AVERAGE_POOL_2D", pad=1, act=1),
    "avg_stride1": pool("AVERAGE_POOL_2D", stride=(1, 1), n=2, fh=2, fw=3),
    "avg_global": pool("AVERAGE_POOL_2D", h=25, w=5, c=4, fh=25, fw=5, pad=1, stride=(25, 5)),
    "avg_relu6": pool("AVERAGE_POOL_2D", act=3, fh=3, fw=3),
    "max": pool("MAX_POOL_2D"), "max_valid": pool("MAX_POOL_2D", pad=1, act=3), "max_1": pool("MAX_POOL_2D", fh=1),
    "max_n1_1": pool("MAX_POOL_2D", act=2, n=2, stride=(1, 2)),
    "softmax": softmax(), "softmax_beta": softmax(beta=0.4, scale=0.01), "softmax_3d": softmax((2, 2, 9)),
    "softmax_one": softmax((1, 1)), "softmax_long": softmax((1, 300), scale=0.0002),
    "softmax_coarse": softmax((4, 12), scale=0.5),  # differences beyond -10: the table's left end
    "softmax_fine": softmax((2, 7), scale=1e-6, beta=3.0),
    # differences spread over the whole exp table's domain [-10, 0]
    "softmax_domain": softmax((8, 40), scale=1.5e-4), "softmax_domain_beta": softmax((5, 33), scale=3e-4, beta=0.5),
}


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(CASES[case], planner=planner)
    tasks = lower.lower_model(it)
    assert symbols(tasks) <= SYMBOLS
    for seed in (0, 1):
        check_ops(lib, it, random_inputs(it.model, seed=seed))


def test_edge_paths_are_reached() -> None:
    """The cases above reach each path of the kernels: int64 sums, the int32 bias's 32-bit requantization, Q15
    right shifts that the reference takes out of range (shift >= 15), softmax scalings left and right."""
    def args(case: str) -> list:
        return lower.lower_model(micronn.Interpreter(CASES[case]))[0].args

    assert args("conv")[-3:-1] == [0, 0] and args("conv_wide")[-3:-1] == [0, 1]
    assert args("conv_bias32_wrap")[-3] == 1 and args("dw_wide")[-2] == 1 and args("fc_wide")[-1] == 1
    assert (args("conv_big_multiplier")[5].data <= 0).any()  # the total right shift
    assert args("softmax_coarse")[-1] >= 0 > args("softmax_fine")[-1]


@pytest.mark.parametrize("value", [32767, -32768])
@pytest.mark.parametrize("case", ["conv_bias32_wrap", "conv_wide", "dw_wide", "fc_wide", "fc_wide_zp"])
def test_sums_beyond_int32(lib: ctypes.CDLL, case: str, value: int) -> None:
    """Extreme inputs against all-positive weights: the window sums leave int32. They must then be exact
    (int64 sums) or, with an int32 bias, wrap as TFLM's int32 accumulator does."""
    it = micronn.Interpreter(CASES[case])
    check_ops(lib, it, [np.full(x.shape, value, np.int16) for x in random_inputs(it.model)])


@pytest.mark.parametrize("value", [32767, -32768])
def test_average_pool_beyond_int32(lib: ctypes.CDLL, value: int) -> None:
    """A 70,000-tap window of extreme values sums beyond int32: the int64 path."""
    it = micronn.Interpreter(pool("AVERAGE_POOL_2D", h=1, w=70_000, c=2, fh=1, fw=70_000, pad=1, stride=(1, 1)))
    check_ops(lib, it, [np.full((1, 1, 70_000, 2), value, np.int16)])


def test_softmax_extreme_rows(lib: ctypes.CDLL) -> None:
    """Rows of one value (the minimum, the maximum), all negative, extremes alternating, one high value."""
    it = micronn.Interpreter(softmax((5, 6), scale=1.5e-4))
    rows = np.array([[-32768] * 6, [32767] * 6, [-5, -900, -32768, -1, -17000, -2],
                     [32767, -32768] * 3, [0, 0, 0, 0, 0, 12000]], np.int16)
    check_ops(lib, it, [rows])


def test_softmax_sum_wraps(lib: ctypes.CDLL) -> None:
    """70,000 equal values: the int32 sum of exps wraps negative, and the reference's out-of-range shifts follow."""
    it = micronn.Interpreter(softmax((1, 70_000)))
    check_ops(lib, it, [np.zeros((1, 70_000), np.int16)])
    check_ops(lib, it, random_inputs(it.model, seed=3))


def test_non_constant_weights_stay_unsupported() -> None:
    """Weights computed at run time would need the folding done here on the device: refused, not miscomputed."""
    model = op_model("FULLY_CONNECTED", [T((1, 4), "int16", 0.01, 0), T((3, 4), "int8", 0.01, 0)],
                     [T((1, 3), "int16", 0.1, 0)])
    with pytest.raises(UnsupportedError, match="FULLY_CONNECTED"):
        lower.lower_model(micronn.Interpreter(model))


# ---- on a device --------------------------------------------------------------------------------------------------


def test_kws_on_cortex_m4() -> None:
    """The whole DS-CNN on the emulated Cortex-M4 (DSP build of every kernel) gives the interpreter's bytes."""
    pytest.importorskip("unicorn", reason="the Cortex-M4 emulator needs unicorn (pip install unicorn capstone)")
    pytest.importorskip("ziglang", reason="cross-compiling the kernels needs ziglang")
    it = micronn.Interpreter(KWS)
    inputs = random_inputs(it.model, seed=5)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    want = [it.get_output(i).copy() for i in range(len(it.model.main.outputs))]
    got = micronn.micro.run_model(KWS, "cortex-m4", inputs)["outputs"]
    assert len(got) == len(want) == 1
    assert got[0].dtype == np.int16 and got[0].tobytes() == want[0].tobytes()


DEVICE_CASES = ["conv_bias32_wrap", "conv_wide", "conv_big_multiplier", "conv_huge_bias", "conv_grouped_5", "dw_mult",
                "dw_wide", "fc_wide_zp", "fc_huge_bias", "avg_valid", "max_valid", "softmax_domain", "softmax_coarse"]


def test_edge_cases_on_cortex_m4() -> None:
    """The output stages the DS-CNN does not reach (int32 biases that wrap, int64 sums, out-of-range shifts, int64
    wrap-around), compiled for the M4, on random and extreme inputs."""
    pytest.importorskip("unicorn", reason="the Cortex-M4 emulator needs unicorn (pip install unicorn capstone)")
    pytest.importorskip("ziglang", reason="cross-compiling the kernels needs ziglang")
    for case in DEVICE_CASES:
        with micronn.micro.Session("cortex-m4") as sess:  # each model loads the kernels into the session again
            it = micronn.Interpreter(CASES[case])
            dm = micronn.micro.DeviceModel(it, sess)
            x = random_inputs(it.model, seed=4)[0]
            for inputs in ([x], [np.full(x.shape, 32767, np.int16)], [np.full(x.shape, -32768, np.int16)]):
                it.set_input(inputs[0], 0)
                it.invoke()
                assert dm.invoke(inputs)[0].tobytes() == it.get_output(0).tobytes(), case


# ---- freestanding on Cortex-M0 and M4 ----------------------------------------------------------------------------


@pytest.mark.parametrize("cpu", ["cortex_m0", "cortex_m4"])
def test_kernels_cross_compile_freestanding(tmp_path: Path, cpu: str) -> None:
    """Each s16 kernel builds as freestanding C99 for a Cortex-M0 (no 64-bit multiply) and M4, defines the symbols
    the lowerings emit and needs nothing but memcpy, memset and the ARM EABI helpers."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    defined: set[str] = set()
    for src in sources():
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "thumb-freestanding-eabi", f"-mcpu={cpu}",
                        "-O2", "-ffreestanding", "-fno-builtin", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wno-vla",
                        f"-I{lower.include_dir()}", "-c", str(src), "-o", str(obj)],
                       check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            syms = list(elffile.ELFFile(f).get_section_by_name(".symtab").iter_symbols())
        undefined = {s.name for s in syms if s.name and s["st_shndx"] == "SHN_UNDEF"}
        assert not {u for u in undefined if u not in ("memcpy", "memset") and not u.startswith("__aeabi_")}, src.name
        defined |= {s.name for s in syms if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert len(SYMBOLS) == 6 and SYMBOLS <= defined
