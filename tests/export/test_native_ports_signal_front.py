"""The host ports of the front of the audio chain give the portable kernels' bytes (and the interpreter's and the TFLM
wheel's). SignalWindow (16 samples a vector): frame lengths around the vector width, several frames, every shift,
saturation, in place. SignalFftAutoScale: a peak at every bit length in every position (vector body and scalar tail),
-32768 anywhere (it restarts TFLM's running peak: the portable kernel runs), in place. SignalEnergy: ranges around
the 8-bin vector, the (-32768, -32768) pair. SignalFilterBank: mel-like chains (the port's fast layout) and other
tables (its per-channel runs), negative weights, bins up to 2^32 - 1 (at or above 2^31 the portable kernel runs). The
kernels are called directly, port against portable (one library, every length), then a few one-op models and
audio_preprocessor against the wheel."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import FLAGS, HOST_PORTS, host_toolchain
from micronn.kernels.signal_fft_auto_scale import running_peak
from micronn.micro import lower
from micronn.models import bundled_model
from micronn.simulate.audio import FRAMES, HOP, WINDOW, bundled_audio
from micronn.testing import _Tflm
from tests.kernels.test_signal_energy import energy_model
from tests.kernels.test_signal_fft_auto_scale import scale_model
from tests.kernels.test_signal_filter_bank import bank_model, mel_tables, random_tables
from tests.kernels.test_signal_window import hann, window_model

LENGTHS = [*range(1, 41), 257, 480, 512]
_KEEP: list = []  # every buffer and argument array handed to a kernel stays alive: the ports cache by address


def assert_all_same(data: bytes, xs: list[np.ndarray]) -> None:
    """Every output of the one-input model on each of ``xs``: port, portable kernel, interpreter, wheel."""
    ported, portable, it, wheel = NativeModel(data), NativeModel(data, host_ports=False), Interpreter(data), _Tflm(data)
    for x in xs:
        got = [g.tobytes() for g in ported.run([x])]
        assert got == [g.tobytes() for g in portable.run([x])]
        it.set_input(x, 0)
        it.invoke()
        assert got == [it.get_output(i).tobytes() for i in range(len(got))]
        assert got == [g.tobytes() for g in wheel.run([x])]


class Kernels:
    """A port and its portable kernel (renamed ..._portable by the port) in one host library."""

    def __init__(self, name: str, symbol: str, tmp: Path) -> None:
        kernels = lower.include_dir()
        (tmp / f"{name}.c").write_text((HOST_PORTS / f"{name}.c").read_text())
        (tmp / f"{name}.portable.inc").write_text((kernels / f"{name}.c").read_text())
        self.lib = ctypes.CDLL(str(host_toolchain().shared_object([tmp / f"{name}.c"], [tmp, HOST_PORTS, kernels],
                                                                  FLAGS)))
        self.port, self.portable = self.lib[symbol], self.lib[f"{symbol}_portable"]

    def call(self, portable: bool, *words) -> None:
        """The kernel on argument words: arrays by address, ints as the 64-bit word of their int32."""
        args = (ctypes.c_size_t * len(words))(*[w.ctypes.data if isinstance(w, np.ndarray) else int(w) & (2**64 - 1)
                                                for w in words])
        _KEEP.append((args, words))
        (self.portable if portable else self.port)(args)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory):
    cache: dict[str, Kernels] = {}

    def get(name: str, symbol: str) -> Kernels:
        if name not in cache:
            cache[name] = Kernels(name, symbol, tmp_path_factory.mktemp(name))
        return cache[name]
    return get


def int16_frames(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Random full-range, both rails, alternating rails, zeros, a ramp through the whole range."""
    frames = [rng.integers(-32768, 32768, n), np.full(n, -32768), np.full(n, 32767), np.zeros(n),
              np.resize([-32768, 32767], n), np.resize([32767, -32768, 0, 1, -1], n),
              np.linspace(-32768, 32767, n).round()]
    return [f.astype(np.int16) for f in frames]


# ---- SignalWindow -------------------------------------------------------------------------------------------------


def window_ref(x: np.ndarray, w: np.ndarray, shift: int) -> np.ndarray:
    frames = x.reshape(-1, len(w)).astype(np.int64) * w
    return np.clip(frames >> shift, -32768, 32767).astype(np.int16).reshape(-1)


@pytest.mark.parametrize("shift", [0, 1, 12, 15, 16, 31])
def test_window(kernels, shift: int) -> None:
    k = kernels("signal_window", "mn_signal_window_s16")
    rng = np.random.default_rng(shift)
    for n in LENGTHS:
        tables = [hann(n), rng.integers(-32768, 32768, n).astype(np.int16), np.resize(np.int16([-32768, 32767]), n)]
        for w in tables:
            for frames in (1, 3):
                for x in int16_frames(rng, n * frames):
                    outs = []
                    for portable in (False, True):
                        out = np.full(n * frames, 777, np.int16)
                        k.call(portable, out, x, w, n * frames, n, shift)
                        outs.append(out)
                    assert outs[0].tobytes() == outs[1].tobytes() == window_ref(x, w, shift).tobytes(), (n, frames)
                    inplace = x.copy()  # the output exactly over the input
                    k.call(False, inplace, inplace, w, n * frames, n, shift)
                    assert inplace.tobytes() == outs[0].tobytes()


def test_window_models() -> None:
    rng = np.random.default_rng(1)
    for shape, w, shift in [((3, 37), hann(37), 12), ((1, 480), hann(480), 12), ((2, 16), np.full(16, -32768), 0),
                            ((4, 20), rng.integers(-32768, 32768, 20), 15)]:
        model = window_model(shape, np.asarray(w, np.int16), shift)
        assert_all_same(model, [x.reshape(shape) for x in int16_frames(rng, int(np.prod(shape)))])


# ---- SignalFftAutoScale -------------------------------------------------------------------------------------------


def scale_ref(x: np.ndarray) -> tuple[np.ndarray, int]:
    peak = running_peak(x.astype(np.int32))
    shift = 15 - peak.bit_length() if peak > 0 else 0
    return ((x.astype(np.int64) << shift) & 0xFFFF).astype(np.uint16).view(np.int16), shift


def scale_frames(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Random frames shrunk to every bit length; a lone peak of every bit length (both signs, both ends of its
    range) at the start, the end and a random place over zeros, small values or -32768s; only -32768s."""
    frames = [(rng.integers(-32768, 32768, n) >> (16 - bits)).astype(np.int16) for bits in range(1, 17)]
    frames += int16_frames(rng, n)
    backs = [np.zeros(n), np.resize([-32768, 0], n), rng.integers(-1, 2, n)]
    for bits in range(1, 16):
        for sign in (1, -1):
            for at in {0, n - 1, int(rng.integers(0, n))}:
                x = backs[len(frames) % 3].astype(np.int16) * (bits > 2 or len(frames) % 3 != 2)
                x[at] = sign * int(rng.choice([1 << (bits - 1), (1 << bits) - 1]))
                frames.append(x)
    return frames


def test_fft_auto_scale(kernels) -> None:
    k = kernels("signal_fft_auto_scale", "mn_signal_fft_auto_scale_s16")
    rng = np.random.default_rng(2)
    for n in LENGTHS:
        for x in scale_frames(rng, n):
            outs, scales = [], []
            for portable in (False, True):
                out, scale = np.full(n, 777, np.int16), np.full(1, -9, np.int32)
                k.call(portable, out, scale, x, n)
                outs.append(out), scales.append(int(scale[0]))
            want, shift = scale_ref(x)
            assert outs[0].tobytes() == outs[1].tobytes() == want.tobytes() and scales == [shift, shift], (n, x)
            inplace, scale = x.copy(), np.zeros(1, np.int32)
            k.call(False, inplace, scale, inplace, n)
            assert inplace.tobytes() == want.tobytes() and scale[0] == shift


def test_fft_auto_scale_models() -> None:
    rng = np.random.default_rng(3)
    for n in (37, 480):
        frames = scale_frames(rng, n)[::5]
        late = np.zeros(n, np.int16)  # a -32768 after the peak restarts it; negatives after it walk it up
        late[[1, n // 2, n // 2 + 1, n // 2 + 2, n - 2]] = [20000, -32768, -900, -700, 50]
        assert_all_same(scale_model(n), frames + [late])


# ---- SignalEnergy ---------------------------------------------------------------------------------------------


def energy_ref(x: np.ndarray, count: int, start: int, end: int) -> np.ndarray:
    v = x.astype(np.int64).reshape(-1, 2)
    out = np.zeros(count, np.uint32)
    out[start:end] = (v[start:end] ** 2).sum(axis=1)
    return out


def test_energy(kernels) -> None:
    k = kernels("signal_energy", "mn_signal_energy_s16")
    rng = np.random.default_rng(4)
    for count in LENGTHS:
        ranges = {(0, count), (0, 0), (count, count), (count // 2, count // 2), (count - 1, count),
                  (min(5, count), count), (min(3, count), max(count - 2, min(3, count)))}
        ranges |= {tuple(sorted(rng.integers(0, count + 1, 2))) for _ in range(4)}
        ranges |= {(3, 1)} if count > 3 else set()  # start past end: nothing but zeros
        for start, end in sorted(ranges):
            for x in int16_frames(rng, 2 * count):
                outs = []
                for portable in (False, True):
                    out = np.full(count, 0xDEADBEEF, np.uint32)
                    k.call(portable, out, x, count, start, end)
                    outs.append(out)
                want = energy_ref(x, count, start, max(start, end))
                assert outs[0].tobytes() == outs[1].tobytes() == want.tobytes(), (count, start, end)


def test_energy_models() -> None:
    rng = np.random.default_rng(5)
    for n_in, n_out, start, end in [(514, 257, 0, 257), (37, 18, 0, 18)]:
        assert_all_same(energy_model(n_in, n_out, start, end), int16_frames(rng, n_in))


# ---- SignalFilterBank -------------------------------------------------------------------------------------------


def bank_ref(x: np.ndarray, w: np.ndarray, u: np.ndarray, bands: np.ndarray, nch: int) -> np.ndarray:
    out = [0] * nch
    for c, f, s, n in bands.reshape(-1, 4).tolist():
        bins = [int(v) for v in x[f:f + n]]
        rising = sum(int(a) * b for a, b in zip(w[s:s + n], bins))
        falling = sum(int(a) * b for a, b in zip(u[s:s + n], bins))
        if c >= 1:
            out[c - 1] += rising
        if c < nch:
            out[c] += falling
    return np.array([v % 2**64 for v in out], np.uint64)


def chain_tables(rng: np.random.Generator, n_in: int, nch: int, signed: bool) -> tuple[np.ndarray, ...]:
    """Bands 0 .. nch, each a whole number of 4 bins (the port's chain layout: 1 to 7 quads, each count its own
    code), overlapping bins, random or mel-like weights."""
    width = rng.integers(1, 8, nch + 1) * 4
    freq = np.array([rng.integers(0, n_in - n + 1) for n in width])
    start = np.concatenate([[0], np.cumsum(width)[:-1]])
    n_w = int(width.sum())
    if signed:
        weights, unweights = rng.integers(-32768, 32768, n_w), rng.integers(-32768, 32768, n_w)
    else:
        weights = rng.integers(0, 4097, n_w)
        unweights = 4096 - weights
    return tuple(t.astype(np.int16) for t in (weights, unweights, freq, start, width))


def kept_bands(tables: tuple, nch: int) -> np.ndarray:
    """The bands prepare keeps (positive widths) as the lowering passes them: (c, bin, weight, width) words."""
    _, _, freq, start, width = tables
    return np.array([(c, freq[c], start[c], width[c]) for c in range(nch + 1) if width[c] > 0], np.int32).reshape(-1)


def bank_inputs(rng: np.random.Generator, n_in: int) -> list[np.ndarray]:
    below = [rng.integers(0, 2**31, n_in), rng.integers(0, 2**20, n_in), np.full(n_in, 2**31 - 1), np.zeros(n_in),
             np.resize([2**31 - 1, 0, 1], n_in)]
    above = [np.full(n_in, 2**32 - 1), rng.integers(0, 2**32, n_in), np.full(n_in, 2**31)]
    one_high = rng.integers(0, 2**31, n_in)
    one_high[int(rng.integers(0, n_in))] = 2**31
    return [v.astype(np.uint32) for v in [*below, *above, one_high]]


def bank_tables(rng: np.random.Generator) -> list[tuple[int, int, tuple]]:
    cases = [(257, 40, chain_tables(rng, 257, 40, False)), (257, 40, chain_tables(rng, 257, 40, True)),
             (64, 1, chain_tables(rng, 64, 1, True)), (40, 7, chain_tables(rng, 40, 7, True)),
             (257, 40, mel_tables(257, 40)), (129, 10, mel_tables(129, 10)), (16, 3, mel_tables(16, 3))]
    for _ in range(12):
        n_in, nch = int(rng.integers(1, 40)), int(rng.integers(0, 12))
        cases.append((n_in, nch, random_tables(rng, n_in, nch)))
    return cases


def test_filter_bank(kernels) -> None:
    k = kernels("signal_filter_bank", "mn_signal_filter_bank_u32")
    rng = np.random.default_rng(6)
    for n_in, nch, tables in bank_tables(rng):
        w, u = tables[0], tables[1]
        bands = kept_bands(tables, nch)
        for x in bank_inputs(rng, n_in):
            outs = []
            for portable in (False, True):
                out = np.full(max(nch, 1), 0xDEADBEEF, np.uint64)
                k.call(portable, out, x, w, u, bands, len(bands) // 4, nch)
                outs.append(out[:nch])
            want = bank_ref(x, w, u, bands, nch)
            assert outs[0].tobytes() == outs[1].tobytes() == want.tobytes(), (n_in, nch)


def test_filter_bank_models(kernels) -> None:
    """uint64 outputs cannot be a NativeModel's: the port, called on the bands the lowering passes, against the
    interpreter and the wheel running the one-op model."""
    k = kernels("signal_filter_bank", "mn_signal_filter_bank_u32")
    rng = np.random.default_rng(7)
    for n_in, nch, tables in [(257, 40, chain_tables(rng, 257, 40, True)), (257, 40, mel_tables(257, 40))]:
        model, bands = bank_model(n_in, tables, nch), kept_bands(tables, nch)
        it, wheel = Interpreter(model), _Tflm(model)
        for x in bank_inputs(rng, n_in):
            out = np.zeros(nch, np.uint64)
            k.call(False, out, x, tables[0], tables[1], bands, len(bands) // 4, nch)
            it.set_input(x, 0)
            it.invoke()
            assert out.tobytes() == it.get_output(0).tobytes() == wheel.run([x])[0].tobytes()


# ---- audio_preprocessor end to end ------------------------------------------------------------------------------


def test_audio_preprocessor() -> None:
    """Real speech, then frames at the rails, alternating, single peaks and loud noise, one after another with the
    state carried (the noise estimate and PCAN), ported vs portable vs one wheel interpreter over the same frames;
    and each frame from the initial state, ported vs portable."""
    from tflite_micro.python.tflite_micro import runtime

    model = bundled_model("audio_preprocessor_int8")
    rng = np.random.default_rng(8)
    frames = [bundled_audio(name)[i * HOP:i * HOP + WINDOW] for name in ("yes", "no") for i in range(0, FRAMES, 4)]
    frames += int16_frames(rng, WINDOW)
    for bits in (1, 5, 9, 13, 15):
        peak = np.zeros(WINDOW, np.int16)
        peak[int(rng.integers(0, WINDOW))] = (1 << bits) - 1
        frames.append(peak)
    x = np.stack(frames).reshape(len(frames), 1, WINDOW)
    ported, portable = NativeModel(model), NativeModel(model, host_ports=False)
    got = ported.run_chunk([x], reset=False)[0][0]
    assert got.tobytes() == portable.run_chunk([x], reset=False)[0][0].tobytes()
    it = runtime.Interpreter.from_bytes(model, arena_size=1 << 16)
    wheel = []
    for frame in x:
        it.set_input(frame, 0)
        it.invoke()
        wheel.append(np.array(it.get_output(0), copy=True))
    assert got.tobytes() == np.stack(wheel).tobytes()
    fresh = NativeModel(model)
    assert fresh.run_chunk([x])[0][0].tobytes() == NativeModel(model, host_ports=False).run_chunk([x])[0][0].tobytes()
