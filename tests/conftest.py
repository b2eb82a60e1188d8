"""Shared fixtures: the bundled real models and TFLM's measured arena figures for them."""

from __future__ import annotations

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
