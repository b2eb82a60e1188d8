"""Fuzz the TFLM signal-library kernels against the wheel, byte for byte, on adversarial inputs and options.

Every op micronn implements from TFLM's signal library, and the bundled audio_preprocessor_int8, is run on frames
drawn from a seeded mix of input classes meant to reach the branches tidy edge cases miss (SignalFftAutoScale's
running int16 peak wrapping at a late -32768 was one): the integer rails and their neighbours, powers of two and
their neighbours, constant runs, sorted, reversed and alternating sequences, magnitudes cut to every bit length,
a rail dropped into small values, and plain uniform noise; options at the limits TFLM accepts (shifts at 0 and at
their maxima, odd lengths, ranges at the bounds); many frames through the stateful ops, with resets. Where the
classes an op tells apart are few, all are run (every log fraction, every PCAN gain class, every short auto-scale
frame over the peak's turning points). Random front ends chain the ops with random sizes and options, and
audio_preprocessor streams adversarial frames; both also run natively, with and without host ports. Hypothesis
(derandomized) drives two ops so that a mismatch shrinks to a shortest frame. Everything is seeded: a failure
replays by its test id.
"""

from __future__ import annotations

import numpy as np
import pytest
from _signal_streams import RESET, compare_streams
from hypothesis import given, settings
from hypothesis import strategies as st
from test_signal_delay import delay_model
from test_signal_energy import energy_model
from test_signal_fft_auto_scale import scale_model
from test_signal_filter_bank import bank_model, mel_tables, random_tables
from test_signal_filter_bank_log import log_model
from test_signal_filter_bank_spectral_subtraction import MICRO_SPEECH, subtraction_model
from test_signal_filter_bank_square_root import sqrt_model
from test_signal_framer import framer_model
from test_signal_irfft import irfft_model
from test_signal_overlap_add import ola_model
from test_signal_pcan import pcan_model, smooth_lut
from test_signal_rfft import rfft_model
from test_signal_stacker import stacker_model, written_when_valid
from test_signal_window import window_model

from micronn import Interpreter
from micronn.kernels._custom_options import custom_options
from micronn.kernels._signal_fft import real_fft_length_ok
from micronn.testing import Graph, Op, T, _micronn, _Tflm, assert_identical, graph_model

RANGES = {"int16": (-(1 << 15), (1 << 15) - 1), "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
          "uint64": (0, (1 << 64) - 1)}
BITS = {"int16": 16, "int32": 32, "uint32": 32, "uint64": 64}


def specials(dtype: str) -> np.ndarray:
    """The rails, 0, +-1, and every power of two with its neighbours (and their negations for signed types), as
    Python ints within the type's range."""
    lo, hi = RANGES[dtype]
    values = {lo, lo + 1, hi, hi - 1, 0, 1, -1, 2, -2}
    for b in range(BITS[dtype]):
        for v in (1 << b) - 1, 1 << b, (1 << b) + 1, 3 << b >> 1:
            values |= {v, -v}
    return np.array(sorted(v for v in values if lo <= v <= hi), object)


def frame(rng: np.random.Generator, dtype: str, n: int, kind: int | None = None) -> np.ndarray:
    """One adversarial frame of ``n`` values of ``dtype``; ``kind`` picks the input class (random when None)."""
    lo, hi = RANGES[dtype]
    bits = BITS[dtype]
    sp = specials(dtype)
    if n == 0:
        return np.zeros(0, dtype)

    def uniform(size: int) -> np.ndarray:
        return np.array([int(v) for v in rng.integers(0, 1 << bits, size, dtype=np.uint64)], object) + lo

    def cut(v: np.ndarray) -> np.ndarray:  # every magnitude: shift right by 0 .. bits - 1 (floor keeps the sign)
        return np.array([int(a) >> int(s) for a, s in zip(v, rng.integers(0, bits, len(v)), strict=True)], object)

    kind = int(rng.integers(0, 10)) if kind is None else kind
    if kind == 0:
        v = uniform(n)
    elif kind == 1:
        v = rng.choice(sp, n)
    elif kind == 2:
        v = cut(uniform(n))
    elif kind == 3:  # constant runs of special values
        v = np.repeat(rng.choice(sp, n), rng.integers(1, 9, n))[:n]
    elif kind == 4:
        v = np.sort(cut(uniform(n)))
    elif kind == 5:
        v = np.sort(cut(uniform(n)))[::-1]
    elif kind == 6:  # alternating between two special values
        a, b = rng.choice(sp, 2)
        v = np.where(np.arange(n) % 2 == 0, a, b).astype(object)
    elif kind == 7:  # small values with a rail or two dropped in
        v = np.array([int(x) for x in rng.integers(-3 if lo else 0, 4, n)], object)
        v[rng.integers(0, n, int(rng.integers(1, 3)))] = rng.choice([lo, hi, lo + 1, hi - 1], 2)[0]
    elif kind == 8:  # one magnitude everywhere, random signs
        m = int(rng.choice(sp))
        v = np.array([m if s else -m for s in rng.integers(0, 2, n)], object)
    else:  # a mix of everything, element by element
        v = np.where(rng.random(n) < 0.5, rng.choice(sp, n), cut(uniform(n)))
    return np.array([min(max(int(x), lo), hi) for x in v[:n]], object).astype(dtype)


def same(model: bytes, steps: list) -> None:
    """Feed every step (a list of inputs, or RESET) to one wheel and one micronn interpreter, comparing all outputs."""
    tflm, mine = _Tflm(model), _micronn(model)
    for k, step in enumerate(steps):
        if isinstance(step, str):
            tflm._call("resetting", tflm.it.reset)
            mine.reset()
            continue
        _check(tflm, mine, step, f"step {k}, ")


def _check(tflm: _Tflm, mine: Interpreter, inputs: list[np.ndarray], where: str = "") -> None:
    """One invoke of both on ``inputs``, every output compared byte for byte."""
    expected = tflm.run(inputs)
    for i, x in enumerate(inputs):
        mine.set_input(x, i)
    mine.invoke()
    for i, e in enumerate(expected):
        assert_identical(np.array(mine.get_output(i), copy=True), e, f"{where}output {i}")


def frames(rng: np.random.Generator, dtype: str, n: int, count: int) -> list[np.ndarray]:
    """``count`` frames, every input class once before any repeats."""
    return [frame(rng, dtype, n, k % 10 if k < 10 else None) for k in range(count)]


def test_generator_reaches_the_rails() -> None:
    rng = np.random.default_rng(0)
    for dtype in RANGES:
        seen = np.concatenate([np.asarray(f, object) for f in frames(rng, dtype, 64, 40)])
        lo, hi = RANGES[dtype]
        assert {lo, hi, 0, 1}.issubset({int(v) for v in seen}), dtype
        assert str(frame(rng, dtype, 5).dtype) == dtype and len(frame(rng, dtype, 0)) == 0


@pytest.mark.parametrize("seed", range(3))
def test_fft_auto_scale(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 15, 16, 17, 33, 480):
        same(scale_model(n), [[x] for x in frames(rng, "int16", n, 12)])


def test_fft_auto_scale_every_short_sequence() -> None:
    """Every frame of up to three samples drawn from values around the peak's turning points (the rails, the bit
    lengths 15 and 16, signs), so every order of a -32768 against larger and smaller magnitudes is met."""
    values = [-32768, -32767, -16385, -16384, -255, -1, 0, 1, 256, 16383, 16384, 32767]
    for n in (1, 2, 3):
        values = values if n < 3 else values[::2] + [32767]
        grid = np.array(np.meshgrid(*[values] * n, indexing="ij")).reshape(n, -1).T.astype(np.int16)
        same(scale_model(n), [[x] for x in grid])


@pytest.mark.parametrize("seed", range(3))
def test_window(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for shift in (0, 1, 15, 16, 30, 31, int(rng.integers(0, 32))):
        length, count = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        model = window_model((count * length,), frame(rng, "int16", length), shift)
        same(model, [[x] for x in frames(rng, "int16", count * length, 4)])


@pytest.mark.parametrize("seed", range(3))
def test_energy(seed: int) -> None:
    """Ranges over all the output's bins (TFLM leaves the others unwritten), inputs of one or two extra samples."""
    rng = np.random.default_rng(seed)
    for _ in range(6):
        bins = int(rng.integers(1, 40))
        n = 2 * bins + int(rng.integers(0, 3))
        same(energy_model(n, bins, 0, bins), [[x] for x in frames(rng, "int16", n, 4)])


@pytest.mark.parametrize("dtype", ["int16", "int32"])
@pytest.mark.parametrize("seed", range(2))
def test_rfft(dtype: str, seed: int) -> None:
    """Random lengths the wheel accepts (up to 600), frames of the full length or shorter (zero padded)."""
    rng = np.random.default_rng(seed)
    lengths = [n for n in range(4, 600, 2) if real_fft_length_ok(n)]
    for _ in range(8):
        fft_length = int(rng.choice(lengths))
        n = fft_length if rng.random() < 0.6 else int(rng.integers(1, fft_length + 1))
        same(rfft_model(fft_length, dtype, frame=n, lead=(10,)), [[np.stack(frames(rng, dtype, n, 10))]])


@pytest.mark.parametrize("dtype", ["int16", "int32"])
@pytest.mark.parametrize("seed", range(2))
def test_irfft(dtype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = [n for n in range(4, 600, 2) if real_fft_length_ok(n)]
    for _ in range(8):
        fft_length = int(rng.choice(lengths))
        same(irfft_model(fft_length, dtype, lead=(10,)), [[np.stack(frames(rng, dtype, fft_length + 2, 10))]])


@pytest.mark.parametrize("seed", range(3))
def test_filter_bank(seed: int) -> None:
    """Random band tables (empty and negative widths included) with weights from the generator (rails, negatives:
    the uint64 sums wrap), and mel tables."""
    rng = np.random.default_rng(seed)
    for k in range(8):
        n_in, channels = int(rng.integers(1, 60)), int(rng.integers(0, 14))
        tables = list(random_tables(rng, n_in, channels))
        if k % 2:
            tables[0], tables[1] = frame(rng, "int16", len(tables[0])), frame(rng, "int16", len(tables[1]))
        same(bank_model(n_in, tuple(tables), channels), [[x] for x in frames(rng, "uint32", n_in, 3)])
    same(bank_model(257, mel_tables(257, 40), 40), [[x] for x in frames(rng, "uint32", 257, 10)])


@pytest.mark.parametrize("seed", range(3))
def test_filter_bank_square_root(seed: int) -> None:
    """The shift as a constant and as an input, over the generator's uint64 frames."""
    rng = np.random.default_rng(seed)
    for shift in (0, 1, 15, 16, 31, int(rng.integers(0, 32))):
        n = int(rng.integers(1, 70))
        same(sqrt_model(n, shift), [[x] for x in frames(rng, "uint64", n, 3)])
        same(sqrt_model(n), [[x, np.array(shift, np.int32)] for x in frames(rng, "uint64", n, 3)])


def test_filter_bank_square_root_near_random_squares() -> None:
    """Around the squares of random roots of every size: r * r and its neighbours, the rounding points
    r * r + r and r * r + r + 1, the next square's neighbours."""
    rng = np.random.default_rng(0)
    roots = np.concatenate([rng.integers(0, 2**32, 800, dtype=np.uint64) >> rng.integers(0, 32, 800).astype(np.uint64),
                            np.arange(300, dtype=np.uint64), 2**32 - 1 - np.arange(50, dtype=np.uint64)])
    values = sorted({r * r + d for r in roots.tolist()
                     for d in (-r - 1, -r, -1, 0, 1, r - 1, r, r + 1, 2 * r, 2 * r + 1) if 0 <= r * r + d < 2**64})
    x = np.array(values, np.uint64)
    for shift in (0, 7, 31):
        same(sqrt_model(len(x), shift), [[x]])


@pytest.mark.parametrize("seed", range(3))
def test_filter_bank_log(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(6):
        n, bits = int(rng.integers(1, 70)), int(rng.choice([0, 1, 30, 31, int(rng.integers(0, 32))]))
        scale = int(rng.choice([0, 1, 64, 1489, 32767, 32768, 65536, 2**31, 2**32 - 1, -1,
                                int(rng.integers(0, 2**32))]))
        same(log_model(n, scale, bits), [[x] for x in frames(rng, "uint32", n, 3)])


def test_filter_bank_log_every_fraction() -> None:
    """Every input TFLM's log tells apart: all values below 2**16, then for each leading-one position from 16 up
    every 16-bit fraction below it (the lower bits are truncated away), at the scale micro_speech uses and at one
    whose product wraps."""
    t = np.arange(1 << 16, dtype=np.uint64)
    x = np.concatenate([t, *[(np.uint64(1) << np.uint64(p)) + (t << np.uint64(p - 16)) for p in range(16, 32)]])
    x = x.astype(np.uint32)
    for scale in (64, 2**32 - 1):
        same(log_model(len(x), scale, 0), [[x]])


@pytest.mark.parametrize("seed", range(3))
def test_pcan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for k in range(6):
        n, shift = int(rng.integers(1, 70)), int(rng.choice([0, 1, 31, 32, 62, 63, int(rng.integers(0, 64))]))
        lut = smooth_lut() if k == 0 else frame(rng, "int16", 125 + int(rng.integers(0, 3)))
        inputs = zip(frames(rng, "uint32", n, 3), frames(rng, "uint32", n, 3), strict=True)
        same(pcan_model(n, lut, shift), [[x, e] for x, e in inputs])


def test_pcan_every_bit_length_and_fraction() -> None:
    """Every noise estimate the gain tells apart (all below 2**11, then each bit length's 1,024 fractions), with
    tables from the generator and inputs at the top rail or random."""
    rng = np.random.default_rng(0)
    f = np.arange(1 << 10, dtype=np.uint64)
    e = np.concatenate([np.arange(1 << 11, dtype=np.uint64),
                        *[(np.uint64(1) << np.uint64(b - 1)) + (f << np.uint64(b - 11)) for b in range(12, 33)]])
    e = e.astype(np.uint32)
    for k in range(4):
        lut = smooth_lut() if k == 0 else frame(rng, "int16", 125)
        x = frame(rng, "uint32", len(e)) if k % 2 else np.full(len(e), 2**32 - 1, np.uint32)
        same(pcan_model(len(e), lut, int(rng.integers(0, 64))), [[x, e]])


@pytest.mark.parametrize("seed", range(4))
def test_spectral_subtraction(seed: int) -> None:
    """Coefficients at the uint32 rails and around micro_speech's, shifts at their limits, odd channel counts (the
    alternate pair), clamping on and off, a dozen frames with a steady level and jumps, a reset."""
    rng = np.random.default_rng(seed)

    def coefficient() -> int:
        return int(rng.choice([0, 1, 409, 15975, 16384, 2**31, 2**32 - 1, -1, int(rng.integers(0, 2**32)),
                               int(rng.integers(0, 2**15))]))

    for _ in range(5):
        n = int(rng.integers(0, 20))
        options = dict(MICRO_SPEECH, num_channels=n, smoothing=coefficient(), one_minus_smoothing=coefficient(),
                       alternate_smoothing=coefficient(), alternate_one_minus_smoothing=coefficient(),
                       min_signal_remaining=coefficient(), clamping=bool(rng.integers(0, 2)),
                       smoothing_bits=int(rng.choice([0, 1, 10, 31, int(rng.integers(0, 32))])),
                       spectral_subtraction_bits=int(rng.choice([0, 1, 14, 32, 63, int(rng.integers(0, 64))])))
        level = frame(rng, "uint32", n)
        steps: list = [[level if rng.random() < 0.4 else frame(rng, "uint32", n)] for _ in range(12)]
        same(subtraction_model(**options), [*steps[:8], RESET, *steps[8:]])


def stream_of(rng: np.random.Generator, shape: tuple, count: int, dtype: str = "int16") -> list:
    """``count`` steps of the generator's frames, a reset now and then."""
    n = int(np.prod(shape))
    return [RESET if rng.random() < 0.1 else frame(rng, dtype, n).reshape(shape) for _ in range(count)]


@pytest.mark.parametrize("seed", range(3))
def test_delay(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(6):
        delay = int(rng.choice([0, 1, 2, 7, 31, int(rng.integers(0, 50))]))
        shape = tuple(int(v) for v in rng.integers(1, 6, int(rng.integers(1, 4))))
        compare_streams(delay_model(delay, shape), stream_of(rng, shape, 15))


@pytest.mark.parametrize("seed", range(3))
def test_framer(seed: int) -> None:
    """Frames shorter and longer than the step, prefill (which needs a frame at least a step long), leading rows,
    several frames an invoke; only the frames TFLM has written are compared."""
    rng = np.random.default_rng(seed)
    for _ in range(6):
        step, size = int(rng.integers(1, 9)), int(rng.integers(1, 20))
        prefill = bool(rng.integers(0, 2)) and size >= step
        lead = tuple(int(v) for v in rng.integers(1, 4, int(rng.integers(0, 2))))
        count = int(rng.integers(1, 4))
        steps = stream_of(rng, (*lead, count * step), 16)
        silent = 0 if prefill else -(-size // step) - 1
        masks, pieces = [], 0
        for s in steps:
            if isinstance(s, str):
                pieces = 0
                continue
            mask = np.zeros((*lead, count, size), bool)
            mask[..., max(silent - pieces, 0):, :] = True
            masks.append(mask)
            pieces += count
        compare_streams(framer_model(size, step, prefill, lead, count), steps, lambda k, _, m=masks: m[k])


@pytest.mark.parametrize("seed", range(3))
def test_overlap_add(seed: int) -> None:
    """int16 sums saturating at the rails, steps from 1 to the frame size."""
    rng = np.random.default_rng(seed)
    for _ in range(6):
        size = int(rng.integers(1, 20))
        step = int(rng.integers(1, size + 1))
        lead = tuple(int(v) for v in rng.integers(1, 4, int(rng.integers(0, 2))))
        count = int(rng.integers(1, 4))
        compare_streams(ola_model("int16", size, step, lead, count), stream_of(rng, (*lead, count, size), 16))


@pytest.mark.parametrize("seed", range(3))
def test_stacker(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(6):
        channels, left, right = int(rng.integers(1, 6)), int(rng.integers(0, 5)), int(rng.integers(0, 4))
        step = int(rng.integers(1, left + right + 2))
        compare_streams(stacker_model(channels, left, right, step), stream_of(rng, (channels,), 20), written_when_valid)


def audio_frames(rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """The generator's frames; a third of them quietened with a rail or two put back; a sixth quiet with a loud
    sample and then a -32768 in the window's middle, where its weight is large enough for the -32768 to survive
    (it restarts SignalFftAutoScale's running peak)."""
    out = []
    for _ in range(count):
        x = frame(rng, "int16", 480)
        u = rng.random()
        if u < 0.5:
            x = (x.astype(np.int32) >> int(rng.integers(4 if u < 0.3 else 8, 16))).astype(np.int16)
        if u < 0.3:
            x[rng.integers(0, 480, int(rng.integers(1, 4)))] = rng.choice([-32768, 32767])
        elif u < 0.5:
            at = int(rng.integers(200, 280))
            x[int(rng.integers(60, at))] = rng.choice([-32767, 32767, int(rng.integers(-32767, 32768))])
            x[at] = -32768
        out.append(x.reshape(1, 480))
    return out


def test_audio_preprocessor_stream() -> None:
    """Adversarial frames streamed through the bundled front end (its noise estimate carries over): the wheel, the
    interpreter, and the native model with and without host ports, frame by frame; then one native chunk each, from
    the initial state per frame and streamed."""
    from micronn.export import NativeModel
    from micronn.models import bundled_model

    model = bundled_model("audio_preprocessor_int8")
    xs = audio_frames(np.random.default_rng(0), 300)
    tflm, mine = _Tflm(model), Interpreter(model)
    natives = [NativeModel(model), NativeModel(model, host_ports=False)]
    want = []
    for k, x in enumerate(xs):
        expected = tflm.run([x])[0]
        mine.set_input(x, 0)
        mine.invoke()
        assert_identical(mine.get_output(0), expected, f"frame {k}, interpreter")
        for native in natives:
            assert_identical(native.run([x])[0], expected, f"frame {k}, native (host ports: {native is natives[0]})")
        want.append(expected)
    chunk = np.ascontiguousarray(np.stack(xs))
    fresh = np.stack([_Tflm(model).run([x])[0] for x in xs[:40]])
    for native in natives:
        outs, done, _ = native.run_chunk([chunk[:40]], reset=True)
        assert done == 40
        assert_identical(outs[0], fresh, "chunk from the initial state")
        native.reset()
        outs, done, _ = native.run_chunk([chunk], reset=False)
        assert done == len(xs)
        assert_identical(outs[0], np.stack(want), "streamed chunk")


def front_end(rng: np.random.Generator) -> tuple[bytes, int]:
    """A random micro_speech-like front end (window, auto scale, FFT, energy, filter bank, square root, spectral
    subtraction, PCAN, log) with random lengths, tables and options, as one model (the planners share its buffers
    in other ways than in audio_preprocessor's); returns it and its frame length."""
    lengths = [n for n in range(16, 520, 2) if real_fft_length_ok(n)]
    fft = int(rng.choice(lengths))
    n, half, channels = int(rng.integers(fft // 2, fft + 1)), fft // 2 + 1, int(rng.integers(1, 41))
    w, u, freq, start, width = random_tables(rng, half, channels)
    if rng.random() < 0.5:
        w, u = frame(rng, "int16", len(w)), frame(rng, "int16", len(u))
    else:  # small positive weights: sums that do not wrap
        w, u = (np.abs(w) >> 3).astype(np.int16), (np.abs(u) >> 3).astype(np.int16)
    lut = smooth_lut() if rng.random() < 0.5 else frame(rng, "int16", 125)
    subtraction = dict(MICRO_SPEECH, num_channels=channels, clamping=bool(rng.integers(0, 2)),
                       smoothing_bits=int(rng.integers(0, 16)), spectral_subtraction_bits=int(rng.integers(0, 20)))
    c = channels
    tensors = {
        "x": T((n,), "int16"), "window": T((n,), "int16", data=frame(rng, "int16", n)), "windowed": T((n,), "int16"),
        "scaled": T((n,), "int16"), "shift": T((), "int32"), "spectrum": T((fft + 2,), "int16"),
        "energy": T((half,), "uint32"), "w": T((len(w),), "int16", data=w), "u": T((len(u),), "int16", data=u),
        "freq": T((c + 1,), "int16", data=freq), "start": T((c + 1,), "int16", data=start),
        "width": T((c + 1,), "int16", data=width), "bank": T((c,), "uint64"), "root": T((c,), "uint32"),
        "clean": T((c,), "uint32"), "noise": T((c,), "uint32"), "lut": T((125,), "int16", data=lut),
        "gained": T((c,), "uint32"), "log": T((c,), "int16"),
    }
    ops = [
        Op("SignalWindow", ["x", "window"], ["windowed"],
           custom_options=custom_options(shift=int(rng.integers(0, 16)))),
        Op("SignalFftAutoScale", ["windowed"], ["scaled", "shift"]),
        Op("SignalRfft", ["scaled"], ["spectrum"], custom_options=custom_options(T=7, fft_length=fft)),
        Op("SignalEnergy", ["spectrum"], ["energy"], custom_options=custom_options(start_index=0, end_index=half)),
        Op("SignalFilterBank", ["energy", "w", "u", "freq", "start", "width"], ["bank"],
           custom_options=custom_options(num_channels=c)),
        Op("SignalFilterBankSquareRoot", ["bank", "shift"], ["root"]),
        Op("SignalFilterBankSpectralSubtraction", ["root"], ["clean", "noise"],
           custom_options=custom_options(**subtraction)),
        Op("SignalPCAN", ["clean", "noise", "lut"], ["gained"],
           custom_options=custom_options(snr_shift=int(rng.integers(0, 64)))),
        Op("SignalFilterBankLog", ["gained"], ["log"], custom_options=custom_options(
            input_correction_bits=int(rng.integers(0, 32)), output_scale=int(rng.integers(0, 2**32)))),
    ]
    return graph_model(Graph(tensors, ops, ["x"], ["log", "noise"])), n


@pytest.mark.parametrize("seed", range(3))
def test_random_front_ends(seed: int) -> None:
    """Streams of the generator's frames through a random front end: the wheel, the interpreter and the native
    model with and without host ports."""
    from micronn.export import NativeModel

    rng = np.random.default_rng(seed)
    model, n = front_end(rng)
    tflm, mine = _Tflm(model), Interpreter(model)
    natives = [NativeModel(model), NativeModel(model, host_ports=False)]
    for k, x in enumerate(frames(rng, "int16", n, 12)):
        expected = tflm.run([x])
        mine.set_input(x, 0)
        mine.invoke()
        for i, e in enumerate(expected):
            assert_identical(mine.get_output(i), e, f"frame {k}, output {i}, interpreter")
        for native in natives:
            for i, (a, e) in enumerate(zip(native.run([x]), expected, strict=True)):
                assert_identical(a, e, f"frame {k}, output {i}, native (host ports: {native is natives[0]})")


INT16_EDGES = [int(v) for v in specials("int16")]
int16s = st.one_of(st.sampled_from(INT16_EDGES), st.integers(-32768, 32767), st.integers(-300, 300))
_pairs: dict[bytes, tuple] = {}


def pair(model: bytes) -> tuple:
    """One wheel and one micronn interpreter per model, kept across examples (the ops here keep no state)."""
    if model not in _pairs:
        _pairs[model] = (_Tflm(model), _micronn(model))
    return _pairs[model]


def same_once(model: bytes, inputs: list[np.ndarray]) -> None:
    _check(*pair(model), inputs)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(int16s, min_size=1, max_size=40))
def test_fft_auto_scale_hypothesis(values: list[int]) -> None:
    """Shrinks a mismatch to a shortest frame: lists mixing the int16 edges, small values and anything."""
    same_once(scale_model(len(values)), [np.array(values, np.int16)])


@settings(derandomize=True, max_examples=100, deadline=None)
@given(st.lists(int16s, min_size=1, max_size=24), st.lists(int16s, min_size=1, max_size=8), st.integers(0, 31))
def test_window_hypothesis(values: list[int], weights: list[int], shift: int) -> None:
    n = len(values) - len(values) % len(weights) or len(weights)
    x = np.resize(np.array(values, np.int16), n)
    same_once(window_model((n,), np.array(weights, np.int16), shift), [x])
