"""The audio front end's C kernels (family ``signal``) against micronn's Python kernels, byte for byte.

On the host, operator by operator over the interpreter's own arena (``test_kernels.check_ops``): micro_speech's
``audio_preprocessor_int8`` over consecutive frames of real speech (its spectral subtraction carries a noise
estimate from frame to frame), then single-op models for what that model does not reach (every FFT radix, int32
FFTs, zero padding, several frames, extreme values, every shift, full-range tables, broadcasting int32 and int16
ops with activations, every integer cast). Then the whole model on the emulated Cortex-M4 over consecutive
frames, and every kernel cross-compiled as freestanding C for Cortex-M0 and M4.
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
from micronn.kernels._custom_options import custom_options
from micronn.kernels._signal_fft import real_fft_length_ok
from micronn.micro import lower, lower_signal
from micronn.models import bundled_model
from micronn.simulate.audio import HOP, WINDOW, bundled_audio
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

SOURCES = ["signal_window.c", "signal_fft_auto_scale.c", "signal_rfft.c", "signal_energy.c", "signal_filter_bank.c",
           "signal_filter_bank_square_root.c", "signal_filter_bank_spectral_subtraction.c", "signal_pcan.c",
           "signal_filter_bank_log.c", "add_s16_s32.c", "mul_s16_s32.c", "div_s32.c", "maximum_s16_s32.c",
           "cast.c", "compare.c"]
# the data-movement kernels the audio model also uses (RESHAPE, STRIDED_SLICE, CONCATENATION), from the int8 set
SHARED = ["reshape.c", "strided_slice.c", "concatenation.c"]
SYMBOLS = set(re.findall(r'"(mn_\w+)"', inspect.getsource(lower_signal)))  # every kernel the lowerings name
SYMBOLS |= {"mn_div_s32"} | {f"mn_{op}_{t}" for op in ("add", "sub", "mul", "maximum", "minimum")
                             for t in ("s16", "s32")}  # built from the op's name
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
FRAMES = 6  # consecutive 30 ms frames of speech, enough for the noise estimate to move


def paths(names: list[str]) -> list[Path]:
    return [lower.include_dir() / n for n in names]


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    """The family's kernels (and the three it shares) in one host library (gcc -Wall -Wextra -Werror), cached by
    the hash of the sources; other families' kernels, written beside them, do not enter these tests."""
    headers = [lower.include_dir() / h for h in ("mn_kernels.h", "mn_elementwise.h")]
    return ctypes.CDLL(str(host_library("kernels-signal", paths(SOURCES + SHARED), headers)))


def speech_frames(count: int = FRAMES, start: int = 10) -> list[np.ndarray]:
    """``count`` consecutive 30 ms windows of the bundled "yes", from frame ``start`` (the word, not silence)."""
    audio = bundled_audio("yes")
    return [audio[(start + i) * HOP:(start + i) * HOP + WINDOW].reshape(1, WINDOW) for i in range(count)]


# ---- the real model -----------------------------------------------------------------------------------------------


def test_audio_preprocessor_lowers_completely() -> None:
    """Every operator of the audio front end now lowers (it raised UnsupportedError for 17 (op, type) pairs)."""
    tasks = lower.lower_model(micronn.Interpreter(bundled_model("audio_preprocessor_int8")))
    assert len(tasks) == 22
    assert {t.symbol for t in tasks} == {
        "mn_signal_window_s16", "mn_copy", "mn_signal_fft_auto_scale_s16", "mn_signal_rfft_s16",
        "mn_signal_energy_s16", "mn_cast", "mn_strided_slice", "mn_concatenation", "mn_signal_filter_bank_u32",
        "mn_signal_filter_bank_square_root_u64", "mn_signal_filter_bank_spectral_subtraction_u32",
        "mn_signal_pcan_u32", "mn_signal_filter_bank_log_u32", "mn_mul_s32", "mn_add_s32", "mn_div_s32",
        "mn_minimum_s32", "mn_maximum_s32"}


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
def test_audio_preprocessor_ops(lib: ctypes.CDLL, planner: str) -> None:
    """Each operator over consecutive frames of speech, then random full-range frames: the C kernels carry the
    noise estimate from frame to frame (every frame starts from the state the C kernel left)."""
    it = micronn.Interpreter(bundled_model("audio_preprocessor_int8"), planner=planner)
    for x in speech_frames():
        assert check_ops(lib, it, [x]) == 22
    for seed in (1, 2):
        check_ops(lib, it, random_inputs(it.model, seed=seed))


def test_noise_estimate_is_the_persistent_state(lib: ctypes.CDLL) -> None:
    """The spectral subtraction's task addresses the Python kernel's own persistent estimate (not a copy), and
    lowering twice finds the same buffer."""
    it = micronn.Interpreter(bundled_model("audio_preprocessor_int8"))
    first = lower.lower_model(it)
    second = lower.lower_model(it)
    op = next(i for i, n in enumerate(it._nodes) if n.op.op == "SignalFilterBankSpectralSubtraction")
    refs = [[a for t in tasks if t.op == op for a in t.args if isinstance(a, lower.ScratchRef)]
            for tasks in (first, second)]
    assert refs[0] == refs[1] and len(refs[0]) == 1
    view = it._nodes[op].scratch_views[refs[0][0].scratch]
    assert view.ctypes.data == it._kernels[op].estimate.ctypes.data
    for x in speech_frames(3):
        check_ops(lib, it, [x])
    assert it._kernels[op].estimate.any()  # the device's updates landed in the state


# ---- single-op models ---------------------------------------------------------------------------------------------


def spread(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Unsigned values of every magnitude (a random value shifted right by a random amount)."""
    bits = np.iinfo(dtype).bits
    v = rng.integers(0, 2**64, shape, dtype=np.uint64) >> rng.integers(64 - bits, 64, shape).astype(np.uint64)
    return v.astype(dtype)


def extremes(dtype: str, shape: tuple, seed: int) -> list[np.ndarray]:
    """Full-range random values, both rails, alternating rails, small values."""
    rng = np.random.default_rng(seed)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    alternating = np.where(np.arange(int(np.prod(shape))) % 2 == 0, hi, lo).reshape(shape)
    return [rng.integers(lo, hi, shape, endpoint=True).astype(dtype), np.full(shape, hi, dtype),
            np.full(shape, lo, dtype), alternating.astype(dtype), rng.integers(-3, 4, shape).astype(dtype)]


def window(shape: tuple, frame: int, shift: int) -> bytes:
    w = np.random.default_rng(frame).integers(-32768, 32768, frame).astype(np.int16)
    w[:2] = [32767, -32768]
    return op_model("SignalWindow", [T(shape, "int16"), T((frame,), "int16", data=w)], [T(shape, "int16")],
                    custom_options=custom_options(shift=shift))


def auto_scale(n: int) -> bytes:
    return op_model("SignalFftAutoScale", [T((n,), "int16")], [T((n,), "int16"), T((), "int32")])


def rfft(fft_length: int, dtype: str = "int16", frame: int | None = None, lead: tuple = ()) -> bytes:
    code = {"int16": 7, "int32": 2}[dtype]
    return op_model("SignalRfft", [T((*lead, frame or fft_length), dtype)], [T((*lead, fft_length + 2), dtype)],
                    custom_options=custom_options(T=code, fft_length=fft_length))


def energy(n_bins: int, start: int, end: int) -> bytes:
    return op_model("SignalEnergy", [T((2 * n_bins,), "int16")], [T((n_bins,), "uint32")],
                    custom_options=custom_options(start_index=start, end_index=end))


def filter_bank(n_in: int, nch: int, seed: int) -> bytes:
    """Random bands (some of width <= 0, skipped) over full-range weights (negative ones wrap in uint64)."""
    rng = np.random.default_rng(seed)
    n_w = int(rng.integers(1, 3 * n_in))
    width = rng.integers(-3, min(n_in, n_w) + 1, nch + 1)
    span = np.maximum(width, 0)
    freq = np.array([rng.integers(0, n_in - s + 1) for s in span])
    start = np.array([rng.integers(0, n_w - s + 1) for s in span])
    w, u = (rng.integers(-32768, 32768, n_w) for _ in range(2))
    tables = [t.astype(np.int16) for t in (w, u, freq, start, width)]
    return op_model("SignalFilterBank", [T((n_in,), "uint32"), *(T((len(t),), "int16", data=t) for t in tables)],
                    [T((nch,), "uint64")], custom_options=custom_options(num_channels=nch))


def square_root(n: int, scale: int | None = None) -> bytes:
    s = T((), "int32") if scale is None else T((), "int32", data=scale)
    return op_model("SignalFilterBankSquareRoot", [T((n,), "uint64"), s], [T((n,), "uint32")])


MICRO_SPEECH_SUBTRACTION = dict(alternate_one_minus_smoothing=15401, alternate_smoothing=983, clamping=False,
                                min_signal_remaining=819, num_channels=40, one_minus_smoothing=15975, smoothing=409,
                                smoothing_bits=10, spectral_subtraction_bits=14)


def subtraction(**changes: int) -> bytes:
    o = dict(MICRO_SPEECH_SUBTRACTION, **changes)
    n = o["num_channels"]
    return op_model("SignalFilterBankSpectralSubtraction", [T((n,), "uint32")],
                    [T((n,), "uint32"), T((n,), "uint32")], custom_options=custom_options(**o))


def pcan(n: int, snr_shift: int, seed: int) -> bytes:
    lut = np.random.default_rng(seed).integers(-32768, 32768, 125).astype(np.int16)
    return op_model("SignalPCAN", [T((n,), "uint32"), T((n,), "uint32"), T((125,), "int16", data=lut)],
                    [T((n,), "uint32")], custom_options=custom_options(snr_shift=snr_shift))


def log(n: int, bits: int, scale: int) -> bytes:
    return op_model("SignalFilterBankLog", [T((n,), "uint32")], [T((n,), "int16")],
                    custom_options=custom_options(input_correction_bits=bits, output_scale=scale))


def binary(op: str, a: tuple, b: tuple, out: tuple, dtype: str = "int32", act: int = NONE) -> bytes:
    opts = schema.options(op, fused_activation_function=act) if op in ("ADD", "SUB", "MUL", "DIV") else None
    return op_model(op, [T(a, dtype), T(b, dtype)], [T(out, dtype)], opts)


def qbinary(op: str, a: tuple, b: tuple, out: tuple, scales: tuple = (0.01, 0.02, 0.03), zps: tuple = (0, 0, 0),
            act: int = NONE) -> bytes:
    """A quantized int16 ADD, SUB or MUL."""
    return op_model(op, [T(a, "int16", scales[0], zps[0]), T(b, "int16", scales[1], zps[1])],
                    [T(out, "int16", scales[2], zps[2])], schema.options(op, fused_activation_function=act))


def cast(src: str, dst: str, shape: tuple = (3, 7)) -> bytes:
    return op_model("CAST", [T(shape, src)], [T(shape, dst)])


RFFT_LENGTHS = [4, 6, 8, 10, 16, 18, 24, 30, 50, 60, 64, 90, 120, 250, 480, 512]
assert all(real_fft_length_ok(n) for n in RFFT_LENGTHS)

CASES: dict[str, bytes] = {
    "window": window((3, 16), 16, 12), "window_shift0": window((2, 5), 5, 0), "window_shift31": window((7,), 7, 31),
    "window_odd": window((1, 2, 3, 9), 9, 3),
    "auto_scale": auto_scale(480), "auto_scale_one": auto_scale(1),
    **{f"rfft_{n}": rfft(n) for n in RFFT_LENGTHS},
    **{f"rfft32_{n}": rfft(n, "int32") for n in (4, 6, 10, 24, 30, 60, 512)},
    "rfft_padded": rfft(64, frame=50), "rfft_frames": rfft(30, frame=17, lead=(2, 3)),
    "rfft32_padded": rfft(120, "int32", frame=1, lead=(2,)),
    "energy": energy(257, 0, 257), "energy_part": energy(33, 5, 20), "energy_empty": energy(8, 6, 2),
    **{f"bank_{s}": filter_bank(n, c, s) for s, (n, c) in enumerate([(257, 40), (16, 3), (64, 1), (100, 12)])},
    "sqrt": square_root(300), "sqrt_scale7": square_root(50, 7), "sqrt_scale31": square_root(20, 31),
    "subtraction": subtraction(), "subtraction_clamping": subtraction(clamping=True, num_channels=9),
    "subtraction_wide": subtraction(num_channels=7, smoothing=-1, one_minus_smoothing=2**31 + 5, smoothing_bits=31,
                                    spectral_subtraction_bits=63, alternate_smoothing=123456789,
                                    alternate_one_minus_smoothing=-77, min_signal_remaining=-1),
    "subtraction_no_shift": subtraction(num_channels=5, smoothing_bits=0, spectral_subtraction_bits=0, clamping=True),
    **{f"pcan_{s}": pcan(300, s, s) for s in (0, 6, 20, 31, 63)},
    "log": log(300, 0, 1600), "log_bits": log(100, 3, 32768), "log_wrap": log(100, 31, 2**32 - 1),
    "add": binary("ADD", (2, 3, 4), (2, 3, 4), (2, 3, 4), act=RELU), "add_scalar": binary("ADD", (40,), (), (40,)),
    "add_broadcast": binary("ADD", (2, 1, 4), (3, 1), (2, 3, 4)),
    "sub": binary("SUB", (2, 3, 4), (4,), (2, 3, 4)), "sub_relu6": binary("SUB", (5, 3), (5, 1), (5, 3), act=RELU6),
    "mul": binary("MUL", (6, 5), (6, 5), (6, 5)), "mul_n1_1": binary("MUL", (3, 1, 2), (1, 4, 1), (3, 4, 2),
                                                                    act=RELU_N1_TO_1),
    "div": binary("DIV", (40,), (), (40,)), "div_relu": binary("DIV", (2, 7), (7,), (2, 7), act=RELU),
    "max": binary("MAXIMUM", (40,), (), (40,)), "min": binary("MINIMUM", (2, 3, 1), (1, 5), (2, 3, 5)),
    "add16": qbinary("ADD", (2, 3, 4), (2, 3, 4), (2, 3, 4), act=RELU),
    "add16_broadcast": qbinary("ADD", (2, 1, 4), (3, 1), (2, 3, 4), (0.5, 0.001, 0.1)),
    "add16_zero_points": qbinary("ADD", (7,), (), (7,), (0.02, 0.01, 0.05), (5, -7, 3)),
    "sub16": qbinary("SUB", (5, 3), (3,), (5, 3), (0.01, 0.01, 0.001), act=RELU6),
    "sub16_n1_1": qbinary("SUB", (4, 4), (4, 4), (4, 4), (1e-4, 3e-4, 1e-4), act=RELU_N1_TO_1),
    "mul16": qbinary("MUL", (6, 5), (6, 5), (6, 5), (0.01, 0.02, 1e-4)),  # a multiplier above one
    "mul16_small": qbinary("MUL", (3, 1, 2), (1, 4, 1), (3, 4, 2), (1e-3, 2e-3, 1.0), act=RELU),
    "mul16_n1_1": qbinary("MUL", (9,), (), (9,), (0.001, 0.002, 1e-4), act=RELU_N1_TO_1),
    "max16": binary("MAXIMUM", (3, 4), (4,), (3, 4), "int16"), "min16": binary("MINIMUM", (9,), (9,), (9,), "int16"),
    **{f"cast_{s}_{d}": cast(s, d) for s in ("int8", "int16", "int32", "uint32", "bool")
       for d in ("int8", "int16", "int32", "uint32", "bool") if s != d},
}


def case_inputs(name: str, it: micronn.Interpreter, seed: int) -> list[list[np.ndarray]]:
    """Input sets for a case: random full-range values, plus what reaches its edges."""
    rng = np.random.default_rng(seed)
    base = random_inputs(it.model, seed=seed)
    shapes = [x.shape for x in base]
    if name.startswith(("rfft", "window", "auto_scale", "energy")):
        return [[x] for x in extremes(base[0].dtype.name, shapes[0], seed)] + (
            [[np.where(np.arange(shapes[0][0]) == 3, -32768, 5).astype(np.int16)]] if name == "auto_scale" else [])
    if name.startswith("sqrt"):
        edges = np.array([0, 1, 2**16 - 2, 2**16 - 1, 2**16, 2**32 - 2, 2**32 - 1, 2**32, 2**32 + 1, 2**64 - 1],
                         np.uint64)
        xs = [base[0], spread(rng, shapes[0], "uint64"), np.resize(edges, shapes[0])]
        return [[x, np.array(int(rng.integers(0, 32)), np.int32)] if len(base) > 1 else [x] for x in xs]
    if name.startswith(("bank", "subtraction", "log")):
        return [base, [spread(rng, shapes[0], base[0].dtype.name)]]
    if name.startswith("pcan"):
        edges = np.array([v for b in range(1, 33) for v in (2**b - 1, 2**b, 2**b + 1)] + [0, 1, 2], np.uint64)
        noise = np.resize(np.concatenate([edges, spread(rng, shapes[1], "uint32").astype(np.uint64)]),
                          shapes[1]).astype(np.uint32)
        return [base, [spread(rng, shapes[0], "uint32"), noise], [np.full(shapes[0], 2**32 - 1, np.uint32), noise]]
    if name.startswith("div"):
        return [[base[0], np.where(base[1] == 0, 7, base[1]).astype(np.int32)],
                [rng.integers(-100, 100, shapes[0]).astype(np.int32),
                 rng.choice([-3, -1, 1, 2, 9], shapes[1]).astype(np.int32)]]
    if name.startswith(("add", "sub", "mul")):
        return [base, [np.full_like(x, np.iinfo(x.dtype).max) for x in base],
                [np.full_like(x, np.iinfo(x.dtype).min) for x in base], [(x % 5 - 2).astype(x.dtype) for x in base]]
    return [base]


@pytest.mark.parametrize("planner", ["optimal", "linear"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_single_ops(lib: ctypes.CDLL, case: str, planner: str) -> None:
    it = micronn.Interpreter(CASES[case], planner=planner)
    assert {t.symbol for t in lower.lower_model(it)} <= SYMBOLS
    for seed in (0, 1):
        for inputs in case_inputs(case, it, seed):
            check_ops(lib, it, inputs)


def test_spectral_subtraction_state_over_invokes(lib: ctypes.CDLL) -> None:
    """Twenty invokes of steady and jumping energies: the estimate converges and tracks, in the C kernel's state."""
    for case in ("subtraction", "subtraction_clamping", "subtraction_wide"):
        it = micronn.Interpreter(CASES[case])
        rng = np.random.default_rng(3)
        n = it.model.main.tensors[it.model.main.inputs[0]].shape[0]
        level = spread(rng, (n,), "uint32")
        for _ in range(20):
            jump = spread(rng, (n,), "uint32")
            check_ops(lib, it, [np.where(rng.random(n) < 0.3, jump, level).astype(np.uint32)])


def test_in_place_outputs(lib: ctypes.CDLL) -> None:
    """The optimal plan places these outputs exactly over their inputs; the kernels read each element first."""
    placed = 0
    for case in ("window", "auto_scale", "add", "mul", "max16", "cast_int32_uint32"):
        it = micronn.Interpreter(CASES[case])
        it.allocate_tensors()
        places = lower._placements(it)
        node = it._nodes[0]
        placed += places.get(node.op.outputs[0]) == places.get(node.op.inputs[0])
        check_ops(lib, it, random_inputs(it.model, seed=4))
    assert placed >= 1


def test_cast_direction_over_its_input(lib: ctypes.CDLL) -> None:
    """Where a plan puts a widening cast's output over its input, the lowering picks the direction in which every
    input is read before it is overwritten (or refuses), and the kernel then gives numpy's cast."""
    it = micronn.Interpreter(cast("int8", "int32", (40,)))
    it.allocate_tensors()
    node = it._nodes[0]
    src, dst = node.op.inputs[0], node.op.outputs[0]
    direction = {}
    # "gap": the planner's stream gap for a widening cast, (n - 1) * 3 bytes: the last element's write reaches the
    # end of the input only once nothing is left unread there
    for name, start in (("before", 120), ("gap", 117), ("same", 0), ("inside", 10)):
        o = lower._Op(it, 0, {src: (start, 40), dst: (0, 160)})
        try:
            direction[name] = lower_signal._cast_backward(o)
        except lower.LowerError:
            direction[name] = None
    assert direction == {"before": 0, "gap": 0, "same": 1, "inside": None}
    x = (np.arange(-20, 20) * 6).astype(np.int8)
    for name, start in (("before", 120), ("gap", 117), ("same", 0)):
        buf = np.zeros(160, np.uint8)
        buf[start:start + 40] = x.view(np.uint8)
        args = (ctypes.c_uint64 * 6)(buf.ctypes.data, buf.ctypes.data + start, 40, lower.INT_TYPES["int8"],
                                     lower.INT_TYPES["int32"], direction[name])
        lib.mn_cast(args)
        assert (buf.view(np.int32) == x.astype(np.int32)).all(), name


@pytest.mark.parametrize("planner", ["optimal", "tflm"])
def test_audio_preprocessor_whole_model_in_c_on_host(lib: ctypes.CDLL, planner: str) -> None:
    """All 22 tasks run back to back on the host (no Python kernel in between) over consecutive frames of
    speech, each frame's features equal to a separate interpreter's."""
    from test_kernels import Host

    model = bundled_model("audio_preprocessor_int8")
    it, ref = micronn.Interpreter(model, planner=planner), micronn.Interpreter(model)
    tasks = lower.lower_model(it)
    host = Host(lib, it)
    for x in speech_frames(12, start=0):
        it.set_input(x)
        host.run(tasks)
        ref.set_input(x)
        ref.invoke()
        assert it.get_output(0).tobytes() == ref.get_output(0).tobytes()


# ---- on a device --------------------------------------------------------------------------------------------------


def _device() -> None:
    pytest.importorskip("unicorn", reason="the Cortex-M4 emulator needs unicorn (pip install unicorn capstone)")
    pytest.importorskip("ziglang", reason="cross-compiling the kernels needs ziglang")


def test_audio_preprocessor_on_cortex_m4() -> None:
    """micro_speech's front end on the emulated Cortex-M4 over consecutive frames of "yes": every frame's 40
    features equal the interpreter's, the noise estimate carried in device memory from frame to frame."""
    _device()
    model = bundled_model("audio_preprocessor_int8")
    ref = micronn.Interpreter(model)
    with micronn.micro.Session("cortex-m4") as sess:
        dm = micronn.micro.DeviceModel(micronn.Interpreter(model), sess)
        for i, x in enumerate(speech_frames(FRAMES, start=8)):
            ref.set_input(x)
            ref.invoke()
            got = dm.invoke([x])
            assert len(got) == 1 and got[0].dtype == np.int8
            assert got[0].tobytes() == ref.get_output(0).tobytes(), f"frame {i}"


def test_run_model_on_cortex_m4() -> None:
    """``run_model`` on random full-range audio (the FFT's auto scale at its extremes) gives the interpreter's."""
    _device()
    model = bundled_model("audio_preprocessor_int8")
    it = micronn.Interpreter(model)
    x = random_inputs(it.model, seed=7)
    it.set_input(x[0])
    it.invoke()
    assert micronn.micro.run_model(model, "cortex-m4", x)["outputs"][0].tobytes() == it.get_output(0).tobytes()


DEVICE_CASES = ["rfft_30", "rfft32_60", "rfft_frames", "bank_0", "sqrt", "subtraction_wide", "pcan_6", "log_wrap",
                "div", "mul_n1_1", "min16", "cast_uint32_int16", "add16_zero_points", "mul16"]


def test_edge_cases_on_cortex_m4() -> None:
    """What the audio model does not reach, compiled for the M4: radices 2, 3 and 5, int32 FFTs (64-bit products),
    wrapping uint64 sums, 64-bit shifts, the cast and division paths."""
    _device()
    for case in DEVICE_CASES:
        with micronn.micro.Session("cortex-m4") as sess:
            it = micronn.Interpreter(CASES[case])
            dm = micronn.micro.DeviceModel(micronn.Interpreter(CASES[case]), sess)
            for inputs in case_inputs(case, it, 5):
                for i, x in enumerate(inputs):
                    it.set_input(x, i)
                it.invoke()
                got = dm.invoke(inputs)
                for k, g in enumerate(got):
                    assert g.tobytes() == it.get_output(k).tobytes(), (case, k)


# ---- freestanding on Cortex-M0 and M4 ----------------------------------------------------------------------------


@pytest.mark.parametrize("cpu", ["cortex_m0", "cortex_m4"])
def test_kernels_cross_compile_freestanding(tmp_path: Path, cpu: str) -> None:
    """Each kernel of the family builds as freestanding C99 for a Cortex-M0 (no 64-bit multiply) and M4, defines
    the symbols the lowerings emit and needs nothing but memcpy, memset and the ARM EABI helpers."""
    pytest.importorskip("ziglang")
    elffile = pytest.importorskip("elftools.elf.elffile")
    defined: set[str] = set()
    for src in paths(SOURCES):
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "thumb-freestanding-eabi", f"-mcpu={cpu}",
                        "-O2", "-ffreestanding", "-fno-builtin", "-std=c99", "-Wall", "-Wextra", "-Werror",
                        f"-I{lower.include_dir()}", "-c", str(src), "-o", str(obj)],
                       check=True, capture_output=True, timeout=120)
        with obj.open("rb") as f:
            syms = list(elffile.ELFFile(f).get_section_by_name(".symtab").iter_symbols())
        undefined = {s.name for s in syms if s.name and s["st_shndx"] == "SHN_UNDEF"}
        assert not {u for u in undefined if u not in ("memcpy", "memset") and not u.startswith("__aeabi_")}, src.name
        defined |= {s.name for s in syms if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert SYMBOLS <= defined
