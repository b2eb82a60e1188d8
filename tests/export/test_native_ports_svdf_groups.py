"""The SVDF host port's time step for memory sizes that are multiples of 16 in whole groups of 8 filters (each
window one unaligned load one slot on, the newest value blended in, 8 filters' sums reduced together): the portable
kernel's, the interpreter's and the wheel's bytes, streamed and from the initial state, on filter counts around the
group and chunk sizes (8, 64), batches and ranks."""

from __future__ import annotations

import pytest
from test_native_ports_seq import _id, assert_all_same, svdf

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
