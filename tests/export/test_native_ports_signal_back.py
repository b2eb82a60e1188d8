"""The host ports of the back of the audio front end (SignalFilterBankSquareRoot, SignalFilterBankSpectralSubtraction,
SignalPCAN, SignalFilterBankLog: eight channels a vector) give the portable kernels' bytes, the interpreter's and the
TFLM wheel's. Each kernel is called directly beside its portable twin (one library holds both) on counts around the
vector width (1..20, 40, 41: a last partial vector, counts below one vector) and values over the whole uint32 /
uint64 range: every bit length, the roots' exact squares and neighbours, the caps, groups that leave the square
root's fast range, every LUT segment and table entry, the log's saturation, streams of invokes carrying the noise
estimate. Then one-op models (ported, portable, interpreter, wheel) and audio_preprocessor end to end, on real
audio and extreme frames, each frame from the reset state and as a stream."""

from __future__ import annotations

import ctypes
import math
import wave
from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import FLAGS, HOST_PORTS, host_toolchain
from micronn.kernels.signal_filter_bank_log import CORRECTION
from micronn.micro import lower
from micronn.models import bundled_model
from micronn.testing import _Tflm
from tests.kernels.test_signal_filter_bank_log import inputs as log_inputs
from tests.kernels.test_signal_filter_bank_log import log_model
from tests.kernels.test_signal_filter_bank_spectral_subtraction import COEFFICIENTS, frames, subtraction_model
from tests.kernels.test_signal_filter_bank_square_root import near_squares
from tests.kernels.test_signal_pcan import noise_values, pcan_model, smooth_lut, spread

COUNTS = [*range(1, 21), 40, 41]
KERNELS = ["signal_filter_bank_square_root", "signal_filter_bank_spectral_subtraction", "signal_pcan",
           "signal_filter_bank_log"]
AUDIO = Path("/work/shared/models/audio")


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The four ports and the portable kernels they include (renamed ..._portable) in one host library."""
    d = tmp_path_factory.mktemp("back")
    kernels = lower.include_dir()
    for name in KERNELS:
        (d / f"{name}.c").write_text((HOST_PORTS / f"{name}.c").read_text())
        (d / f"{name}.portable.inc").write_text((kernels / f"{name}.c").read_text())
    sources = [d / f"{name}.c" for name in KERNELS]
    return ctypes.CDLL(str(host_toolchain().shared_object(sources, [d, HOST_PORTS, kernels], FLAGS)))


KEPT: list = []  # every argument array and table stays alive: the ports cache per argument array's address


def call(lib: ctypes.CDLL, symbol: str, *words: int | np.ndarray) -> None:
    """symbol(args): arrays as their addresses, ints as words (negative ones as their 64-bit two's complement)."""
    args = (ctypes.c_size_t * len(words))(*[w.ctypes.data if isinstance(w, np.ndarray) else w % 2**64
                                            for w in words])
    KEPT.append((args, words))
    lib[symbol](args)


def both(lib: ctypes.CDLL, symbol: str, outs: list[np.ndarray], make_words) -> list[list[np.ndarray]]:
    """Run the port and the portable kernel on copies of ``outs`` (outputs, and state read and written);
    ``make_words(copies)`` gives the argument words. Returns the two runs' arrays."""
    runs = []
    for name in (symbol, symbol + "_portable"):
        copies = [o.copy() for o in outs]
        call(lib, name, *make_words(copies))
        runs.append(copies)
    for a, b in zip(*runs):
        assert a.tobytes() == b.tobytes()
    return runs


def assert_all_same(data: bytes, xs: list[np.ndarray], *, wheel: bool = True) -> None:
    ported, portable, it = NativeModel(data), NativeModel(data, host_ports=False), Interpreter(data)
    got = ported.run(xs)
    assert [g.tobytes() for g in got] == [p.tobytes() for p in portable.run(xs)]
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    assert [g.tobytes() for g in got] == [it.get_output(i).tobytes() for i in range(len(got))]
    if wheel:
        assert [g.tobytes() for g in got] == [w.tobytes() for w in _Tflm(data).run(xs)]


# ---- SignalFilterBankSquareRoot ---------------------------------------------------------------------------------

def fast_roots(seed: int) -> np.ndarray:
    """Values below 2**52 (the vector path) around squares: s*s - 1, s*s, s*s + s (rounds down), s*s + s + 1
    (rounds up), (s + 1)**2 - 1, for roots at every bit length, 0xFFFF (its round-up capped below 2**32) and
    2**26 - 1, in random order."""
    rng = np.random.default_rng(seed)
    roots = [0, 1, 2, 3, 255, 256, 4095, 4096, 46340, 65534, 65535, 65536, 65537, 2**26 - 2, 2**26 - 1]
    roots += [2**b + d for b in range(26) for d in (-1, 0, 1)] + list(rng.integers(1, 2**26, 60))
    values = {r * r + d for r in map(int, roots) for d in (-1, 0, 1, r - 1, r, r + 1, 2 * r)}
    values = sorted(v for v in values if 0 <= v < 2**52) + [2**32 - 1, 2**32, 2**52 - 1]
    return rng.permutation(np.array(values, np.uint64))


def mixed_roots(seed: int) -> np.ndarray:
    """fast_roots with a value from 2**52 up (the scalar path for its group of eight) every 13th place."""
    x = fast_roots(seed)
    big = np.concatenate([near_squares()[near_squares() >= 2**52], np.array([2**52, 2**53 + 1, 2**64 - 1], np.uint64)])
    x[::13] = np.resize(big, len(x[::13]))
    return x


def sqrt_both(lib: ctypes.CDLL, x: np.ndarray, shift: int) -> np.ndarray:
    x = np.ascontiguousarray(x, np.uint64)
    scale = np.array([shift], np.int32)
    (out,), _ = both(lib, "mn_signal_filter_bank_square_root_u64", [np.zeros(len(x), np.uint32)],
                     lambda o: [o[0], x, scale, len(x)])
    return out


def rounded_roots(x: np.ndarray, shift: int) -> list[int]:
    return [(r + (v - r * r > r and r != (0xFFFF if v < 2**32 else 0xFFFFFFFF))) >> shift
            for v in map(int, x) for r in [math.isqrt(v)]]


@pytest.mark.parametrize("shift", [0, 5, 31])
def test_square_root_every_square(lib: ctypes.CDLL, shift: int) -> None:
    """Exact squares and their neighbours at every root size, in the vector path and in groups with a big value."""
    for x in (fast_roots(shift), mixed_roots(shift), near_squares()):
        assert sqrt_both(lib, x, shift).tolist() == rounded_roots(x, shift)


@pytest.mark.parametrize("shift", [0, 3, 31, 32, -1])
def test_square_root_counts(lib: ctypes.CDLL, shift: int) -> None:
    """Counts around the vector width (the partial group on the scalar path), fast and mixed values; a shift
    outside [0, 31] gives the portable kernel's zeros."""
    fast, mixed = fast_roots(7), mixed_roots(8)
    for n in COUNTS:
        for x in (fast[:n], mixed[:n], fast[n:2 * n]):
            got = sqrt_both(lib, x, shift)
            assert got.tolist() == (rounded_roots(x, shift) if 0 <= shift <= 31 else [0] * len(x))


def test_square_root_spread(lib: ctypes.CDLL) -> None:
    """Random values of every bit length below 2**52, and over all of uint64."""
    rng = np.random.default_rng(3)
    for top in (52, 64):
        x = rng.integers(0, 2**63, 4000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        x = x >> (np.uint64(64 - top) + rng.integers(0, top, len(x)).astype(np.uint64))
        assert sqrt_both(lib, x, 2).tolist() == rounded_roots(x, 2)


# ---- SignalFilterBankSpectralSubtraction -------------------------------------------------------------------------

def subtraction_stream(lib: ctypes.CDLL, xs: list[np.ndarray], smoothing: np.ndarray, keep: np.ndarray,
                       min_remaining: int, bits: int, sub_bits: int, clamping: int) -> None:
    """A stream of invokes on the port and the portable kernel, each with its own state: same outputs, noise and
    state after every invoke."""
    n = len(smoothing)
    states = [np.zeros(n, np.uint32), np.zeros(n, np.uint32)]
    for x in xs:
        outs = []
        for name, state in zip(("", "_portable"), states):
            out, noise = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
            call(lib, "mn_signal_filter_bank_spectral_subtraction_u32" + name, out, noise, x, state, smoothing, keep,
                 n, min_remaining, bits, sub_bits, clamping)
            outs.append((out.tobytes(), noise.tobytes(), state.tobytes()))
        assert outs[0] == outs[1]


@pytest.mark.parametrize("seed", range(6))
def test_spectral_subtraction_streams(lib: ctypes.CDLL, seed: int) -> None:
    """Random coefficients over all of uint32 (the uint64 mixes wrap), every count, shifts at and between the
    ends of their ranges, clamping off / on / an odd non-zero value; ten invokes each."""
    rng = np.random.default_rng(seed)
    for n in COUNTS:
        smoothing, keep = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
        if seed % 2:  # also the lowering's pattern: small coefficients, alternating per channel
            smoothing[::2], keep[::2] = 409, 15975
        xs = frames(n, 8, seed * 100 + n) + [np.full(n, 2**32 - 1, np.uint32), np.zeros(n, np.uint32)]
        bits = [0, 31, 10, int(rng.integers(0, 32))][seed % 4]
        sub_bits = [0, 63, 14, 32, 31, int(rng.integers(0, 64))][seed]
        subtraction_stream(lib, xs, smoothing, keep, int(rng.integers(0, 2**32)), bits, sub_bits, [0, 1, 3][seed % 3])


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction_model(clamping: bool) -> None:
    """micro_speech's options and random ones (TFLM keeps the coefficients' low 32 bits) as one-op models: a stream
    of invokes with a reset, ported against portable, the interpreter and the wheel."""
    rng = np.random.default_rng(int(clamping))
    models = [(40, subtraction_model(clamping=clamping))]
    for n in (9, 17):
        o = {k: int(rng.integers(-2**40, 2**40)) for k in COEFFICIENTS}
        models.append((n, subtraction_model(num_channels=n, smoothing_bits=int(rng.integers(0, 32)),
                                            spectral_subtraction_bits=int(rng.integers(0, 64)), clamping=clamping,
                                            **o)))
    for n, model in models:
        runners = [NativeModel(model), NativeModel(model, host_ports=False)]
        it, wheel = Interpreter(model), _Tflm(model)
        xs = frames(n, 6, n)
        for k, x in enumerate([*xs, None, *xs[:3]]):
            if x is None:
                for r in runners:
                    r.reset()
                it.reset(), wheel.it.reset()
                continue
            got = [[o.tobytes() for o in r.run([x])] for r in runners]
            it.set_input(x, 0)
            it.invoke()
            want = [o.tobytes() for o in wheel.run([x])]
            assert got[0] == got[1] == [it.get_output(i).tobytes() for i in range(2)] == want, k


# ---- SignalPCAN --------------------------------------------------------------------------------------------------

def luts(seed: int) -> list[np.ndarray]:
    """micro_speech-like, random over all of int16, and tables of extremes (every quadratic at its limits)."""
    rng = np.random.default_rng(seed)
    return [smooth_lut(), rng.integers(-32768, 32768, 125).astype(np.int16),
            rng.choice(np.array([-32768, 32767, 0, -1], np.int16), 125), np.full(125, -32768, np.int16),
            np.full(125, 32767, np.int16)]


def pcan_both(lib: ctypes.CDLL, x: np.ndarray, noise: np.ndarray, lut: np.ndarray, shift: int) -> None:
    x, noise, lut = (np.ascontiguousarray(a) for a in (x, noise, lut))
    both(lib, "mn_signal_pcan_u32", [np.zeros(len(x), np.uint32)],
         lambda o: [o[0], x, noise, lut, len(x), shift])


@pytest.mark.parametrize("shift", [0, 6, 12, 20, 31, 32, 63])
def test_pcan_values(lib: ctypes.CDLL, shift: int) -> None:
    """Noise estimates 0..2100 and every bit length's edges (every table segment), signals random and at the top,
    against every kind of table."""
    rng = np.random.default_rng(shift)
    noise = noise_values(rng)
    for lut in luts(shift):
        for x in (spread(len(noise), rng), np.full(len(noise), 2**32 - 1, np.uint32),
                  rng.integers(0, 2**14, len(noise)).astype(np.uint32)):
            pcan_both(lib, x, noise, lut, shift)


def test_pcan_counts(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(11)
    noise, x = noise_values(rng), spread(3000, rng)
    for n in COUNTS:
        for lut in luts(n):
            for at in (0, 2090, len(noise) - n):  # the small estimates, bit length edges, random
                pcan_both(lib, x[:n], noise[at:at + n], lut, 6)


def test_pcan_table_changes(lib: ctypes.CDLL) -> None:
    """One call site (the same argument words) whose table changes between invokes, in one entry or all: the port's
    prepared copy follows it."""
    rng = np.random.default_rng(12)
    noise = np.array([3 << b >> 1 for b in range(32)] + [0, 1, 2, 3, 2**32 - 1, 5, 6, 7, 9], np.uint32)
    x = spread(41, rng)  # noise: every bit length (every table entry read)
    lut, outs = smooth_lut().copy(), [np.zeros(41, np.uint32), np.zeros(41, np.uint32)]
    words = [(ctypes.c_size_t * 6)(o.ctypes.data, x.ctypes.data, noise.ctypes.data, lut.ctypes.data, 41, 6)
             for o in outs]
    KEPT.append((words, lut, outs, x, noise))
    for k, at in enumerate([0, 0, 124, 111, 112, 63, 5, 120, 99, 124]):  # the compare's first, overlapped, last
        if k:
            lut[...] = rng.integers(-32768, 32768, 125) if k == 5 else lut
            lut.view(np.uint16)[at] ^= np.uint16(1 << int(rng.integers(0, 16)))
        lib["mn_signal_pcan_u32"](words[0])
        lib["mn_signal_pcan_u32_portable"](words[1])
        assert outs[0].tobytes() == outs[1].tobytes(), k


def test_pcan_table_as_input() -> None:
    """The table as a model input, another each invoke: ported, portable, interpreter and wheel."""
    rng = np.random.default_rng(13)
    model = pcan_model(41, None, 6)
    ported, portable, it, wheel = NativeModel(model), NativeModel(model, host_ports=False), Interpreter(model), \
        _Tflm(model)
    for _ in range(4):
        xs = [spread(41, rng), noise_values(rng)[rng.integers(0, 2300, 41)], rng.integers(-32768, 32768, 125)
              .astype(np.int16)]
        got = ported.run(xs)[0]
        for i, v in enumerate(xs):
            it.set_input(v, i)
        it.invoke()
        assert got.tobytes() == portable.run(xs)[0].tobytes() == it.get_output(0).tobytes() == \
            wheel.run(xs)[0].tobytes()


@pytest.mark.parametrize("n", [1, 7, 8, 9, 40, 41])
def test_pcan_model(n: int) -> None:
    rng = np.random.default_rng(n)
    for snr_shift, lut in ((6, smooth_lut()), (0, rng.integers(-32768, 32768, 125).astype(np.int16))):
        model = pcan_model(n, lut, snr_shift)
        noise = noise_values(rng)[rng.integers(0, 2300, n)]
        for x in (spread(n, rng), np.full(n, 2**32 - 1, np.uint32)):
            assert_all_same(model, [x, noise])


# ---- SignalFilterBankLog -----------------------------------------------------------------------------------------

LOG_X = log_inputs()
LOG_CASES = [(64, 3), (64, 0), (1, 0), (1489, 2), (32768, 0), (65536, 0), (2**20 + 3, 0), (2**31 - 1, 0),
             (2**32 - 1, 0), (2**32 - 64, 1), (64, 16), (64, 31), (0, 0)]


def log_both(lib: ctypes.CDLL, x: np.ndarray, scale: int, bits: int, table: np.ndarray = CORRECTION) -> None:
    x, table = np.ascontiguousarray(x, np.uint32), np.ascontiguousarray(table, np.int32)
    both(lib, "mn_signal_filter_bank_log_u32", [np.zeros(len(x), np.int16)],
         lambda o: [o[0], x, table, len(x), bits, scale])


@pytest.mark.parametrize("scale,bits", LOG_CASES, ids=str)
def test_log_values(lib: ctypes.CDLL, scale: int, bits: int) -> None:
    """Every input up to 2**17, a spread over uint32 and every power of two's edges (every segment of the
    correction table at every magnitude), scales that wrap the uint32 scaling, bits that push bits out."""
    log_both(lib, LOG_X, scale, bits)


def test_log_counts(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(4)
    for n in COUNTS:
        for at in (0, 2**17 - n, int(rng.integers(0, len(LOG_X) - n)), len(LOG_X) - n):
            for scale, bits in ((64, 3), (2**32 - 1, 0), (1489, 31)):
                log_both(lib, LOG_X[at:at + n], scale, bits)


def test_log_other_tables(lib: ctypes.CDLL) -> None:
    """Correction tables other than the lowering's: entries at the edges of uint16 and steps at the edges of
    int16 (one gather of both, packed), and past them (a step of 32768, a negative entry, entries of 20 bits: two
    gathers)."""
    rng = np.random.default_rng(6)
    edge = np.where(np.arange(129) % 2, 0, 32767)
    edge[:6] = 0, 32767, 65534, 65535, 32768, 0  # steps of 32767, 32767, 1, -32767, -32768, 32767
    step, negative = edge.copy(), edge.copy()
    step[21] = step[20] + 32768
    negative[30] = -1
    fits = [bool(np.all((t[:128] >= 0) & (t[:128] < 65536)) and np.all(np.abs(np.diff(t) + 0.5) < 32768))
            for t in (edge, step, negative)]
    assert fits == [True, False, False]
    tables = [edge, step, negative, rng.integers(-2**20, 2**20, 129), np.zeros(129), CORRECTION[::-1].copy()]
    for table in tables:
        for scale, bits in ((64, 3), (2**32 - 1, 0), (1489, 2)):
            log_both(lib, LOG_X[:20000], scale, bits, table)
            log_both(lib, LOG_X[-9:], scale, bits, table)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 40, 41])
def test_log_model(n: int) -> None:
    """Ported, portable, interpreter and wheel; saturation at 32767 with the large scales."""
    rng = np.random.default_rng(n)
    for scale, bits in ((64, 3), (2**31 - 1, 0), (1489, 2)):
        for x in (LOG_X[rng.integers(0, len(LOG_X), n)], np.full(n, 2**32 - 1, np.uint32),
                  np.arange(n, dtype=np.uint32)):
            assert_all_same(log_model(n, scale, bits), [x])


# ---- audio_preprocessor end to end -------------------------------------------------------------------------------

def audio_frames() -> np.ndarray:
    """Frames of the real recordings (480 samples, 320 apart; random speech-like noise where the recordings are
    missing) and extreme frames: zeros, both rails, alternating rails, a lone spike, full-range random, quiet."""
    rng = np.random.default_rng(9)
    out = []
    for path in sorted(AUDIO.glob("*.wav")):
        with wave.open(str(path)) as w:
            a = np.frombuffer(w.readframes(w.getnframes()), np.int16)
        out += [a[s:s + 480] for s in range(0, len(a) - 480, 320)][:20]
    if not out:
        out = list((rng.normal(0, 2000, (40, 480))).clip(-32768, 32767).astype(np.int16))
    alternate = np.where(np.arange(480) % 2, 32767, -32768).astype(np.int16)
    spike = np.zeros(480, np.int16)
    spike[240] = 32767
    out += [np.zeros(480, np.int16), np.full(480, 32767, np.int16), np.full(480, -32768, np.int16), alternate, spike,
            rng.integers(-32768, 32768, 480).astype(np.int16), rng.integers(-3, 4, 480).astype(np.int16)]
    return np.stack(out).reshape(-1, 1, 480)


@pytest.mark.parametrize("stream", [False, True])
def test_audio_preprocessor(stream: bool) -> None:
    """Each frame from the reset state, and the frames as one stream (the noise estimate carried): the ports'
    features equal the portable kernels', and the wheel's."""
    model = bundled_model("audio_preprocessor_int8")
    x = np.ascontiguousarray(audio_frames())
    ported, portable = NativeModel(model), NativeModel(model, host_ports=False)
    got = ported.run_chunk([x], reset=not stream)
    want = portable.run_chunk([x], reset=not stream)
    assert got[1:] == want[1:] == (len(x), 0)
    assert got[0][0].tobytes() == want[0][0].tobytes()
    wheel = _Tflm(model)
    for k, frame in enumerate(x):
        if not stream:
            wheel.it.reset()
        assert wheel.run([frame])[0].tobytes() == got[0][0][k].tobytes(), k
