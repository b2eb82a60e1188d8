"""Large quantized convolutions run band by band of output rows (bounded host memory): with a budget small enough
to cut every layer into bands of one or a few rows, and no cached padded inputs, every CONV_2D and
DEPTHWISE_CONV_2D case and real model still gives the TFLM wheel's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import model_path
from test_conv_2d import CASES as CONV_CASES
from test_conv_2d import conv_model
from test_depthwise_conv_2d import CASES as DW_CASES
from test_depthwise_conv_2d import dw_model

from micronn.kernels import _conv_util
from micronn.testing import assert_same_as_tflm


@pytest.fixture(params=[1, 700], ids=["row-budget-1B", "row-budget-700B"])
def tiny_bands(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """1 byte: one output row per band; 700 bytes: bands of a few rows, the last one shorter."""
    monkeypatch.setattr(_conv_util, "BAND_BYTES", request.param)
    monkeypatch.setattr(_conv_util, "PAD_CACHE_BYTES", 0)
    return request.param


@pytest.mark.parametrize("kind", ["int8", "int16"])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_conv_in_bands_matches_tflm(kind: str, case: dict, tiny_bands: int) -> None:
    assert_same_as_tflm(conv_model(kind, **case), runs=2)


@pytest.mark.parametrize("kind", ["int8", "int16"])
@pytest.mark.parametrize("case", DW_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_depthwise_in_bands_matches_tflm(kind: str, case: dict, tiny_bands: int) -> None:
    assert_same_as_tflm(dw_model(kind, **case), runs=2)


EXTRA = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.parametrize("path", [model_path("person_detect"), EXTRA / "mobilenet_v2_pad_int8.tflite",
                                  EXTRA / "vnet_like_int8.tflite"], ids=lambda p: p.stem)
def test_models_in_bands_match_tflm(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stride-2 depthwise layers (person_detect), PADs folded into explicit padding (MobileNetV2), an hourglass
    with skip connections (the V-Net-like net), with bands of a few rows."""
    monkeypatch.setattr(_conv_util, "BAND_BYTES", 64 << 10)
    monkeypatch.setattr(_conv_util, "PAD_CACHE_BYTES", 0)
    counts: list[int] = []
    bands = _conv_util.Window.bands
    monkeypatch.setattr(_conv_util.Window, "bands", lambda win, row: counts.append(len(b := bands(win, row))) or b)
    assert_same_as_tflm(path.read_bytes(), seed=3, runs=1)
    assert max(counts) > 2, "no layer ran in bands"
