"""Shared fixtures: the bundled real models and TFLM's measured arena figures for them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import micronn

MODELS = Path(micronn.__file__).parent / "models"

# Measured with the real TFLM (tflite-micro wheel, 64-bit host): planned head bytes.
TFLM_HEAD = {
    "person_detect": 55_296,
    "keyword_scrambled": 672,
    "micro_speech_quantized": 5_968,
    "hello_world_int8": 32,
    "hello_world_float": 128,
    "trained_lstm_int8": 1_536,
    "tiny_unet": 307_216,
    "tiny_unet_static": 307_200,
}
ALL_MODELS = sorted(TFLM_HEAD)


def model_path(name: str) -> Path:
    return MODELS / f"{name}.tflite"


def model_bytes(name: str) -> bytes:
    return model_path(name).read_bytes()


@pytest.fixture(params=ALL_MODELS)
def real_model(request: pytest.FixtureRequest) -> str:
    """Each bundled real model's name in turn."""
    return request.param


# -- conformance recording (benchmarks/conformance.py sets MICRONN_CONFORMANCE=out.json) -----------------------
# A passing test that ran the TFLM wheel and a micronn interpreter marks every (op, type) that interpreter
# executed as verified against TFLM.

_CONFORMANCE = os.environ.get("MICRONN_CONFORMANCE")
_seen: dict[str, set] = {"ran": set(), "tflm": set()}
_verified: set[tuple[str, str]] = set()


def pytest_configure(config: pytest.Config) -> None:
    if not _CONFORMANCE:
        return
    from tflite_micro.python.tflite_micro import runtime

    from micronn.interpreter import Interpreter

    original_invoke, original_tflm = Interpreter.invoke, runtime.Interpreter.invoke

    def invoke(self: Interpreter) -> None:
        original_invoke(self)
        for kernels, nodes in zip(self._all_kernels, self._all_nodes):
            _seen["ran"].update((n.op.op, k.dtype_key(n)) for k, n in zip(kernels, nodes))

    def tflm_invoke(self, *a, **kw):
        _seen["tflm"].add(True)
        return original_tflm(self, *a, **kw)

    Interpreter.invoke, runtime.Interpreter.invoke = invoke, tflm_invoke


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    if _CONFORMANCE and call.when == "call":
        if outcome.get_result().passed and _seen["tflm"]:
            _verified.update(_seen["ran"])
        _seen["ran"].clear()
        _seen["tflm"].clear()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CONFORMANCE:
        Path(_CONFORMANCE).write_text(json.dumps(sorted(_verified)))
