"""SignalFilterBankSpectralSubtraction against the TFLM wheel, byte for byte over sequences of invokes (it keeps a
noise estimate per channel) and across reset: micro_speech's options, random coefficients of any int (TFLM keeps
their low 32 bits), every shift, clamping; bad models are refused."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import PrepareError, UnsupportedError
from micronn.kernels._custom_options import custom_options
from micronn.testing import Graph, Op, T, TflmError, _micronn, _Tflm, assert_identical, graph_model, op_model, run_tflm

RESET = "reset"
MICRO_SPEECH = dict(alternate_one_minus_smoothing=15401, alternate_smoothing=983, clamping=False,
                    min_signal_remaining=819, num_channels=40, one_minus_smoothing=15975, smoothing=409,
                    smoothing_bits=10, spectral_subtraction_bits=14)
COEFFICIENTS = ("smoothing", "one_minus_smoothing", "alternate_smoothing", "alternate_one_minus_smoothing",
                "min_signal_remaining")


def subtraction_model(sizes: tuple | None = None, dtypes: tuple = ("uint32",) * 3,
                      options: bytes | None = None, **changes) -> bytes:
    o = dict(MICRO_SPEECH, **changes)
    n_in, n_out, n_noise = sizes or (o["num_channels"],) * 3
    return op_model("SignalFilterBankSpectralSubtraction", [T((n_in,), dtypes[0])],
                    [T((n_out,), dtypes[1]), T((n_noise,), dtypes[2])],
                    custom_options=custom_options(**o) if options is None else options)


def frames(n: int, count: int, seed: int) -> list[np.ndarray]:
    """Channel energies of every magnitude, some steady (the estimate converges) and some jumping."""
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 2**32, n, dtype=np.uint64) >> rng.integers(0, 32, n).astype(np.uint64)
    out = []
    for _ in range(count):
        jump = rng.integers(0, 2**32, n, dtype=np.uint64) >> rng.integers(0, 32, n).astype(np.uint64)
        out.append(np.where(rng.random(n) < 0.3, jump, level).astype(np.uint32))
    return out


def compare(model: bytes, steps: Sequence[np.ndarray | list | str]) -> None:
    """Run ``steps`` (an invoke's input or list of inputs, or RESET) on one TFLM and one micronn interpreter."""
    tflm, mine = _Tflm(model), _micronn(model)
    for k, step in enumerate(steps):
        if isinstance(step, str):
            tflm.it.reset()
            mine.reset()
            continue
        xs = step if isinstance(step, list) else [step]
        expected = tflm.run(xs)
        for i, x in enumerate(xs):
            mine.set_input(x, i)
        mine.invoke()
        for i, e in enumerate(expected):
            assert_identical(mine.get_output(i), e, f"step {k}, output {i}")


@pytest.mark.parametrize("clamping", [False, True])
def test_micro_speech_options(clamping: bool) -> None:
    xs = frames(40, 8, 0)
    compare(subtraction_model(clamping=clamping), [*xs, RESET, *xs[:3], RESET, *xs[5:]])


@pytest.mark.parametrize("seed", range(10))
def test_random_options(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 24))
    o = {k: int(rng.integers(-2**40, 2**40)) if seed % 2 else int(rng.integers(0, 2**16)) for k in COEFFICIENTS}
    o.update(num_channels=n, smoothing_bits=int(rng.integers(0, 32)),
             spectral_subtraction_bits=int(rng.integers(0, 64)), clamping=bool(seed % 3))
    xs = frames(n, 6, seed)
    compare(subtraction_model(**o), [*xs, RESET, *xs])


@pytest.mark.parametrize("bits,sub_bits", [(0, 0), (31, 63), (0, 63), (31, 0), (10, 32)], ids=str)
def test_extreme_shifts(bits: int, sub_bits: int) -> None:
    xs = frames(6, 5, bits + sub_bits) + [np.full(6, 2**32 - 1, np.uint32), np.zeros(6, np.uint32)]
    for clamping in (0, 2):  # an int flag: any non-zero value clamps
        model = subtraction_model(num_channels=6, smoothing_bits=bits, spectral_subtraction_bits=sub_bits,
                                  clamping=clamping, smoothing=2**32 - 1, alternate_one_minus_smoothing=-1)
        compare(model, xs)


def test_zero_channels() -> None:
    compare(subtraction_model(num_channels=0), [np.zeros(0, np.uint32)] * 2)


def test_in_micro_speechs_chain() -> None:
    """Filter bank -> square root -> spectral subtraction -> PCAN -> log, as micro_speech's front end runs them:
    the noise estimate carries across invokes and reset inside a graph too."""
    from test_signal_filter_bank import mel_tables
    from test_signal_pcan import smooth_lut

    w, u, freq, start, width = mel_tables(257, 40)
    tensors = {
        "energy": T((257,), "uint32"), "scale": T((), "int32"), "w": T((len(w),), "int16", data=w),
        "u": T((len(u),), "int16", data=u), "freq": T((41,), "int16", data=freq),
        "start": T((41,), "int16", data=start), "width": T((41,), "int16", data=width),
        "bank": T((40,), "uint64"), "root": T((40,), "uint32"), "clean": T((40,), "uint32"),
        "noise": T((40,), "uint32"), "lut": T((125,), "int16", data=smooth_lut()), "gained": T((40,), "uint32"),
        "log": T((40,), "int16"),
    }
    ops = [
        Op("SignalFilterBank", ["energy", "w", "u", "freq", "start", "width"], ["bank"],
           custom_options=custom_options(num_channels=40)),
        Op("SignalFilterBankSquareRoot", ["bank", "scale"], ["root"]),
        Op("SignalFilterBankSpectralSubtraction", ["root"], ["clean", "noise"],
           custom_options=custom_options(**MICRO_SPEECH)),
        Op("SignalPCAN", ["clean", "noise", "lut"], ["gained"], custom_options=custom_options(snr_shift=6)),
        Op("SignalFilterBankLog", ["gained"], ["log"],
           custom_options=custom_options(input_correction_bits=3, output_scale=64)),
    ]
    model = graph_model(Graph(tensors, ops, ["energy", "scale"], ["log", "noise"]))
    rng = np.random.default_rng(3)
    steps = [[rng.integers(0, 2 ** rng.integers(6, 22), 257).astype(np.uint32), np.array(rng.integers(0, 4), np.int32)]
             for _ in range(12)]
    compare(model, [*steps, RESET, *steps[:4]])


@pytest.mark.parametrize("dtypes", [("int32", "uint32", "uint32"), ("uint32", "int32", "uint32"),
                                    ("uint32", "uint32", "int32"), ("uint64", "uint32", "uint32")], ids=str)
def test_unsupported_types(dtypes: tuple) -> None:
    model = subtraction_model(num_channels=2, dtypes=dtypes)
    with pytest.raises(TflmError):
        run_tflm(model, [np.zeros(2, dtypes[0])])
    with pytest.raises((UnsupportedError, PrepareError)):
        Interpreter(model).allocate_tensors()


def options_without(name: str) -> bytes:
    return custom_options(**{k: v for k, v in MICRO_SPEECH.items() if k != name})


@pytest.mark.parametrize("model,match", [
    (subtraction_model(sizes=(40, 40, 40), num_channels=39), "elements"),  # TFLM leaves elements unwritten
    (subtraction_model(sizes=(40, 40, 40), num_channels=41), "elements"),  # TFLM reads and writes past them
    (subtraction_model(sizes=(41, 40, 40)), "elements"),
    (subtraction_model(sizes=(40, 41, 40)), "elements"),
    (subtraction_model(sizes=(40, 40, 41)), "elements"),
    (subtraction_model(num_channels=-1, sizes=(0, 0, 0)), "out of range"),
    (subtraction_model(smoothing_bits=32), "out of range"),
    (subtraction_model(smoothing_bits=-1), "out of range"),
    (subtraction_model(spectral_subtraction_bits=64), "out of range"),
    (subtraction_model(aaa=3), "exactly the keys"),  # TFLM reads options by position: aaa shifts them all
    (subtraction_model(options=options_without("smoothing")), "missing"),
    (subtraction_model(options=b""), "FlexBuffer map"),  # the wheel segfaults
    (subtraction_model(smoothing=1.5), "not int"),
    (op_model("SignalFilterBankSpectralSubtraction", [T((1, 40), "uint32")],
              [T((1, 40), "uint32"), T((1, 40), "uint32")], custom_options=custom_options(**MICRO_SPEECH)),
     "1 dimension"),
    (op_model("SignalFilterBankSpectralSubtraction", [T((40,), "uint32")], [T((40,), "uint32")],
              custom_options=custom_options(**MICRO_SPEECH)), "outputs"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_rejects_bad_models(model: bytes, match: str) -> None:
    with pytest.raises(PrepareError, match=match):
        Interpreter(model).allocate_tensors()
