"""Patched real networks give the original's bytes on micronn and on the TFLM wheel, and need less arena.

The configurations are equal splits ``micronn.patch.search`` considers (``benchmarks/memory.py`` prints its choice).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from micronn import Interpreter
from micronn.models import bundled_model
from micronn.patch import Stage, macs, patch, patch_stages
from micronn.planners import Sharing
from micronn.testing import random_inputs, run_micronn, run_tflm, tflm_arena
from micronn.tflite.reader import read
from micronn.tflite.writer import write

MODELS = Path(__file__).resolve().parents[1] / "models"


def _load(name: str) -> bytes:
    return bundled_model(name) if name == "person_detect" else (MODELS / f"{name}.tflite").read_bytes()


def _total(model) -> tuple[int, int]:
    it = Interpreter(model)
    it.allocate_tensors()
    return it.head, it.tail


# (model, first operator, last operator, stripes)
CASES = [("person_detect", 0, 3, 10), ("vww_mobilenet_96x96x3_int8", 0, 3, 4), ("mobilenet_v2_pad_int8", 0, 7, 8)]


@pytest.mark.parametrize(("name", "start", "end", "n"), CASES, ids=[c[0] for c in CASES])
def test_patched_network_is_byte_identical_and_smaller(name: str, start: int, end: int, n: int) -> None:
    data = _load(name)
    m = read(data)
    pm = patch(m, start, end, n)
    patched = write(pm)
    for seed in (0, 1):
        xs = random_inputs(data, seed)
        want = [o.tobytes() for o in run_tflm(data, xs)]
        assert [o.tobytes() for o in run_micronn(patched, xs)] == want
        assert [o.tobytes() for o in run_tflm(patched, xs)] == want
    head, tail = _total(m)
    p_head, p_tail = _total(pm)
    assert p_head + p_tail < head + tail
    assert macs(pm) - macs(m) <= 0.2 * macs(m)
    assert tflm_arena(patched)["head"] < tflm_arena(data)["head"] or name == "person_detect"


def test_mobilenet_v2_peak_is_five_times_below_tflm() -> None:
    """MCUNetV2's figure of merit: peak activation memory (the head) against TFLM's, within 20 % more MACs."""
    data = _load("mobilenet_v2_pad_int8")
    pm = patch(read(data), 0, 7, 8)
    head, _ = _total(pm)
    assert 5 * head <= tflm_arena(data)["head"]
    assert macs(pm) <= 1.2 * macs(read(data))


@pytest.mark.parametrize("name", ["person_detect", "vww_mobilenet_96x96x3_int8"])
def test_patched_network_runs_on_devices_and_as_firmware(name: str, tmp_path: Path) -> None:
    """The stripes run as device tasks (slices the plan placed in their input's bytes need no copy) on the
    host-driven runtime and in exported firmware, with the wheel's bytes, and the firmware's arena is the
    patched plan's head."""
    pytest.importorskip("ziglang")
    from micronn import export
    from micronn.micro import run_model

    data = _load(name)
    start, end, n = next(c[1:] for c in CASES if c[0] == name)
    pm = patch(read(data), start, end, n)
    patched = write(pm)
    xs = random_inputs(data, 2)
    want = [o.tobytes() for o in run_tflm(data, xs)]
    assert [o.tobytes() for o in run_model(patched, "host", xs)["outputs"]] == want
    proj = export.export(patched, tmp_path / "fw")
    assert proj.arena_bytes <= _total(pm)[0]
    res = export.run(proj, xs, device="host")
    assert res.identical and [o.tobytes() for o in res.outputs] == want
    if name == "person_detect" and importlib.util.find_spec("unicorn") is not None:
        res = export.run(proj, xs)  # the emulated Cortex-M4: all of RAM, stack included, under TFLM's head alone
        assert res.identical and res.ram_bytes < tflm_arena(data)["head"]


def test_mobilenet_v2_device_ram_is_five_times_below_tflm(tmp_path: Path) -> None:
    """The MobileNetV2 figure on the device: patched in two stages (the split ``benchmarks/memory.py``'s search
    picks), the exported firmware keeps per-channel multipliers and shifts with the weights in flash, so all of its
    RAM, stack included, is at most a fifth of TFLM's whole arena (head + tail) with at most 20 % more MACs, the
    wheel's bytes out; ``Sharing(rom=True)`` is the planner's account of the same arena."""
    pytest.importorskip("ziglang")
    pytest.importorskip("unicorn")
    from micronn import export

    data = _load("mobilenet_v2_pad_int8")
    m = read(data)
    pm = patch_stages(m, [Stage(0, 3, 8), Stage(4, 7, 8)])
    assert macs(pm) <= 1.2 * macs(m)
    it = Interpreter(pm, sharing=Sharing(rom=True))
    it.allocate_tensors()
    tflm_total = tflm_arena(data)["total"]
    assert 5 * (it.head + it.tail) <= tflm_total
    proj = export.export(pm, tmp_path / "fw")
    assert proj.arena_bytes <= it.head + it.tail
    xs = random_inputs(data, 3)
    res = export.run(proj, xs)
    assert res.identical and [o.tobytes() for o in res.outputs] == [o.tobytes() for o in run_tflm(data, xs)]
    assert 5 * res.ram_bytes <= tflm_total
