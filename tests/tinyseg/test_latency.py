"""The latency model: calibrated base, storage costs from real transfers, Table 5's ordering of effects."""

from __future__ import annotations

from pathlib import Path

import pytest

from micronn.models import bundled_model
from micronn.tflite.reader import read
from micronn.tinyseg import latency, optimize

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_tiny_unet_base_is_calibrated_to_the_paper():
    m = read(bundled_model("tiny_unet"))
    assert latency.compute_seconds(m) == pytest.approx(1.190, rel=0.01)  # Table 5, original model


@pytest.fixture(scope="module")
def vnet():
    m = read(MODELS / "vnet_like_int8.tflite")
    return m, optimize(m, latency=False).model


def test_spilling_costs_storage_time_and_async_erase_hides_flash_erases(vnet):
    base, opt = vnet
    assert latency.run(base, "flash")["storage_ms"] == 0
    sync = latency.run(opt, "flash")
    hidden = latency.run(opt, "flash", async_erase=True)
    assert sync["storage_ms"] > 0 and sync["bytes_written"] > 0
    assert hidden["total_ms"] < sync["total_ms"]
    assert [y.tobytes() for y in sync["outputs"]] == [y.tobytes() for y in hidden["outputs"]]
    packed = latency.run(opt, "qspi", compress=True)
    assert packed["ratio"] > 1 and packed["bytes_written"] < latency.run(opt, "qspi")["bytes_written"]


def test_predict_orders_storages_and_breakdown_has_table_5_rows(vnet):
    base, opt = vnet
    assert latency.predict(opt, "memory") <= latency.predict(opt, "file") < latency.predict(opt, "qspi")
    rows = latency.breakdown({"base": base, "+ fused fetching": opt}, ("flash", "file"))
    assert [r["step"] for r in rows] == ["base", "+ fused fetching", "+ compression", "+ async erase"]
    assert rows[0]["flash"] == rows[0]["file"] < rows[1]["flash"] and rows[-1]["file"] is None
