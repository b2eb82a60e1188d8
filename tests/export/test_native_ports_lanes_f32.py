"""The float32 host ports on several batch rows (the lanes twins' shapes: every activation k rows deep, one sample
per row): FULLY_CONNECTED's tiles of rows x unit blocks, CONV_2D, DEPTHWISE_CONV_2D, the pools, LOGISTIC, TANH and
SOFTMAX over k images. Each twin (k = 2, 3, 16, 17: odd counts and the remainders of the row tiles) must give, row
by row, the one-sample library's bytes (one invoke per sample), the twin's portable kernels' (``host_ports=False``)
and, on a few samples, the TFLM wheel's; inputs hold infinities, NaNs of both signs, signed zeros and values whose
products overflow."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from test_native_ports import SPECIALS, conv_f32, depthwise_f32, fully_connected_f32
from test_native_ports_more import pool

import micronn
from micronn.export import NativeModel
from micronn.testing import T, _Tflm, op_model
from micronn.tflite import schema
from micronn.tflite.reader import read

try:
    from micronn.lanes import twin_model
except ImportError:  # where the twins still live in micronn.simulate
    from micronn.simulate.batch import twin_model

MODELS = Path(micronn.__file__).parent / "models"
EXTRA = Path(__file__).resolve().parents[1] / "models"
LANES = [2, 3, 16, 17]


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "default"


def _samples(shape: tuple[int, ...], n: int, seed: int) -> np.ndarray:
    """``n`` float32 samples in [-2, 2), every other one with a few specials."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, *shape)).astype(np.float32)
    flat = x.reshape(n, -1)
    m = min(4, flat.shape[1])
    for k in range(1, n, 2):
        flat[k, rng.integers(0, flat.shape[1], m)] = rng.choice(SPECIALS, m)
    return x


def _invoke_rows(native: NativeModel, x: np.ndarray, k: int) -> np.ndarray:
    """Every sample of x through ``native`` (a twin of k rows: one invoke per k samples)."""
    outs = []
    for i in range(0, len(x), k):
        native.set_input(x[i:i + k])
        native.invoke()
        outs.append(native.get_output())
    return np.concatenate(outs)


def assert_lanes_same(data: bytes, lanes: list[int], *, wheel: int = 0, seed: int = 0,
                      portable_same: bool = True) -> None:
    """The twins of ``data``'s model (one input, one output, one sample per invoke) give its bytes row by row."""
    model = read(data)
    one, one_portable = NativeModel(model), NativeModel(model, host_ports=False)
    shape = one.inputs[0].shape
    assert shape[0] == 1
    for k in lanes:
        x = _samples(shape[1:], 2 * k, seed + k)
        want = np.concatenate([one.run([x[i:i + 1]])[0] for i in range(len(x))])
        twin = twin_model(model, k)
        got = _invoke_rows(NativeModel(twin), x, k)
        assert got.tobytes() == want.tobytes(), k
        # the portable kernels' rows against their one-sample bytes (and those against the ports' where no NaN
        # bias meets a NaN sum: the portable FULLY_CONNECTED's compiled add may keep the other NaN there)
        portable = _invoke_rows(NativeModel(twin, host_ports=False), x, k)
        want_portable = np.concatenate([one_portable.run([x[i:i + 1]])[0] for i in range(len(x))])
        assert portable.tobytes() == want_portable.tobytes(), k
        if portable_same:
            assert portable.tobytes() == want.tobytes(), k
    if wheel:
        ref = _Tflm(data)
        x = _samples(shape[1:], wheel, seed)
        for i in range(wheel):
            assert ref.run([x[i:i + 1]])[0].tobytes() == one.run([x[i:i + 1]])[0].tobytes(), i


FC = [
    {"depth": 1, "units": 16},
    {"depth": 16, "units": 16},
    {"depth": 16, "units": 1},
    {"depth": 37, "units": 13, "act": 1},
    {"depth": 5, "units": 24, "bias": False},
    {"depth": 9, "units": 32, "act": 3},
    {"depth": 64, "units": 33},
    {"depth": 20, "units": 70, "act": 1},  # AVX-512: tiles of 4 rows x 5 blocks of 16, the last one short
    {"depth": 11, "units": 60, "act": 3},  # 4 blocks of 16
    {"depth": 3, "units": 7, "bias": False, "act": 1},
    {"depth": 13, "units": 1, "act": 1},
    {"depth": 37, "units": 1, "bias": False},
    {"depth": 1, "units": 1, "act": 3},
]


@pytest.mark.parametrize("case", FC, ids=_id)
def test_fully_connected_rows(case: dict) -> None:
    assert_lanes_same(fully_connected_f32(**case), LANES)


@pytest.mark.parametrize("units,depth,nan_bias", [(19, 11, True), (1, 13, False), (1, 16, True), (1, 3, False)])
def test_fully_connected_rows_nans(units: int, depth: int, nan_bias: bool) -> None:
    """NaN and infinite weights and biases, NaN-dense rows (one unit: 8 rows in the lanes of one sum, the depth's
    last depth % 8 steps gathered): the NaN each sum keeps is the portable kernel's and the wheel's."""
    rng = np.random.default_rng(3 + units)
    w = rng.uniform(-1, 1, (units, depth)).astype(np.float32)
    w.reshape(-1)[::5] = rng.choice(SPECIALS, w.reshape(-1)[::5].shape)
    b = rng.uniform(-1, 1, units).astype(np.float32)
    if nan_bias:
        b[::4] = rng.choice(np.array([np.nan, -np.nan, -np.inf], np.float32), b[::4].shape)
    opts = schema.options("FULLY_CONNECTED", fused_activation_function=0)
    data = op_model("FULLY_CONNECTED", [T((1, depth), "float32"), T((units, depth), "float32", data=w),
                                        T((units,), "float32", data=b)], [T((1, units), "float32")], opts)
    assert_lanes_same(data, LANES, wheel=4, portable_same=False)
    one, ref = NativeModel(data), _Tflm(data)
    x = _samples((depth,), 24, 7)
    x[x.reshape(24, -1)[:, 0] > 0, ..., 1] = np.nan
    got = _invoke_rows(NativeModel(twin_model(read(data), 24)), x, 24)
    for i in range(24):
        assert got[i:i + 1].tobytes() == ref.run([x[i:i + 1]])[0].tobytes() == one.run([x[i:i + 1]])[0].tobytes(), i


CONV = [
    {"h": 28, "w": 28, "cin": 1, "cout": 8, "act": 1},
    {"h": 11, "w": 13, "cin": 1, "cout": 5, "pad": 1},
    {"h": 13, "w": 13, "cin": 8, "cout": 16, "fh": 1, "fw": 1, "act": 1},
    {"h": 7, "w": 9, "cin": 3, "cout": 11, "stride": (2, 2), "pad": 1},
    {"h": 6, "w": 10, "cin": 1, "cout": 20, "fh": 5, "fw": 3, "act": 3},
    {"h": 7, "w": 11, "cin": 5, "cout": 24, "act": 1},  # 3 x 3 tiles, 2 and 1 pixels left
    {"h": 6, "w": 10, "cin": 3, "cout": 40, "pad": 1},  # 2 x 4 tiles then the fifth block
    {"h": 5, "w": 16, "cin": 2, "cout": 7, "fh": 2, "fw": 2, "dil": (2, 2)},  # dilated: 7 x 1 tiles
    # one input channel, 3 taps across: each input broadcast once for the pixels that take it (runs of 1 to 8+)
    {"h": 9, "w": 17, "cin": 1, "cout": 8, "stride": (2, 1), "dil": (2, 1)},
    {"h": 6, "w": 12, "cin": 1, "cout": 3, "fh": 1, "pad": 1, "act": 1, "bias": False},
    {"h": 7, "w": 10, "cin": 1, "cout": 8, "fh": 4, "act": 3},
]


@pytest.mark.parametrize("w", [3, 4, 9, 10, 11, 15, 16, 17])
def test_conv_2d_one_channel_nans(w: int) -> None:
    """One input channel, 3 x 3 filters with NaN and infinite taps, NaN-dense images, every run length: the
    NaN each sum keeps is the portable kernel's and the wheel's."""
    rng = np.random.default_rng(w)
    wt = rng.uniform(-1, 1, (8, 3, 3, 1)).astype(np.float32)
    wt.reshape(-1)[::7] = rng.choice(SPECIALS, wt.reshape(-1)[::7].shape)
    b = rng.uniform(-1, 1, 8).astype(np.float32)
    b[3], b[5] = np.nan, -np.nan
    opts = schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1, dilation_h_factor=1, dilation_w_factor=1,
                          fused_activation_function=0)
    data = op_model("CONV_2D", [T((1, 5, w, 1), "float32"), T((8, 3, 3, 1), "float32", data=wt),
                                T((8,), "float32", data=b)], [T((1, 3, w - 2, 8), "float32")], opts)
    assert_lanes_same(data, [3], wheel=4, portable_same=False)
    one, ref = NativeModel(data), _Tflm(data)
    x = _samples((5, w, 1), 6, w)
    x[x > 1.2] = np.nan
    x[x < -1.2] = -np.nan
    for i in range(6):
        assert one.run([x[i:i + 1]])[0].tobytes() == ref.run([x[i:i + 1]])[0].tobytes(), i


@pytest.mark.parametrize("case", CONV, ids=_id)
def test_conv_2d_images(case: dict) -> None:
    assert_lanes_same(conv_f32(**case), [2, 3, 17])


DEPTHWISE = [
    {"h": 13, "w": 13, "c": 8, "pad": 1},
    {"h": 9, "w": 8, "c": 21, "act": 1},
    {"h": 6, "w": 7, "c": 16, "stride": (2, 2), "pad": 1},
]


@pytest.mark.parametrize("case", DEPTHWISE, ids=_id)
def test_depthwise_conv_2d_images(case: dict) -> None:
    assert_lanes_same(depthwise_f32(**case), [2, 3, 17])


POOLS = [
    {"op": "MAX_POOL_2D", "h": 26, "w": 26, "c": 8},
    {"op": "AVERAGE_POOL_2D", "h": 13, "w": 13, "c": 16},
    {"op": "AVERAGE_POOL_2D", "h": 9, "w": 7, "c": 13, "pad": 1, "fh": 3, "fw": 3, "act": 1},
    {"op": "MAX_POOL_2D", "h": 9, "w": 7, "c": 24, "pad": 1, "fh": 3, "fw": 3},
]


@pytest.mark.parametrize("case", POOLS, ids=_id)
def test_pools_images(case: dict) -> None:
    assert_lanes_same(pool(kind="float32", **case), [2, 3, 17])


def _unary(op: str, shape: tuple[int, ...], **opts) -> bytes:
    return op_model(op, [T(shape, "float32")], [T(shape, "float32")], schema.options(op, **opts) if opts else None)


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("shape", [(1, 5), (1, 8), (1, 3, 7)], ids=str)
def test_activations_rows(op: str, shape: tuple[int, ...]) -> None:
    assert_lanes_same(_unary(op, shape), LANES)


@pytest.mark.parametrize("depth", [1, 10, 17])
def test_softmax_rows(depth: int) -> None:
    assert_lanes_same(_unary("SOFTMAX", (1, depth), beta=1.0), LANES)


@pytest.mark.parametrize("name", ["float_cnn", "hello_world_float"])
def test_models(name: str) -> None:
    path = MODELS / f"{name}.tflite"
    data = (path if path.exists() else EXTRA / f"{name}.tflite").read_bytes()
    assert_lanes_same(data, LANES, wheel=3)


FULL_POOLS = [
    {"h": 13, "w": 13, "c": 16},  # float_cnn's average pool
    {"h": 9, "w": 11, "c": 8, "act": 1},
    {"h": 7, "w": 8, "c": 40, "fh": 3, "fw": 2, "stride": (2, 1), "act": 3},
    {"h": 6, "w": 6, "c": 24, "fh": 6, "fw": 6, "stride": (1, 1)},
]


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", FULL_POOLS, ids=_id)
def test_full_window_pools_specials(op: str, case: dict) -> None:
    """Windows inside the input (host/pool_2d_f32.c's pool_full) on NaN-dense inputs (both signs), zeros of both
    signs, infinities: the ports' bytes are the wheel's, the portable kernels' and, on 3 rows, their own one-sample
    bytes."""
    data = pool(op=op, kind="float32", **case)
    one = NativeModel(data)
    shape = one.inputs[0].shape
    rng = np.random.default_rng(5)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, np.finfo(np.float32).min, 1.5, -0.25],
                        np.float32)
    x = specials[rng.integers(0, len(specials), (6, *shape[1:]))][:, None]
    x[0, 0] = -0.0
    x[1, 0] = np.nan
    ref, portable = _Tflm(data), NativeModel(data, host_ports=False)
    twin = NativeModel(twin_model(read(data), 3))
    rows = _invoke_rows(twin, x[:, 0], 3)
    for i in range(len(x)):
        got = one.run([x[i]])[0]
        assert got.tobytes() == ref.run([x[i]])[0].tobytes(), i
        assert got.tobytes() == portable.run([x[i]])[0].tobytes(), i
        assert rows[i:i + 1].tobytes() == got.tobytes(), i


@pytest.mark.parametrize("average", [True, False], ids=["average", "max"])
@pytest.mark.parametrize("c,k,s", [(8, 2, 2), (16, 2, 2), (24, 3, 1), (32, 2, 1), (40, 2, 2)])
def test_full_window_pools_streamed_over_the_input(average: bool, c: int, k: int, s: int) -> None:
    """`stage` with the output laid on the input (float_cnn's pools): each pixel's taps (up to 32 channels) read
    before it is stored; more channels take the general loop."""
    from test_native_ports_f32 import _f32_word, _kernel_library

    lib, rng = _kernel_library("pool_2d_f32"), np.random.default_rng(c + k)
    h, w = 9, 12
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    x = rng.uniform(-2, 2, (2, h, w, c)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    name = "mn_average_pool_2d_f32" if average else "mn_max_pool_2d_f32"
    results = []
    for fn in (f"{name}_portable", name):
        arena = np.zeros(x.size + 64, np.float32)
        arena[:x.size] = x.ravel()
        ptr = arena.ctypes.data
        words = [ptr, ptr, 2, h, w, c, oh, ow, k, k, s, s, 0, 0, _f32_word(-1.5), _f32_word(1.5), 1]
        args = np.array(words, np.uint64)
        getattr(lib, fn)(args.ctypes.data_as(ctypes.c_void_p))
        results.append(arena[:2 * oh * ow * c].copy())
    assert results[0].tobytes() == results[1].tobytes()
