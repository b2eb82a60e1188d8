"""micronn.compress: lossless and clustered look-up-table compression in both of TFLM's forms, run by the wheel."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TFLM_HEAD, model_bytes

from micronn import Interpreter
from micronn.compress import compress
from micronn.compress.lut import kmeans_1d
from micronn.errors import MicronnError
from micronn.testing import Graph, Op, T, assert_identical, assert_same_as_tflm, graph_model, op_model, tflm_arena
from micronn.tflite.reader import read

RNG = np.random.default_rng(11)
FORMATS = ["metadata", "decode"]


def two_layer(levels: int | None) -> bytes:
    """FC -> FC with per-channel (first) and per-tensor (second) weights; ``levels`` distinct values, or any."""
    def weights(shape: tuple[int, ...]) -> np.ndarray:
        if levels is None:
            return RNG.integers(-127, 128, shape)
        return RNG.choice(np.unique(RNG.integers(-127, 128, levels)), shape)

    q = (0.05, -2)
    return graph_model(Graph(
        {"x": T((1, 32), "int8", *q), "w1": T((24, 32), "int8", [0.01] * 24, 0, data=weights((24, 32))),
         "b1": T((24,), "int32", [0.0005] * 24, 0, data=RNG.integers(-900, 900, 24)), "h": T((1, 24), "int8", *q),
         "w2": T((16, 24), "int8", 0.01, 0, data=weights((16, 24))), "y": T((1, 16), "int8", 0.1, 3)},
        [Op("FULLY_CONNECTED", ["x", "w1", "b1"], ["h"]), Op("FULLY_CONNECTED", ["h", "w2", None], ["y"])],
        ["x"], ["y"]))


def same_as_wheel(data: bytes) -> list[list[np.ndarray]]:
    outs = assert_same_as_tflm(data, runs=2)
    it = Interpreter(data, planner="tflm")
    it.allocate_tensors()
    assert it.head == tflm_arena(data)["head"]
    return outs


@pytest.mark.parametrize("fmt", FORMATS)
def test_lossless_keeps_every_output_byte(fmt: str) -> None:
    model = two_layer(6)
    data, report = compress(model, format=fmt, min_bytes=0, force=True)
    assert report.lossless and [t.name for t in report.tensors] == ["w1", "w2"]
    assert all(t.bits == 3 for t in report.tensors) and report.tensors[0].tables == 24
    distinct = len(np.unique(np.asarray(read(model).main.tensors[4].data)))
    assert report.tensors[1].bytes_after == 16 * 24 * 3 // 8 + distinct and not report.output_change
    for a, b in zip(same_as_wheel(data), assert_same_as_tflm(model, runs=2), strict=True):
        assert_identical(a[0], b[0], "compressed vs plain")
    if fmt == "decode":
        assert read(data).op_names().count("TFLM_DECODE") == 2


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bits", [1, 2, 5])
def test_clustered_weights_run_identically_in_the_wheel(bits: int, fmt: str) -> None:
    data, report = compress(two_layer(None), bits=bits, format=fmt, min_bytes=0, force=True)
    assert not report.lossless and {t.bits for t in report.tensors} == {bits}
    assert len(report.output_change) == 1 and report.output_change[0]["max_abs"] >= 0
    assert all(t.bytes_after < t.bytes_before for t in report.tensors)  # a model this small gains no file bytes
    same_as_wheel(data)
    m = read(data)
    for t in m.main.tensors:  # the weights now hold at most 2**bits values per table
        if t.lut is not None:
            assert t.lut.values.shape[1] <= 2**bits


def test_tolerance_and_arguments() -> None:
    model = two_layer(None)
    assert not compress(model, bits=4, tolerance=0, min_bytes=0, force=True)[1].tensors  # 256 levels: none lossless
    assert compress(model, bits=4, tolerance=1000, min_bytes=0, force=True)[1].tensors
    assert not compress(model, min_bytes=0, force=True)[1].tensors  # no bits: lossless only; 256 levels do not fit
    for bad in ({"bits": 0}, {"bits": 8}, {"bits": True}, {"format": "zip"}):
        with pytest.raises(MicronnError):
            compress(model, **bad)


def test_kmeans_finds_separated_clusters() -> None:
    values = np.array([-50.0, -49, -48, 0, 1, 2, 60, 61])
    centres = kmeans_1d(values, np.ones_like(values), 3)
    assert np.allclose(centres, [-49, 1, 60.5])


@pytest.mark.parametrize("fmt", FORMATS)
def test_person_detect_at_4_bits(fmt: str) -> None:
    """The figure the project tracks: file size at 4 bits (benchmarks/compress.py prints it beside the 55% goal).
    TFLM's per-channel tables and the per-channel scales keep it near 62%."""
    data, report = compress(model_bytes("person_detect"), bits=4, format=fmt)
    assert report.head_before == TFLM_HEAD["person_detect"]
    assert report.ratio < 0.63, str(report)
    assert all(t.bits <= 4 for t in report.tensors)
    assert_same_as_tflm(data, runs=1)
    assert tflm_arena(data)["head"] == report.head_after


def test_lossless_rewrite_shares_equal_vectors() -> None:
    """No person_detect weight has a lossless 7-bit table, yet the rewrite is smaller (each equal zero-point vector
    is written once) and runs byte-identically in the wheel."""
    original = model_bytes("person_detect")
    data, report = compress(original)
    assert not report.tensors and report.lossless and report.ratio < 0.87, str(report)
    for a, b in zip(assert_same_as_tflm(data, runs=1), assert_same_as_tflm(original, runs=1), strict=True):
        assert_identical(a[0], b[0], "rewritten vs original")


@pytest.mark.parametrize("dtype", ["bool", "float32", "int8", "int16", "int32", "int64"])
def test_decode_every_decoded_type(dtype: str) -> None:
    """TFLM_DECODE of a constant of each type TFLM decodes, read by CONCATENATION (which takes them all)."""
    rng = np.random.default_rng(5)
    values = rng.integers(0, 2, (4, 16)).astype(dtype) if dtype == "bool" else \
        (rng.integers(0, 3, (4, 16)) * 7 - 5).astype(dtype)
    model = op_model("CONCATENATION", [T((4, 16), dtype), T((4, 16), dtype, data=values)], [T((8, 16), dtype)],
                     {"axis": 0})
    data, report = compress(model, format="decode", min_bytes=0, force=True)
    assert report.tensors and report.lossless
    assert "TFLM_DECODE" in [op.op for op in read(data).main.operators]
    assert_same_as_tflm(data, runs=2)
