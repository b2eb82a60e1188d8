"""The SVDF host port's time step for memory sizes that are multiples of 16 in whole groups of 8 filters (each
window one unaligned load one slot on, the newest value blended in, 8 filters' sums reduced together): the portable
kernel's, the interpreter's and the wheel's bytes, streamed and from the initial state, on filter counts around the
group and chunk sizes (8, 64), batches and ranks; the feature sums' requantization to the state with a right shift
(one 64-bit sum), without one (the doubling high multiply alone, left shifts) and out of the folded range."""

from __future__ import annotations

import numpy as np
import pytest
from test_native_ports_seq import _id, assert_all_same, svdf

from micronn.testing import T, op_model

CASES = [
    {"n_input": 16, "filters": 8, "rank": 1, "memory": 16},
    {"n_input": 16, "filters": 8, "rank": 1, "memory": 32, "batch": 2},
    {"n_input": 7, "filters": 9, "rank": 1, "memory": 32},
    {"n_input": 32, "filters": 17, "rank": 1, "memory": 16, "batch": 3},
    {"n_input": 12, "filters": 23, "rank": 1, "memory": 48},
    {"n_input": 16, "filters": 32, "rank": 2, "memory": 32, "batch": 2},
    {"n_input": 20, "filters": 64, "rank": 1, "memory": 32, "in_zp": 127, "out_zp": -128},
    {"n_input": 10, "filters": 72, "rank": 1, "memory": 16, "batch": 2},
    {"n_input": 9, "filters": 136, "rank": 4, "memory": 64},
]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_svdf_groups(case: dict) -> None:
    data = svdf(**case, seed=len(case) + case["filters"])
    assert_all_same(data, samples=5, stream=True)
    assert_all_same(data, samples=2)


def svdf_scaled(*, state_gain: float, n_input: int = 24, filters: int = 16, memory: int = 16, rank: int = 1,
                batch: int = 1, seed: int = 0) -> bytes:
    """test_native_ports_seq.svdf with the state scale times ``state_gain``: the state requantization's multiplier
    from about 2^-12 (a right shift of 12) up to 2^6 (a left shift of 6), with 2^-1 (a right shift of 1: the general
    path) between."""
    rng = np.random.default_rng(seed)
    units = filters // rank
    wf = rng.integers(-128, 128, (filters, n_input))
    s_in, s_wf, s_wt = 0.059, 0.0091, 0.5 / 32767
    s_state = float(np.sqrt(n_input) * 74 * 74 * s_in * s_wf * 3 / 32767) * state_gain
    s_out = float(np.sqrt(memory * rank) * (32767 / 3) * (32767 / 2) * s_state * s_wt * 3 / 127)
    return op_model("SVDF", [
        T((batch, n_input), "int8", s_in, -7),
        T((filters, n_input), "int8", s_wf, 0, data=wf),
        T((filters, memory), "int16", s_wt, 0, data=rng.integers(-32768, 32768, (filters, memory))),
        T((units,), "int32", float(np.float32(s_state) * np.float32(s_wt)), 0,
          data=rng.integers(-50_000, 50_000, units)),
        T((batch, memory * filters), "int16", s_state, 0, variable=True),
    ], [T((batch, units), "int8", s_out, 3)], {"rank": rank, "fused_activation_function": 1})


@pytest.mark.parametrize("gain", [2.0 ** -5, 0.3, 1.0, 3.0, 20.0, 300.0, 5000.0])
@pytest.mark.parametrize("memory", [8, 32])
def test_svdf_state_requant(gain: float, memory: int) -> None:
    data = svdf_scaled(state_gain=gain, memory=memory, batch=2, seed=int(gain * 7) + memory)
    assert_all_same(data, samples=4, stream=True)
    assert_all_same(data, samples=2)
