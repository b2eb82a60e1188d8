"""The persistent tail keeps one copy of identical read-only per-channel arrays (``Sharing.persistent``): smaller,
same bytes out, and TFLM's own figures (planner="tflm", the footprint model) still count every copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.arena import Arena
from micronn.footprint import estimate_tflm_tail
from micronn.planners import Sharing
from micronn.testing import random_inputs, run_tflm, tflm_arena
from micronn.tflite.reader import read

MODELS = Path(__file__).parent / "models"
UNSHARED = Sharing(persistent=False)


def _outputs(it: Interpreter, xs: list[np.ndarray]) -> list[bytes]:
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i).tobytes() for i in range(len(it.model.main.outputs))]


def test_arena_hands_out_one_copy_per_content() -> None:
    a = Arena.of(256)
    first = a.persistent(8, "op 0", key=b"\x01" * 8)
    first[...] = 1
    other = a.persistent(8, "op 1", key=b"\x02" * 8)
    again = a.persistent(8, "op 2", key=b"\x01" * 8)
    unkeyed = a.persistent(8, "op 3")
    assert again.ctypes.data == first.ctypes.data and other.ctypes.data != first.ctypes.data
    assert unkeyed.ctypes.data not in (first.ctypes.data, other.ctypes.data)
    assert a.tail_used == 48 and a.tail_shared == 16 and len(a.tail) == 3
    assert [(e.what, e.offset) for e in a.reused] == [("op 2", a.tail[0].offset)]
    measuring = Arena(None)  # the measuring pass counts the same way
    for key in (b"x", b"y", b"x", None):
        assert measuring.persistent(1, "op", key) is None
    assert (measuring.tail_used, measuring.tail_shared) == (48, 16)


@pytest.mark.parametrize("name", ["unet_wide_int8", "vnet_like_int8", "float_cnn"])
def test_shared_tail_is_smaller_and_exact(name: str) -> None:
    """Real models whose layers compute identical per-channel arrays: the shared tail is smaller by exactly the
    copies it reuses, and every output byte is the unshared interpreter's and the TFLM wheel's."""
    data = (MODELS / f"{name}.tflite").read_bytes()
    shared, unshared = Interpreter(data), Interpreter(data, sharing=UNSHARED)
    rep = shared.arena_report()
    assert rep["tail_shared_bytes"] > 0 and shared.tail < unshared.tail
    assert shared.tail + shared.tail_shared == unshared.tail and unshared.tail_shared == 0
    assert shared.head == unshared.head and shared.arena_size == shared.head + shared.tail
    buf = shared._arena.buf
    starts = {e["offset"]: e["size"] for e in rep["tail"]}
    for e in rep["tail_reused"]:  # each reuse points at a copy holding at least its bytes
        assert starts[e["offset"]] >= e["size"]
    tflm_outputs = None
    for seed in (0, 1):
        xs = random_inputs(data, seed)
        want = _outputs(unshared, xs)
        assert _outputs(shared, xs) == want
        if seed == 0:
            tflm_outputs = [o.tobytes() for o in run_tflm(data, xs)]
            assert want == tflm_outputs
    reused = [k for k in shared._kernels if hasattr(k, "mults") and not k.mults.flags.writeable]
    assert reused and all(k.mults.ctypes.data - buf.ctypes.data in starts for k in reused)


def test_tflm_figures_keep_every_copy() -> None:
    data = (MODELS / "unet_wide_int8.tflite").read_bytes()
    tflm = Interpreter(data, planner="tflm")
    assert tflm.tail_shared == 0 and tflm.tail == Interpreter(data, sharing=UNSHARED).tail
    # the footprint model prices TFLM's tail from any interpreter, shared or not
    assert estimate_tflm_tail(Interpreter(data)) == estimate_tflm_tail(tflm) == estimate_tflm_tail(data)
    assert abs(estimate_tflm_tail(data) - tflm_arena(data)["tail"]) <= 0.01 * tflm_arena(data)["tail"]


def test_writing_a_shared_copy_fails_loudly() -> None:
    it = Interpreter(read((MODELS / "float_cnn.tflite").read_bytes()))
    it.allocate_tensors()
    views = [k.mults for k in it._kernels if hasattr(k, "mults")]
    assert views and not any(v.flags.writeable for v in views)
    with pytest.raises(ValueError):
        views[0][...] = 0
