"""The UNIDIRECTIONAL_SEQUENCE_LSTM C kernels (family ``lstm``, int8 and float32) against micronn's Python kernel.

On the host, operator by operator over the interpreter's own arena (``check_ops`` of ``test_kernels``): the three
LSTM models and single-op models for the edge cases they do not reach (batches, time-major layouts, odd sizes, cell
clips, cell scales that change the cell tanh's input scaling, zero points on every tensor, products that shift left
or wrap int32, other cell activations, saturated gates). Each check runs twice: the variable hidden and cell states
the first run leaves (computed in C) feed the second, and both must hold the reference's bytes. The float kernel's
expf and tanhf are checked against the C library the reference calls. Then each model whole on the emulated
Cortex-M4 over two invokes, and the family's kernels cross-compiled as freestanding C.
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
from test_kernels import check_ops, host_library

import micronn
from micronn.errors import UnsupportedError
from micronn.micro import lower, lower_lstm
from micronn.testing import T, op_model, random_inputs

MODELS = {"trained_lstm_int8": Path("/work/shared/models/trained_lstm_int8.tflite"),
          "lstm_int8": Path(__file__).parents[1] / "models" / "lstm_int8.tflite",
          "lstm_float": Path(__file__).parents[1] / "models" / "lstm_float.tflite"}
SYMBOLS = set(re.findall(r'"(mn_\w+)"', inspect.getsource(lower_lstm)))  # every kernel the family's lowerings emit
# the kernels the three models need beside the LSTM's
NEEDED = SYMBOLS | {"mn_copy", "mn_strided_slice", "mn_fully_connected_s8", "mn_softmax_s8", "mn_fully_connected_f32",
                    "mn_softmax_f32"}


def family_sources() -> list[Path]:
    return sorted(lower.include_dir().glob("unidirectional_sequence_lstm*.c"))


def sources() -> list[Path]:
    """The C files defining the kernels in NEEDED (not the whole directory: other families' kernels, written beside
    these, do not enter these tests)."""
    files = [f for f in lower.sources() if any(re.search(rf"\bvoid {s}\(", f.read_text()) for s in NEEDED)]
    assert set(family_sources()) <= set(files)
    return files


def model(name: str) -> Path:
    path = MODELS[name]
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    return path


def build(name: str, files: list[Path], extra: tuple[str, ...] = ()) -> Path:
    """A host shared library of ``files``, cached by the hash of the sources (and of every kernel file the family
    has, which ``files`` may include)."""
    return host_library(name, files, sorted(lower.include_dir().glob("*.h")) + family_sources(), extra)


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    return ctypes.CDLL(str(build("kernels-lstm", sources())))


def symbols(tasks: list[lower.Task]) -> list[str]:
    return [t.symbol for t in tasks]


# ---- the real models ----------------------------------------------------------------------------------------------


def test_models_lower_completely() -> None:
    """The three models lower without UnsupportedError (each raised it for its LSTM), one task per operator."""
    assert symbols(lower.lower_model(micronn.Interpreter(model("trained_lstm_int8")))) == [
        "mn_unidirectional_sequence_lstm_s8", "mn_copy", "mn_fully_connected_s8", "mn_softmax_s8"]
    assert symbols(lower.lower_model(micronn.Interpreter(model("lstm_int8")))) == [
        "mn_unidirectional_sequence_lstm_s8", "mn_strided_slice", "mn_fully_connected_s8", "mn_softmax_s8"]
    assert symbols(lower.lower_model(micronn.Interpreter(model("lstm_float")))) == [
        "mn_unidirectional_sequence_lstm_f32", "mn_strided_slice", "mn_fully_connected_f32", "mn_softmax_f32"]


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_ops(lib: ctypes.CDLL, name: str, planner: str) -> None:
    """Each operator of the model, with the streaming plan and with TFLM's, over two invokes (the second starts
    from the states the kernel left)."""
    it = micronn.Interpreter(model(name), planner=planner)
    for seed in (1, 2):
        assert check_ops(lib, it, random_inputs(it.model, seed=seed)) == 4


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_ops_on_smooth_inputs(lib: ctypes.CDLL, name: str) -> None:
    """Random full-range inputs drive many gates into saturation; a smooth image-like input keeps them inside."""
    it = micronn.Interpreter(model(name))
    inp = it.model.main.tensors[it.model.main.inputs[0]]
    t = np.arange(28 * 28).reshape(1, 28, 28)
    wave = 0.5 + 0.4 * np.sin(t / 11.0) * np.cos(t / 37.0)
    if inp.dtype == np.float32:
        x = wave.astype(np.float32)
    else:
        x = np.clip(np.round(wave / inp.scale + inp.zero_point), -128, 127).astype(np.int8)
    check_ops(lib, it, [x])
    check_ops(lib, it, [x[:, ::-1].copy()])


# ---- single-op models ---------------------------------------------------------------------------------------------

INPUT_WEIGHTS, RECURRENT_WEIGHTS, BIASES = range(1, 5), range(5, 9), range(12, 16)
OUTPUT_STATE, CELL_STATE = 18, 19


def lstm(kind: str = "int8", *, batch=1, steps=3, n_input=5, units=4, time_major=False, cell_clip=0.0,
         cell_power=-12.0, input_zp=-3, hidden_zp=2, weight_zp=0, act=4, weight_scale=1.0, in_scale=1 / 127,
         hidden_scale=1 / 127, bias_scale=0.5, seed=0) -> bytes:
    """A standard LSTM (all gates, no peephole, projection or layer norm) with gates of order ``weight_scale``;
    the cell state's scale is ``2^cell_power``."""
    rng = np.random.default_rng(seed)
    in_shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    ins: list[T | None] = [None] * 24

    def weights(i: int) -> np.ndarray:
        depth = n_input if i in INPUT_WEIGHTS else units
        return rng.normal(0, weight_scale / np.sqrt(depth), (units, depth))

    if kind == "float32":
        ins[0] = T(in_shape, "float32")
        for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS):
            ins[i] = T((units, n_input if i in INPUT_WEIGHTS else units), "float32", data=weights(i))
        for i in BIASES:
            ins[i] = T((units,), "float32", data=rng.normal(0, bias_scale, units))
        ins[OUTPUT_STATE] = T((batch, units), "float32", variable=True)
        ins[CELL_STATE] = T((batch, units), "float32", variable=True)
        out = T((*in_shape[:2], units), "float32")
    else:
        for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS):
            w = weights(i)
            scale = float(np.abs(w).max() / (127 - abs(weight_zp)))
            ins[i] = T(w.shape, "int8", scale, weight_zp, data=np.round(w / scale) + weight_zp)
        ins[0] = T(in_shape, "int8", in_scale, input_zp)
        for gate, i in enumerate(BIASES):
            s_bias = float(np.float32(in_scale) * np.float32(ins[1 + gate].scale))
            ins[i] = T((units,), "int32", s_bias, 0,
                       data=np.clip(np.round(rng.normal(0, bias_scale, units) / s_bias), -2**31, 2**31 - 1))
        ins[OUTPUT_STATE] = T((batch, units), "int8", hidden_scale, hidden_zp, variable=True)
        ins[CELL_STATE] = T((batch, units), "int16", 2.0**cell_power, 0, variable=True)
        out = T((*in_shape[:2], units), "int8", hidden_scale, hidden_zp)
    options = {"fused_activation_function": act, "cell_clip": cell_clip, "time_major": time_major}
    return op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [out], options)


COMMON = {
    "plain": {}, "batch": {"batch": 3}, "time_major": {"batch": 2, "time_major": True, "steps": 4},
    "odd_sizes": {"n_input": 7, "units": 5, "steps": 5}, "one_step": {"steps": 1, "n_input": 1, "units": 1},
    "wide": {"n_input": 33, "units": 17, "steps": 4, "batch": 2}, "clip": {"cell_clip": 0.7},
    "clip_wide_gates": {"cell_clip": 0.99995, "weight_scale": 10, "steps": 6}, "clip_beyond": {"cell_clip": 20.0,
                                                                                               "weight_scale": 10},
    "strong": {"weight_scale": 30.0, "n_input": 16, "units": 8},
    "act_none": {"act": 0}, "act_relu": {"act": 1},  # any activation but TANH: the cell gate applies none
}
INT8 = {
    **COMMON,
    "cell_2^-11": {"cell_power": -11},  # the cell tanh's input: 3 << 1, no shift
    "cell_2^-13": {"cell_power": -13},  # (3 x + 1) >> 1
    "cell_2^-15": {"cell_power": -15, "weight_scale": 3.0},  # (3 x + 4) >> 3
    "cell_2^-8": {"cell_power": -8},  # 3 << 5
    "cell_not_pot": {"cell_power": -11.7},  # the nearest power of two decides the tanh's scaling
    "zero_points": {"input_zp": -128, "hidden_zp": -128, "weight_zp": 3},
    "zero_points_high": {"input_zp": 127, "hidden_zp": 100, "weight_zp": -5, "batch": 2},
    "left_shifts": {"in_scale": 0.5, "hidden_scale": 0.25, "weight_scale": 3.0},  # products shift left (and wrap)
    "tiny_scales": {"in_scale": 1e-6, "hidden_scale": 1e-7},  # the products vanish: biases alone
    "huge_biases": {"bias_scale": 1e6},  # sums that wrap int32
    "tiny_hidden": {"hidden_scale": 1e-4},  # the hidden state saturates int8
}
FLOAT = {
    **COMMON,
    "saturated_gates": {"weight_scale": 60.0, "bias_scale": 20.0},  # sigmoid's cut-offs, tanhf's |x| >= 22
    "clip_tiny": {"cell_clip": 1e-3, "weight_scale": 5.0},
}


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(INT8))
def test_int8_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(lstm("int8", **INT8[case], seed=len(case)), planner=planner)
    assert symbols(lower.lower_model(it)) == ["mn_unidirectional_sequence_lstm_s8"]
    for seed in (0, 1):
        check_ops(lib, it, random_inputs(it.model, seed=seed))


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(FLOAT))
def test_float_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(lstm("float32", **FLOAT[case], seed=len(case)), planner=planner)
    assert symbols(lower.lower_model(it)) == ["mn_unidirectional_sequence_lstm_f32"]
    for seed in (0, 1):
        check_ops(lib, it, random_inputs(it.model, seed=seed))


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e6, 3e38])
def test_float_extreme_inputs(lib: ctypes.CDLL, scale: float) -> None:
    """Inputs up to FLT_MAX: products and sums overflow to infinity, which the kernel clamps to +-FLT_MAX."""
    it = micronn.Interpreter(lstm("float32", n_input=6, units=5, steps=4, seed=3))
    for seed in (0, 1):
        check_ops(lib, it, [x * np.float32(scale) for x in random_inputs(it.model, seed=seed)])


@pytest.mark.parametrize("value", [-128, 127])
def test_int8_extreme_inputs(lib: ctypes.CDLL, value: int) -> None:
    """Constant extreme inputs with strong weights: every gate saturates, the cell clips."""
    it = micronn.Interpreter(lstm("int8", weight_scale=20.0, cell_clip=2.0, steps=6, seed=4))
    for _ in range(2):
        check_ops(lib, it, [np.full(x.shape, value, np.int8) for x in random_inputs(it.model)])


def test_edge_paths_are_reached() -> None:
    """The cases above reach both cell-tanh scalings (a multiplier with a right shift, 3 << s without), left
    shifts in the gate products, weight zero points and both clip settings."""
    def args(case: str) -> list:
        return lower.lower_model(micronn.Interpreter(lstm("int8", **INT8[case])))[0].args

    assert args("cell_2^-15")[-5:-2] == [3, 4, 3] and args("cell_2^-11")[-5:-2] == [6, 0, 0]
    assert args("plain")[-2:] == [0, 0] and args("clip")[-2] == 1
    quant = args("left_shifts")[12].data.reshape(8, 3)  # (multiplier, shift, weight offset) of the 8 products
    assert (quant[:, 1] > 0).any() and (args("zero_points")[12].data.reshape(8, 3)[:, 2] == -3).all()


def test_int16_lstm_stays_unsupported() -> None:
    """The 16x8 variant has no kernel: it is reported, not miscomputed."""
    ins: list[T | None] = [None] * 24
    ins[0] = T((1, 2, 3), "int16", 1 / 32767, 0)
    for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS):
        ins[i] = T((2, 3 if i in INPUT_WEIGHTS else 2), "int8", 0.01, 0, data=np.ones((2, 3 if i < 5 else 2)))
    for i in BIASES:
        ins[i] = T((2,), "int64", 1e-6, 0, data=[1, 2])
    ins[OUTPUT_STATE] = T((1, 2), "int16", 1 / 32767, 0, variable=True)
    ins[CELL_STATE] = T((1, 2), "int16", 2.0**-12, 0, variable=True)
    m = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [T((1, 2, 2), "int16", 1 / 32767, 0)],
                 {"fused_activation_function": 4})
    with pytest.raises(UnsupportedError, match="UNIDIRECTIONAL_SEQUENCE_LSTM"):
        lower.lower_model(micronn.Interpreter(m))


# ---- expf and tanhf -----------------------------------------------------------------------------------------------

HARNESS = r"""
#include <math.h>
#include "mn_libm.h"

/* Float inputs first, first + step, ... (bit patterns, wrapping): how many give other bits than the C library's
 * expf (fn 0) or tanhf (fn 1); NaNs of either sign count as equal. */
unsigned long mismatches(int fn, uint32_t first, uint32_t step, unsigned long count) {
    unsigned long bad = 0;
    uint32_t u = first;
    for (unsigned long i = 0; i < count; i++, u += step) {
        const float x = mn_libm_float(u);
        const float want = fn ? tanhf(x) : expf(x), got = fn ? mn_libm_tanhf(x) : mn_libm_expf(x);
        if (mn_libm_bits(want) != mn_libm_bits(got) && !(want != want && got != got)) bad++;
    }
    return bad;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    src = tmp_path_factory.mktemp("lstm") / "lstm_harness.c"
    src.write_text(HARNESS)
    so = ctypes.CDLL(str(build("lstm-harness", [src], ("-lm",))))
    so.mismatches.restype = ctypes.c_ulong
    so.mismatches.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_ulong]
    return so


@pytest.mark.parametrize("fn", [0, 1], ids=["expf", "tanhf"])
def test_transcendentals_match_the_c_library(harness: ctypes.CDLL, fn: int) -> None:
    """mn_libm.h's expf and tanhf (the float LSTM, LOGISTIC, TANH, EXP and SOFTMAX kernels use them) give the C
    library's bits (what the Python reference calls), on every 97th
    float bit pattern (44 million, both signs, zeros, subnormals, infinities, NaNs) and densely over the inputs an
    LSTM's gates meet: |x| < 2 (tanhf's expm1f near its reduction boundaries) and [-20, 20] (expf in the sigmoid).
    Checked once on all 2^32 inputs: no float differs."""
    assert harness.mismatches(fn, 0, 97, 2**32 // 97) == 0
    for lo, hi in ((0x00000000, 0x40000000), (0x80000000, 0xC0000000), (0x40000000, 0x41A00000),
                   (0xC0000000, 0xC1A00000)):
        assert harness.mismatches(fn, lo, 3, (hi - lo) // 3 // 16) == 0  # a dense stretch from each start
    assert harness.mismatches(fn, 0x3EB17000, 1, 0x10000) == 0  # ln2 / 2, where expm1f's reduction starts


# ---- on a device --------------------------------------------------------------------------------------------------


def _emulator() -> None:
    pytest.importorskip("unicorn", reason="the Cortex-M4 emulator needs unicorn (pip install unicorn capstone)")
    pytest.importorskip("ziglang", reason="cross-compiling the kernels needs ziglang")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_on_cortex_m4(name: str) -> None:
    """The whole model on the emulated Cortex-M4 (soft-float), two invokes in one session: the LSTM's state stays
    on the device between them, and both outputs are the interpreter's bytes (the float model takes ~15 s each)."""
    _emulator()
    it = micronn.Interpreter(model(name))
    with micronn.micro.Session("cortex-m4") as sess:
        dm = micronn.micro.DeviceModel(it, sess)
        for seed in (1, 2):
            inputs = random_inputs(it.model, seed=seed)
            it.set_input(inputs[0], 0)
            it.invoke()
            assert dm.invoke(inputs)[0].tobytes() == it.get_output(0).tobytes(), seed


def test_run_model_on_cortex_m4() -> None:
    """``run_model`` (one invoke from a fresh state) on the int8 model gives the interpreter's output."""
    _emulator()
    path = model("lstm_int8")
    it = micronn.Interpreter(path)
    inputs = random_inputs(it.model, seed=3)
    it.set_input(inputs[0], 0)
    it.invoke()
    got = micronn.micro.run_model(path, "cortex-m4", inputs)["outputs"]
    assert got[0].tobytes() == it.get_output(0).tobytes()


DEVICE_CASES = ["zero_points", "left_shifts", "huge_biases", "cell_2^-15", "cell_2^-11", "act_none", "time_major"]


def test_int8_edge_cases_on_cortex_m4() -> None:
    """The int8 kernel's paths the models do not reach (weight zero points, wrapping sums, left shifts, both cell
    tanh scalings, a raw cell gate, time-major batches), compiled for the M4 (its DSP dot products), over two
    invokes each."""
    _emulator()
    for case in DEVICE_CASES:
        with micronn.micro.Session("cortex-m4") as sess:
            it = micronn.Interpreter(lstm("int8", **INT8[case], seed=len(case)))
            dm = micronn.micro.DeviceModel(it, sess)
            for seed in (4, 5):
                inputs = random_inputs(it.model, seed=seed)
                it.set_input(inputs[0], 0)
                it.invoke()
                assert dm.invoke(inputs)[0].tobytes() == it.get_output(0).tobytes(), case


def test_float_edge_cases_on_cortex_m4() -> None:
    """Saturated float gates on the M4's soft-float: the sigmoid's cut-offs, tanhf's |x| >= 22, the cell clip, and
    inputs near FLT_MAX whose products overflow to infinity."""
    _emulator()
    for case, scale in (("saturated_gates", 1.0), ("clip_tiny", 1.0), ("plain", 3e38)):
        with micronn.micro.Session("cortex-m4") as sess:
            it = micronn.Interpreter(lstm("float32", **FLOAT[case], seed=len(case)))
            dm = micronn.micro.DeviceModel(it, sess)
            for seed in (4, 5):
                inputs = [x * np.float32(scale) for x in random_inputs(it.model, seed=seed)]
                it.set_input(inputs[0], 0)
                it.invoke()
                assert dm.invoke(inputs)[0].tobytes() == it.get_output(0).tobytes(), case


# ---- freestanding on Cortex-M0 and M4 ----------------------------------------------------------------------------


@pytest.mark.parametrize("cpu", ["cortex_m0", "cortex_m4"])
def test_kernels_cross_compile_freestanding(tmp_path: Path, cpu: str) -> None:
    """Each lstm kernel builds as freestanding C99 for a Cortex-M0 and M4, defines the symbols the lowerings emit
    and needs nothing but memcpy, memset and the ARM EABI helpers."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    defined: set[str] = set()
    for src in family_sources():
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
    assert len(SYMBOLS) == 2 and SYMBOLS <= defined
