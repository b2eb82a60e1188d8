"""Stripes repeat their layers' per-channel arrays; the shared tail keeps one copy, so a patched model's tail stays
near the unpatched one's, with the original's bytes out (micronn and the TFLM wheel)."""

from __future__ import annotations

from micronn import Interpreter
from micronn.models import bundled_model
from micronn.patch import patch, search
from micronn.planners import Sharing
from micronn.testing import random_inputs, run_micronn, run_tflm
from micronn.tflite.reader import read
from micronn.tflite.writer import write


def test_patched_person_detect_keeps_one_copy_of_each_layers_arrays() -> None:
    data = bundled_model("person_detect")
    pm = patch(read(data), 0, 3, 10)
    shared, unshared = Interpreter(pm), Interpreter(pm, sharing=Sharing(persistent=False))
    plain = Interpreter(data)
    assert shared.tail < unshared.tail and shared.tail + shared.tail_shared == unshared.tail
    # ten stripes of four layers: nine extra copies of each layer's multipliers and shifts (16-byte aligned)
    layers = [op for op in read(data).main.operators[:4]]
    copies = 9 * sum(2 * -(-4 * read(data).main.tensors[op.outputs[0]].shape[-1] // 16) * 16 for op in layers)
    assert shared.tail_shared == copies
    # what is left beyond the unpatched tail is the join's own parameters, not the stripes' layers
    assert shared.tail - plain.tail < 128
    patched = write(pm)
    for seed in (0, 3):
        xs = random_inputs(data, seed)
        want = [o.tobytes() for o in run_tflm(data, xs)]
        assert [o.tobytes() for o in run_micronn(data, xs)] == want
        assert [o.tobytes() for o in run_micronn(patched, xs)] == want
        assert [o.tobytes() for o in run_tflm(patched, xs)] == want


def test_search_prices_the_tail_it_is_given() -> None:
    """The default prices micronn's shared tail; a pricing that counts every copy (TFLM's, as TinySeg's steps do)
    never ranks a patching cheaper than micronn's shared tail does."""
    data = bundled_model("person_detect")
    own = search(data, 0.05, stripes=(4, 8))
    every_copy = search(data, 0.05, stripes=(4, 8), tail=lambda it: it.tail + it.tail_shared)
    assert own.best.n and own.best.tail < own.before.tail + 128
    for a, b in zip(own.tried, every_copy.tried):
        assert (a.start, a.end, a.n, a.head) == (b.start, b.end, b.n, b.head) and a.tail <= b.tail
    assert own.best.total <= every_copy.best.total
