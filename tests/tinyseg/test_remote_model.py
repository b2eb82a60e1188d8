"""An optimized U-Net whose spilled tensors live on a remote host over TCP: identical outputs while the host is up,
a clear micronn error (never wrong outputs) when it dies or corrupts a transfer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micronn import Interpreter
from micronn.errors import MicronnError
from micronn.storage.remote import RemoteStorage, serve
from micronn.testing import random_inputs
from micronn.tinyseg import optimize

UNET = Path(__file__).parent.parent.parent / "micronn" / "models" / "tiny_unet.tflite"


@pytest.fixture(scope="module")
def spilled():
    res = optimize(UNET, latency=False)
    assert any(op.op == "Spill" for op in res.model.main.operators)
    x = random_inputs(res.model, seed=5)
    ref = Interpreter(UNET)
    for i, v in enumerate(x):
        ref.set_input(v, i)
    ref.invoke()
    return res.model, x, ref.get_output(0).copy()


def _run(model, x, storage) -> np.ndarray:
    it = Interpreter(model, storage=storage)
    for i, v in enumerate(x):
        it.set_input(v, i)
    it.invoke()
    return it.get_output(0)


def test_remote_host_gives_identical_outputs_then_a_clear_error_when_it_dies(spilled) -> None:
    model, x, expected = spilled
    server = serve()
    storage = RemoteStorage("127.0.0.1", server.port, timeout_s=2.0, retries=1)
    try:
        assert np.array_equal(_run(model, x, storage), expected)
        server.close()  # the host goes away between two inferences
        with pytest.raises(MicronnError, match="(?i)refused|remote|host|connection"):
            _run(model, x, storage)
    finally:
        storage.close()
        server.close()


def test_corrupted_transfers_never_give_wrong_outputs(spilled) -> None:
    model, x, _ = spilled
    server = serve(fault="corrupt_get")  # every GET reply has a flipped byte
    storage = RemoteStorage("127.0.0.1", server.port, timeout_s=2.0, retries=1)
    try:
        with pytest.raises(MicronnError, match="(?i)crc|checksum|corrupt"):
            _run(model, x, storage)
    finally:
        storage.close()
        server.close()
