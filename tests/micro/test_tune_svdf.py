"""Generated SVDF kernels (``templates.svdf``): every config byte-identical to the interpreter (outputs and the
shifted state) on the host (portable C), an emulated Cortex-M4 (the assembly stages), Cortex-M0 and RV32 (the
portable path), from a random state.

The layers cover both state requantizations (SMMLAR: no right shift; folded: a right shift), memories of 4, 12
(8q + 4: the assembly's C tail) and 32 slots, input sizes that leave a partial group of four, batch 2, more than 64
filters (two chunks of the split stages), and feature weights whose pairs need lower.paired_rows's corrections.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import micronn
from micronn.micro import DeviceModel, Session, lower, templates, tune
from micronn.micro.runtime import run_model
from micronn.micro.templates import svdf
from micronn.models import bundled_model
from micronn.testing import T, op_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]
# (batch, input size, filters, memory, input zero point, feature scale): feature scale 0.3 gives the state's
# requantization a left shift (SMMLAR form), 0.0004 a right shift (folded form)
LAYERS = [(1, 16, 8, 8, -7, 0.3), (2, 10, 12, 12, 5, 0.0004), (1, 96, 4, 32, -128, 0.3),
          (1, 33, 68, 4, 0, 0.0004)]


def svdf_model(batch: int, size: int, filters: int, memory: int, in_zp: int, wf_scale: float, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    wf = rng.integers(-128, 128, (filters, size))
    wf[1::2, ::3] = -128  # beside a negative weight of the row before: corrections in the paired layout
    wf[0::2, ::3] = -rng.integers(1, 128, wf[0::2, ::3].shape)
    state_scale, wt_scale = 0.02, 0.003
    tensors = [T((batch, size), "int8", 0.1, in_zp),
               T((filters, size), "int8", wf_scale, 0, data=wf),
               T((filters, memory), "int16", wt_scale, 0, data=rng.integers(-32768, 32768, (filters, memory))),
               T((filters,), "int32", state_scale * wt_scale, 0, data=rng.integers(-2**20, 2**20, filters)),
               T((batch, filters * memory), "int16", state_scale, 0, variable=True)]
    return op_model("SVDF", tensors, [T((batch, filters), "int8", 0.4, -128)],
                    schema.options("SVDF", rank=1, fused_activation_function=1))


def _layer(spec: tuple, seed: int = 0) -> tuple[micronn.Interpreter, lower.Task]:
    it = micronn.Interpreter(svdf_model(*spec, seed=seed))
    it.allocate_tensors()
    (task,) = [t for t in lower.lower_model(it) if t.symbol == svdf.GENERIC_SYMBOL]
    return it, task


def test_argument_words_are_svdf_s8s() -> None:
    src = (lower.include_dir() / "svdf.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == svdf.ARGS


def test_shape_of_covers_both_requantizations() -> None:
    shapes = [svdf.shape_of(t.symbol, t.args) for t in (_layer(spec)[1] for spec in LAYERS)]
    assert all(s is not None for s in shapes)
    assert shapes[0].shift_1 >= 0 and shapes[1].shift_1 < 0  # SMMLAR and folded
    assert shapes[1].batches == 2 and shapes[3].filters == 68
    _, task = _layer(LAYERS[0])
    assert templates.covered(task)[0] is svdf
    for word, value in (("RANK", 2), ("MEMORY", 7), ("FILTERS", 6), ("STATE_ZP", 3), ("INPUT_SIZE", 97)):
        args = list(task.args)
        args[svdf.ARGS.index(word)] = value
        assert svdf.shape_of(task.symbol, args) is None, word
    space = svdf.space(shapes[0])
    assert len(space) == len({svdf.symbol(shapes[0], c) for c in space}) == 32
    with pytest.raises(ValueError, match="split"):
        svdf.check_config({**space[0], "split": 2})


@pytest.mark.parametrize("layer", range(len(LAYERS)))
@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str, layer: int) -> None:
    """Each device runs a quarter of the configs on each layer (every config meets every layer on some device)."""
    it, _ = _layer(LAYERS[layer], seed=layer)
    ((op, t, shape),) = tune.layers(it)
    assert t is svdf
    d = DEVICES.index(device)
    configs = [c for i, c in enumerate(t.space(shape)) if (i + d + layer) % len(DEVICES) == 0]
    results, (_, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=layer)
    assert base_ok
    bad = [c for c, (_, ok) in zip(configs, results) if not ok]
    assert not bad, f"{device}, {shape.key}: outputs differ for {bad}"


def test_the_state_moves_on_like_the_interpreters() -> None:
    """Three invokes in a row through a tuned kernel: outputs and state equal the interpreter's at every step
    (the bench above checks one step from a random state)."""
    spec = LAYERS[1]
    it, task = _layer(spec)
    shape = svdf.shape_of(task.symbol, task.args)
    log = [{"target": "cortex-m4", "template": svdf.NAME, "key": shape.key, "verified": True, "instructions": 1,
            "config": {"unroll": 0, "time": 1, "split": 1, "dot": 1}}]
    rng = np.random.default_rng(3)
    xs = [rng.integers(-128, 128, (spec[0], spec[1])).astype(np.int8) for _ in range(3)]
    with Session("cortex-m4") as sess:
        dm = DeviceModel(svdf_model(*spec), sess, tuning_log=log)
        assert [r["template"] for r in dm.tuned] == ["svdf"]
        ref = micronn.Interpreter(svdf_model(*spec))
        for x in xs:
            ref.set_input(x, 0)
            ref.invoke()
            (got,) = dm.invoke([x])
            assert got.tobytes() == ref.get_output(0).tobytes()


def test_keyword_scrambled_with_generated_svdfs() -> None:
    """Every SVDF of the hotword model through its best generated kernel: byte-identical, fewer instructions."""
    m = bundled_model("keyword_scrambled")
    it = micronn.Interpreter(m)
    it.allocate_tensors()
    log = [{"target": "cortex-m4", "template": t.NAME, "key": shape.key, "verified": True, "instructions": 1,
            "config": {"unroll": 0, "time": 1, "split": 1, "dot": 1}} for _, t, shape in tune.layers(it)
           if t is svdf]
    assert len(log) == 7
    x = micronn.ir.random_inputs(it.model, 1)
    plain = run_model(m, "cortex-m4", x, profile=True)
    tuned = run_model(m, "cortex-m4", x, profile=True, tuning_log=log)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(plain["outputs"], tuned["outputs"]))
    svdfs = [(a["instructions"], b["instructions"]) for a, b in zip(plain["ops"], tuned["ops"]) if a["op"] == "SVDF"]
    assert all(b < a for a, b in svdfs), svdfs
