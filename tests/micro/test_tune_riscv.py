"""The templates' knobs for cores without SIMD (``conv_2d_1x1``'s ``step`` and ``requant``, ``depthwise_conv_2d``'s
``chain``): configs from before them still apply and write the same code, the new values keep the interpreter's
bytes on RV32 (whose asm multiply-adds only it runs) and the Cortex-M4 (DSP path), and the shipped RV32 log keeps
person_detect's bytes.

Every config of both templates, new values included, also runs on riscv32 in the Latin squares of
``test_tune.py`` and ``test_tune_depthwise.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import micronn
from micronn.micro import lower, run_model, templates, tune
from micronn.micro.templates import conv_2d_1x1, depthwise_conv_2d
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

TUNED = Path(micronn.__file__).parent / "micro" / "tuned"
PERSON = Path(micronn.__file__).parent / "models" / "person_detect.tflite"
NEW_BLOCKS = ("mn_out_q", "MN_ROW", "MN_MAC")  # C that only the new knob values bring into a source


def _filter(rng: np.random.Generator, shape: tuple[int, ...], axis: int) -> T:
    """int8 weights with per-channel scales along ``axis``."""
    return T(shape, "int8", list(rng.uniform(0.002, 0.02, shape[axis])), 0, axis=axis,
             data=rng.integers(-127, 128, shape))


def pointwise(n: int, cin: int, cout: int, seed: int) -> bytes:
    """int8 CONV_2D 1x1 over ``n`` single pixels, input zero point -3, RELU (the clamped output path)."""
    rng = np.random.default_rng(seed)
    return op_model("CONV_2D", [T((n, 1, 1, cin), "int8", 0.05, -3), _filter(rng, (cout, 1, 1, cin), 0),
                                T((cout,), "int32", data=rng.integers(-30000, 30000, cout))],
                    [T((n, 1, 1, cout), "int8", 0.3, 4)],
                    schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1, fused_activation_function=1))


def depthwise(h: int, w: int, cin: int, mult: int, stride: int, pad: int, act: int, seed: int) -> bytes:
    """int8 DEPTHWISE_CONV_2D 3x3, input zero point -3; ``pad`` 0 SAME, 1 VALID."""
    rng = np.random.default_rng(seed)
    oc = cin * mult
    oh, ow = (-(-h // stride), -(-w // stride)) if pad == 0 else ((h - 3) // stride + 1, (w - 3) // stride + 1)
    return op_model("DEPTHWISE_CONV_2D", [T((1, h, w, cin), "int8", 0.05, -3), _filter(rng, (1, 3, 3, oc), 3),
                                          T((oc,), "int32", data=rng.integers(-30000, 30000, oc))],
                    [T((1, oh, ow, oc), "int8", 0.3, 4)],
                    schema.options("DEPTHWISE_CONV_2D", padding=pad, stride_h=stride, stride_w=stride,
                                   depth_multiplier=mult, fused_activation_function=act))


def _records(target: str) -> list[dict]:
    return templates.load_log(TUNED / f"person_detect_{target}.json")


def test_old_records_lack_the_new_knobs_and_still_apply() -> None:
    """The shipped Cortex-M4 log predates the knobs: each record takes the defaults, apply-best keeps every shape,
    and each applied kernel is the symbol the config had before (so its measured count still holds)."""
    records = _records("cortex-m4")
    assert not any(set(r["config"]) & {"step", "requant", "chain"} for r in records)
    it = micronn.Interpreter(PERSON)
    it.allocate_tensors()
    tasks = lower.lower_model(it)
    best = templates.best(records, "cortex-m4")
    assert {k for _, k in best} == {shape.key for _, _, shape in tune.layers(it)}
    _, sources, applied = templates.apply(tasks, records, "cortex-m4")
    assert len(applied) == 30 and len(sources) == 22  # 28 convolutions, the pool, the softmax
    for a in applied:
        t = templates.TEMPLATES[a["template"]]
        old = best[(a["template"], a["key"])]["config"]
        assert a["config"] == {**t.DEFAULTS, **old}
        shape = next(s for _, tt, s in tune.layers(it) if tt is t and s.key == a["key"])
        assert a["symbol"] == t.symbol(shape, old)


@pytest.mark.parametrize("template", [conv_2d_1x1, depthwise_conv_2d])
def test_old_configs_write_the_same_code(template) -> None:
    """A config without the new knobs and the same config with their defaults spelled out give one symbol and one
    source, free of the new knobs' C; a new value changes both."""
    if template is conv_2d_1x1:
        shape = conv_2d_1x1.Shape(13, 7, 3)
        old = {"tile_oc": 2, "tile_px": 4, "expand": 1, "unroll": 2, "fused": 0}
        new = {**old, "expand": 0, "fused": 1, "step": 1, "requant": 1}
    else:
        shape = depthwise_conv_2d.Shape(1, 5, 7, 5, 5, 7, 1, 3, 3, 1, 1, 1, 1)
        old = {"tile_c": 2, "tile_w": 2, "unroll": 0, "border": 1, "expand": 1}
        new = {**old, "chain": 1}
    name, text = template.generate(shape, old)
    assert (name, text) == template.generate(shape, {**old, **template.DEFAULTS})
    assert not any(b in text for b in NEW_BLOCKS)
    new_name, new_text = template.generate(shape, new)
    assert new_name != name and any(b in new_text for b in NEW_BLOCKS)
    assert template.check_config(old) == {**old, **template.DEFAULTS}


def test_configs_are_checked() -> None:
    base = {"tile_oc": 2, "tile_px": 4, "expand": 0, "unroll": 2, "fused": 1}
    with pytest.raises(ValueError, match="step"):
        conv_2d_1x1.check_config({**base, "step": 2})
    with pytest.raises(ValueError, match="knobs"):
        conv_2d_1x1.check_config({**base, "stride": 1})
    with pytest.raises(ValueError, match="knobs"):
        conv_2d_1x1.check_config({"tile_oc": 2})
    with pytest.raises(ValueError, match="chain"):
        depthwise_conv_2d.check_config({"tile_c": 1, "tile_w": 1, "unroll": 0, "border": 1, "expand": 0, "chain": 3})
    for t, shape in ((conv_2d_1x1, conv_2d_1x1.Shape(8, 16, 9)),
                     (depthwise_conv_2d, depthwise_conv_2d.Shape(1, 6, 6, 8, 6, 6, 1, 3, 3, 1, 1, 1, 1))):
        space = t.space(shape)
        assert len({t.symbol(shape, c) for c in space}) == len(space)
        assert len({len(t.features(shape, c)) for c in space}) == 1


@pytest.mark.parametrize("device", ["riscv32", "cortex-m4", "cortex-m0"])
def test_wide_filters_and_remainders(device: str) -> None:
    """Single-channel steps where the tile's filter rows lie too far apart for RV32's 12-bit load offsets (the C
    multiply-adds instead of the asm ones), beside tiles that fit, over channel and pixel counts the tiles do not
    divide (300 input channels, 9 output channels, 3 pixels of a batch of 3)."""
    it = micronn.Interpreter(pointwise(3, 300, 9, seed=7))
    it.allocate_tensors()
    ((op, t, shape),) = tune.layers(it)
    configs = [c for c in t.space(shape) if c["step"] == 1 and c["unroll"] != 2 and c["tile_oc"] in (4, 8)]
    assert {conv_2d_1x1._row_fits(shape, c) for c in configs} == {True, False}
    results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=7)
    assert base_ok
    assert [c for c, (_, ok) in zip(configs, results) if not ok] == []


@pytest.mark.parametrize("device", ["riscv32", "cortex-m4"])
def test_chained_depthwise_with_a_multiplier_and_borders(device: str) -> None:
    """``chain`` on a layer with depth multiplier 2 (the 4-channel tile falls back to one channel), stride 2,
    VALID padding and a fused activation (the clamped output path), and on an odd SAME layer with borders."""
    for spec in ((7, 6, 6, 2, 2, 1, 1), (5, 7, 5, 1, 1, 0, 0)):
        it = micronn.Interpreter(depthwise(*spec, seed=3))
        it.allocate_tensors()
        ((op, t, shape),) = tune.layers(it)
        configs = [c for c in t.space(shape) if c["chain"] and c["unroll"] == (spec[3] == 1)]
        results, (_, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=3)
        assert base_ok
        assert [c for c, (_, ok) in zip(configs, results) if not ok] == []


def test_shipped_riscv32_log_with_auto() -> None:
    """``tuning_log="auto"`` on RV32 applies the RV32 log, its no-SIMD schedules among the chosen configs, every one
    below the generic kernel, and person_detect keeps the interpreter's bytes."""
    model = micronn.Interpreter(PERSON)
    xs = random_inputs(model.model, 5)
    res = run_model(model.model, "riscv32", xs, tuning_log="auto")
    assert len(res["tuned"]) == 30  # 28 convolutions, the pool, the softmax
    assert all(a["instructions"] < a["baseline_instructions"] for a in res["tuned"])
    assert any(a["config"].get("step") == 1 for a in res["tuned"])
    assert any(a["config"].get("chain") == 1 for a in res["tuned"])
    for i, x in enumerate(xs):
        model.set_input(x, i)
    model.invoke()
    assert np.array_equal(res["outputs"][0], model.get_output(0))
