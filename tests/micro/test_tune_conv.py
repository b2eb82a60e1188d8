"""Generated general int8 convolutions (``templates.conv_2d``): every config byte-identical to the interpreter on
an emulated Cortex-M4 (SMLAD path), Cortex-M0 and RV32 (no DSP); which tasks the template takes; the shipped
CIFAR-10 log applied by ``run_model``; the shipped tiny_unet log's coverage.

Each device runs every config of the template once, on one of four shapes chosen so that across the devices
every config also meets several shapes (a Latin square): stride 2, dilation 2, SAME and VALID padding, 1 and 3
input channels, output channels the tiles do not divide, odd pixel counts, a batch of two, a fused activation
(the clamped output path) and channels whose scales make a left shift and a zero multiplier.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import micronn
from micronn.micro import lower, run_model, templates, tune
from micronn.micro.templates import conv_2d, conv_2d_1x1
from micronn.models import bundled_model
from micronn.testing import T, op_model, random_inputs
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

DEVICES = ["cortex-m4", "cortex-m0", "riscv32"]
SAME, VALID = 0, 1
# (batch, h, w, in_c, out_c, (f_h, f_w), (s_h, s_w), (d_h, d_w), padding, fused activation: 0 none, 1 RELU)
SHAPES = [(1, 5, 7, 3, 5, (3, 3), (1, 1), (1, 1), SAME, 0),
          (2, 6, 5, 1, 7, (3, 2), (2, 1), (1, 1), VALID, 1),
          (1, 9, 8, 8, 6, (3, 3), (1, 1), (2, 2), SAME, 0),
          (1, 7, 7, 5, 9, (2, 3), (2, 2), (1, 1), VALID, 0)]


def conv(n: int, h: int, w: int, cin: int, cout: int, f: tuple[int, int], s: tuple[int, int] = (1, 1),
         d: tuple[int, int] = (1, 1), padding: int = SAME, act: int = 0, seed: int = 0,
         scales: list[float] | None = None) -> bytes:
    """A one-op model: int8 CONV_2D with per-channel scales, input zero point -3 (input offset 3)."""
    rng = np.random.default_rng(seed)
    scales = scales or list(rng.uniform(0.002, 0.02, cout))
    wt = T((cout, *f, cin), "int8", scales, 0, data=rng.integers(-127, 128, (cout, *f, cin)))
    b = T((cout,), "int32", data=rng.integers(-30000, 30000, cout))
    if padding == SAME:
        oh, ow = -(-h // s[0]), -(-w // s[1])
    else:
        oh, ow = (h - (f[0] - 1) * d[0] - 1) // s[0] + 1, (w - (f[1] - 1) * d[1] - 1) // s[1] + 1
    return op_model("CONV_2D", [T((n, h, w, cin), "int8", 0.05, -3), wt, b], [T((n, oh, ow, cout), "int8", 0.3, 4)],
                    schema.options("CONV_2D", padding=padding, stride_h=s[0], stride_w=s[1], dilation_h_factor=d[0],
                                   dilation_w_factor=d[1], fused_activation_function=act))


def layer(model: bytes) -> tuple[micronn.Interpreter, int, object, conv_2d.Shape]:
    it = micronn.Interpreter(model)
    it.allocate_tensors()
    ((op, t, shape),) = tune.layers(it)
    assert t is conv_2d
    return it, op, t, shape


def task_of(model: bytes) -> lower.Task:
    it = micronn.Interpreter(model)
    it.allocate_tensors()
    (task,) = lower.lower_model(it)
    return task


def test_shape_of_takes_general_convs_and_leaves_1x1_to_its_template() -> None:
    task = task_of(conv(1, 5, 7, 3, 5, (3, 3)))
    shape = conv_2d.shape_of(task.symbol, task.args)
    assert shape == conv_2d.Shape(1, 5, 7, 3, 5, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1)
    assert shape.macs == 35 * 5 * 27
    assert templates.covered(task) == (conv_2d, shape)
    # a 1x1 convolution with stride 1 is the matrix-product template's, by covered() and by shape_of itself
    pointwise = task_of(conv(1, 4, 4, 8, 4, (1, 1), padding=VALID))
    assert conv_2d.shape_of(pointwise.symbol, pointwise.args) is None
    assert templates.covered(pointwise)[0] is conv_2d_1x1
    # ... but a strided 1x1 one (which the 1x1 template refuses) is this one's
    strided = task_of(conv(1, 5, 5, 8, 4, (1, 1), (2, 2), padding=VALID))
    assert conv_2d_1x1.shape_of(strided.symbol, strided.args) is None
    assert templates.covered(strided)[0] is conv_2d
    # grouped filters, other kernels, words that are not integers: refused
    args = list(task.args)
    args[conv_2d.ARGS.index("F_C")] = 1
    assert conv_2d.shape_of(task.symbol, args) is None
    assert conv_2d.shape_of("mn_depthwise_conv_2d_s8", task.args) is None
    args = list(task.args)
    args[conv_2d.ARGS.index("F_H")] = None
    assert conv_2d.shape_of(task.symbol, args) is None
    assert conv_2d.shape_of(task.symbol, task.args[:-1]) is None


def test_space_keeps_stack_buffers_small() -> None:
    small = conv_2d.Shape(1, 5, 7, 3, 5, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1)
    assert len(conv_2d.space(small)) == 54  # 36 im2col configs (2 pixel tiles) + 18 direct (one pixel)
    # 3x3x200 taps: even one int16 receptive field (3,600 bytes) is over the limit, so only the direct path
    wide = conv_2d.Shape(1, 3, 3, 200, 3, 3, 600, 3, 3, 1, 1, 1, 1, 1, 1)
    configs = conv_2d.space(wide)
    assert configs and all(c["im2col"] == 0 for c in configs)
    assert [c for c in configs if c["table"]] == []  # 600 channels x 16 bytes: no table either
    for shape in (small, wide, conv_2d.Shape(1, 8, 8, 32, 8, 8, 64, 5, 5, 1, 1, 1, 1, 2, 2)):
        assert all(conv_2d.buffer_bytes(shape, c) <= conv_2d.BUFFER_LIMIT for c in conv_2d.space(shape))
    with pytest.raises(ValueError, match="tile_px 2 needs im2col"):
        conv_2d.check_config({"im2col": 0, "tile_oc": 1, "tile_px": 2, "unroll": 1, "table": 0})
    with pytest.raises(ValueError, match="tile_oc"):
        conv_2d.check_config({"im2col": 1, "tile_oc": 3, "tile_px": 2, "unroll": 1, "table": 0})


@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str) -> None:
    d = DEVICES.index(device)
    for s, (n, h, w, cin, cout, f, st, dil, pad, act) in enumerate(SHAPES):
        scales = [0.01, 1e-12, 300.0, *np.linspace(0.003, 0.02, cout - 3)] if s == 3 else None  # left shift, 0
        it, op, t, shape = layer(conv(n, h, w, cin, cout, f, st, dil, pad, act, seed=s, scales=scales))
        if scales:
            assert max(it._kernels[op].shifts) > 0 and min(it._kernels[op].mults) == 0
        space = t.space(shape)
        assert len(space) == 54
        configs = [c for i, c in enumerate(space) if (i + d) % len(SHAPES) == s]
        results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=s)
        assert base_ok
        bad = [c for c, (_, ok) in zip(configs, results) if not ok]
        assert not bad, f"{device}, shape {shape.key}: outputs differ for {bad}"
        assert all(x > 0 for x, _ in results)


def test_direct_path_of_a_deep_layer() -> None:
    """Receptive fields too large for the buffer: the direct configs (offset added per tap) on the M4 and M0."""
    it, op, t, shape = layer(conv(1, 3, 4, 200, 6, (3, 3), seed=7))
    configs = [c for c in t.space(shape) if c["unroll"] != 2]
    assert configs and all(c["im2col"] == 0 for c in configs)
    for device in ("cortex-m4", "cortex-m0"):
        results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=7)
        assert base_ok and all(ok for _, ok in results), (device, results)


def _benchmark() -> object:
    """benchmarks/device.py, whose CIFAR-10 convolutions the shipped log was tuned on."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "device.py"
    spec = importlib.util.spec_from_file_location("micronn_bench_device", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_cifar10_log() -> None:
    """``auto`` finds the shipped log for both CIFAR-10 convolutions; applied, each runs its generated kernel,
    below the generic kernel's count, with the interpreter's bytes."""
    bench = _benchmark()
    best = templates.best(templates.load_log(templates.AUTO), "cortex-m4")
    for name, (h, cin, cout) in bench.CIFAR.items():
        model = bench.cifar_conv(h, cin, cout)
        it, _, _, shape = layer(model)
        assert ("conv_2d", shape.key) in best, name
        xs = random_inputs(it.model, 4)
        res = run_model(model, "cortex-m4", xs, tuning_log="auto")
        (applied,) = res["tuned"]
        assert applied["template"] == "conv_2d" and applied["key"] == shape.key
        assert applied["instructions"] < applied["baseline_instructions"]
        it.set_input(xs[0])
        it.invoke()
        assert np.array_equal(res["outputs"][0], it.get_output(0))


def test_shipped_tiny_unet_log_covers_its_convolutions() -> None:
    """The shipped tiny_unet log has a verified config, below the generic kernel, for each of its general
    convolutions' shapes (whole-model runs take minutes on the emulator: benchmarks/device.py's territory)."""
    it = micronn.Interpreter(bundled_model("tiny_unet"))
    it.allocate_tensors()
    keys = {shape.key for _, t, shape in tune.layers(it) if t is conv_2d}
    path = Path(micronn.__file__).parent / "micro" / "tuned" / "tiny_unet_convs_cortex-m4.json"
    best = templates.best(templates.load_log(path), "cortex-m4")
    assert len(keys) == 11 and {k for t, k in best if t == "conv_2d"} == keys
