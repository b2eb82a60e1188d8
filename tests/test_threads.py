"""Thread safety: interpreters invoked concurrently (different bundled models, and several of the same model) give
the bytes a sequential run gives, so no kernel keeps mutable state at module level that two interpreters share."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import ALL_MODELS, model_bytes

from micronn import Interpreter
from micronn.ir import random_inputs
from micronn.tflite.reader import read

ROUNDS = 3  # invokes per interpreter and job, each with its own inputs (variable state carries over, as in TFLM)


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    """Switch threads every few microseconds, so interleavings that would corrupt shared state actually happen."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def _job(name: str, seed: int) -> list[bytes]:
    """Every output of ``ROUNDS`` invokes of a fresh interpreter, as bytes (dtype and shape included)."""
    data = model_bytes(name)
    it = Interpreter(data)
    it.allocate_tensors()
    out = []
    for r in range(ROUNDS):
        for i, x in enumerate(random_inputs(read(data), seed * ROUNDS + r)):
            it.set_input(x, i)
        it.invoke()
        out += [f"{y.dtype}{y.shape}".encode() + y.tobytes() for y in (it.get_output(i) for i in
                                                                          range(len(it.model.main.outputs)))]
    return out


def test_concurrent_interpreters_match_sequential_runs() -> None:
    jobs = [(name, seed) for name in ALL_MODELS for seed in range(2)]  # two interpreters of every model at once
    jobs += [("micro_speech_quantized", seed) for seed in range(2, 6)]
    want = [_job(*j) for j in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda j: _job(*j), jobs, timeout=300))
    for j, w, g in zip(jobs, want, got):
        assert w == g, f"{j}: a concurrent run differs from the sequential one"


def test_one_model_many_interpreters_share_the_weights_safely() -> None:
    """Interpreters over one bytes object share its weights (read-only views): concurrent runs still agree."""
    data = model_bytes("person_detect")
    xs = [random_inputs(read(data), s)[0] for s in range(6)]

    def run(x: np.ndarray) -> bytes:
        it = Interpreter(data)
        it.set_input(x, 0)
        it.invoke()
        return it.get_output(0).tobytes()

    want = [run(x) for x in xs]
    with ThreadPoolExecutor(max_workers=6) as pool:
        assert list(pool.map(run, xs, timeout=300)) == want
