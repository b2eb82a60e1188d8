"""The keyword-spotting kernels (SVDF, FULLY_CONNECTED, QUANTIZE, SOFTMAX) on emulated devices, byte for byte
against micronn's interpreter: the DSP paths (Cortex-M4) and the portable ones (Cortex-M0, RV32) over the shapes
their fast paths split on (input depths off a multiple of 4, odd unit counts, more than one tile chunk and input
slab, rank > 1, batches, weights of -128 that the paired layout corrects, memory sizes odd and even). Stateful
models run three invokes in a row, so the state each invoke leaves is checked through the next one's output."""

from __future__ import annotations

import numpy as np
import pytest

from micronn import Interpreter
from micronn.micro import lower
from micronn.micro.runtime import DeviceModel
from micronn.micro.session import Session
from micronn.models import bundled_model
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

TARGETS = ["cortex-m4", "cortex-m0", "riscv32"]


def weights(rng: np.random.Generator, shape: tuple[int, ...], low: int = -128) -> np.ndarray:
    """Random int8 weights with some -128 beside negative values (the paired layout's corrected case)."""
    w = rng.integers(low, 128, shape)
    flat = w.reshape(-1)
    flat[rng.choice(flat.size, max(1, flat.size // 8), replace=False)] = -128
    return w


def svdf(*, batch=1, n_input=12, filters=8, rank=2, memory=4, in_zp=-3, out_zp=5, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    units = filters // rank
    s_in, s_wf, s_wt = 0.059, 0.0091, 0.5 / 32767
    s_state = float(np.sqrt(n_input) * 74 * 74 * s_in * s_wf * 3 / 32767)
    s_out = float(np.sqrt(memory * rank) * (32767 / 3) * (32767 / 2) * s_state * s_wt * 3 / 127)
    return op_model("SVDF", [
        T((batch, n_input), "int8", s_in, in_zp),
        T((filters, n_input), "int8", s_wf, 0, data=weights(rng, (filters, n_input))),
        T((filters, memory), "int16", s_wt, 0, data=rng.integers(-32768, 32768, (filters, memory))),
        T((units,), "int32", float(np.float32(s_state) * np.float32(s_wt)), 0,
          data=rng.integers(-50_000, 50_000, units)),
        T((batch, memory * filters), "int16", s_state, 0, variable=True),
    ], [T((batch, units), "int8", s_out, out_zp)], {"rank": rank, "fused_activation_function": 1})


def fully_connected(*, batches=1, depth=10, units=5, per_channel=False, act=0, in_zp=-7, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.02, units)) if per_channel else 0.01
    return op_model("FULLY_CONNECTED", [T((batches, depth), "int8", 0.05, in_zp),
                                        T((units, depth), "int8", scales, 0, data=weights(rng, (units, depth))),
                                        T((units,), "int32", data=rng.integers(-3000, 3000, units))],
                    [T((batches, units), "int8", 0.1 * np.sqrt(depth / 10), 2)],
                    schema.options("FULLY_CONNECTED", fused_activation_function=act))


def quantize(src: str, dst: str, n: int = 37, in_scale: float = 0.07) -> bytes:
    zps = {"int8": -9, "uint8": 9, "int16": 0, "int32": 0}
    return op_model("QUANTIZE", [T((1, n), src, in_scale, 0 if src in ("int16", "int32") else 5)],
                    [T((1, n), dst, 0.05 if dst != "int32" else 0.001, zps[dst])])


def softmax(shape=(3, 10), out="int8", scale=0.1) -> bytes:
    q = (1 / 256, -128) if out == "int8" else (1 / 65536, -32768)
    return op_model("SOFTMAX", [T(shape, "int8", scale, 4)], [T(shape, out, *q)], {"beta": 1.0})


CASES = {
    "svdf_keyword_first": svdf(n_input=96, filters=64, rank=1, memory=8, in_zp=-128, out_zp=-128),
    "svdf_m32": svdf(n_input=32, filters=32, rank=1, memory=32),
    "svdf_odd": svdf(n_input=13, filters=7, rank=1, memory=5, seed=1),
    "svdf_rank3_batch": svdf(batch=3, n_input=18, filters=12, rank=3, memory=6, seed=2),
    "svdf_wide": svdf(batch=2, n_input=600, filters=70, rank=2, memory=10, seed=3),
    "svdf_memory2": svdf(n_input=5, filters=6, rank=1, memory=2, seed=4),
    "svdf_memory1": svdf(n_input=9, filters=5, rank=1, memory=1, seed=5),
    "fc_keyword": fully_connected(depth=64, units=16, in_zp=-128),
    "fc_odd": fully_connected(depth=13, units=7, seed=1),
    "fc_two": fully_connected(depth=32, units=2, seed=2),
    "fc_one": fully_connected(depth=3, units=1, seed=3),
    "fc_per_channel_relu": fully_connected(batches=3, depth=30, units=6, per_channel=True, act=1, seed=4),
    "fc_wide": fully_connected(batches=2, depth=1030, units=3, seed=5),
    "fc_many": fully_connected(depth=20, units=131, per_channel=True, seed=6),
    "quantize_s16_s8": quantize("int16", "int8", n=96, in_scale=0.003),
    "quantize_s16_s8_odd": quantize("int16", "int8", n=5),
    "quantize_s8_s16": quantize("int8", "int16"),
    "quantize_s16_s32": quantize("int16", "int32"),
    "quantize_u8_s8": quantize("uint8", "int8"),
    "softmax": softmax(), "softmax_16": softmax((1, 2), "int16"), "softmax_wide": softmax((2, 37), scale=0.02),
}


def interpreter_runs(model: bytes, runs: list[list[np.ndarray]]) -> list[list[bytes]]:
    it = Interpreter(model)
    it.allocate_tensors()
    out = []
    for xs in runs:
        for i, x in enumerate(xs):
            it.set_input(x, i)
        it.invoke()
        out.append([it.get_output(i).tobytes() for i in range(len(it.model.main.outputs))])
    return out


def device_runs(model: bytes, target: str, runs: list[list[np.ndarray]]) -> list[list[bytes]]:
    with Session(target) as sess:
        dm = DeviceModel(model, sess)
        return [[y.tobytes() for y in dm.invoke(xs)] for xs in runs]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_on_device(case: str, target: str) -> None:
    model = CASES[case]
    it = Interpreter(model)
    runs = [random_inputs(it.model, seed=s) for s in range(3)]
    assert device_runs(model, target, runs) == interpreter_runs(model, runs)


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32", "cortex-m0", "cortex-m3", "cortex-m7", "cortex-m33"])
def test_keyword_scrambled_on_device(target: str) -> None:
    """The whole model over three invokes (its seven SVDF states carried on the device), on every core kind: with
    the DSP extension (M4, M7, M33), Thumb-2 without it (M3), Thumb-1 (M0), RV32."""
    model = bundled_model("keyword_scrambled")
    it = Interpreter(model)
    runs = [random_inputs(it.model, seed=s) for s in range(3)]
    assert device_runs(model, target, runs) == interpreter_runs(model, runs)


def test_paired_layout_and_corrections() -> None:
    """paired_rows: halfword 256 * w[r+1] + w[r] at inputs 0, 2, 1, 3 of each group, tiles of four rows
    interleaved per group, the last pair after them; -128 beside a negative weight stored as -127 and listed."""
    w = np.array([[-1, 2, 3, 4, 5], [-128, -128, 1, -128, 0], [1, 2, 3, 4, 5], [0, 0, 0, 0, -1], [7, 0, 0, 0, 0]])
    h, fix = lower.paired_rows(w)
    pairs = [(256 * b + a) for a, b in zip(w[0], [-127, -128, 1, -128, 0])]
    assert list(h.data[:4]) == [pairs[0], pairs[2], pairs[1], pairs[3]]
    assert list(h.data[4:8]) == [1, 3, 2, 4]  # rows 2 and 3 at inputs 0, 2, 1, 3 of group 0
    assert list(h.data[8:16]) == [pairs[4], 0, 0, 0, 5 - 256, 0, 0, 0]  # group 1 of the tile
    assert list(h.data[16:]) == [7, 0, 0, 0, 0, 0, 0, 0]  # the last pair (row 4 and a zero row), two groups
    assert list(fix.data) == [1, 0, 2**31 - 1, 0]
