"""Generated 1x1-convolution kernels and their autotuning: every config byte-identical to the interpreter on the
host (gcc, portable C), an emulated Cortex-M4 (SMLAD path), Cortex-M0 (no DSP) and RV32 (no DSP, asm multiply-adds
for single-channel steps); the tuner's log applied by ``run_model``; the shipped person_detect log.

Each device runs every config of the template once, on one of three shapes chosen so that across the first three
devices every config also meets every shape (a Latin square; RV32 repeats the host's column): odd channel counts,
channel counts the tiles do not divide, a single pixel, a batch of two, and a fused activation (the clamped,
non-saturating output path).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import micronn
from micronn.cli import main as cli
from micronn.micro import lower, run_model, templates, tune
from micronn.micro.templates import conv_2d_1x1
from micronn.testing import Graph, Op, T, graph_model, op_model, random_inputs
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

SHIPPED = Path(micronn.__file__).parent / "micro" / "tuned" / "person_detect_cortex-m4.json"
DEVICES = ["host", "cortex-m4", "cortex-m0", "riscv32"]  # riscv32 alone runs the asm multiply-adds
# (batch, h, w, in_c, out_c, fused activation): 0 none, 1 RELU (act_min = the output zero point)
SHAPES = [(1, 1, 3, 13, 7, 0), (1, 1, 1, 6, 9, 1), (2, 2, 1, 21, 5, 0)]


def pointwise(n: int, h: int, w: int, cin: int, cout: int, act: int = 0, seed: int = 0) -> bytes:
    """A one-op model: int8 CONV_2D, 1x1 filter, stride 1, per-channel scales, input zero point -3."""
    rng = np.random.default_rng(seed)
    wt = T((cout, 1, 1, cin), "int8", list(rng.uniform(0.002, 0.02, cout)), 0,
           data=rng.integers(-127, 128, (cout, 1, 1, cin)))
    b = T((cout,), "int32", data=rng.integers(-30000, 30000, cout))
    return op_model("CONV_2D", [T((n, h, w, cin), "int8", 0.05, -3), wt, b], [T((n, h, w, cout), "int8", 0.3, 4)],
                    schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1, fused_activation_function=act))


def test_argument_words_are_conv_2d_s8s() -> None:
    """The template reads mn_conv_2d_s8's argument words by the kernel's own enum."""
    src = (lower.include_dir() / "conv_2d.c").read_text()
    names = re.search(r"enum \{([^}]*)\}", src).group(1)
    assert tuple(n.strip() for n in names.split(",") if n.strip()) == conv_2d_1x1.ARGS


def test_shape_of_covers_only_pointwise() -> None:
    it = micronn.Interpreter(pointwise(2, 3, 1, 5, 4))
    it.allocate_tensors()
    (task,) = lower.lower_model(it)
    assert conv_2d_1x1.shape_of(task.symbol, task.args) == conv_2d_1x1.Shape(5, 4, 6)
    args = list(task.args)
    args[conv_2d_1x1.ARGS.index("S_H")] = 2
    assert conv_2d_1x1.shape_of(task.symbol, args) is None
    assert conv_2d_1x1.shape_of("mn_depthwise_conv_2d_s8", task.args) is None
    with pytest.raises(ValueError, match="tile_oc"):
        conv_2d_1x1.check_config({**conv_2d_1x1.space(conv_2d_1x1.Shape(1, 1, 1))[0], "tile_oc": 3})


@pytest.mark.parametrize("device", DEVICES)
def test_every_config_matches_the_interpreter(device: str) -> None:
    space = conv_2d_1x1.space(conv_2d_1x1.Shape(1, 1, 1))
    d = DEVICES.index(device)
    for s, (n, h, w, cin, cout, act) in enumerate(SHAPES):
        configs = [c for i, c in enumerate(space) if (i + d) % len(SHAPES) == s]
        it = micronn.Interpreter(pointwise(n, h, w, cin, cout, act, seed=s))
        it.allocate_tensors()
        ((op, t, shape),) = tune.layers(it)
        results, (base, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=s)
        assert base_ok
        bad = [c for c, (_, ok) in zip(configs, results) if not ok]
        assert not bad, f"{device}, shape {shape}: outputs differ for {bad}"
        counted = [n for n, _ in results]
        assert all(x is None for x in counted) if device == "host" else all(x > 0 for x in counted)


@pytest.mark.parametrize("device", ["host", "cortex-m4", "riscv32"])
def test_left_shifts_and_zero_multipliers(device: str) -> None:
    """Scales that make a left shift (300) and a multiplier of 0 (1e-12) beside an ordinary channel."""
    rng = np.random.default_rng(5)
    wt = T((3, 1, 1, 5), "int8", [0.01, 1e-12, 300.0], 0, data=rng.integers(-127, 128, (3, 1, 1, 5)))
    model = op_model("CONV_2D", [T((1, 1, 3, 5), "int8", 0.05, -3), wt, T((3,), "int32", data=[5, -7, 9])],
                     [T((1, 1, 3, 3), "int8", 0.3, 4)], schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1))
    it = micronn.Interpreter(model)
    it.allocate_tensors()
    assert max(it._kernels[0].shifts) > 0 and min(it._kernels[0].mults) == 0
    ((op, t, shape),) = tune.layers(it)
    configs = [c for c in t.space(shape) if c["unroll"] == 2 and (c["expand"] == c["fused"] or c["requant"])]
    results, (_, base_ok) = tune.measure(it, op, t, shape, configs, device, seed=3)
    assert base_ok and all(ok for _, ok in results)


def test_tuner_finds_a_config_and_run_model_applies_it(tmp_path: Path) -> None:
    """A tiny budget (two rounds of four: random, then the cost model's picks), the log, and apply-best."""
    model = pointwise(1, 4, 4, 16, 12)
    log = tmp_path / "log.json"
    res = tune.tune_model(model, "cortex-m4", trials=8, batch=4, log=log)
    assert res["search"] == "xgboost" or res["search"].startswith("random")
    (layer,) = res["layers"]
    assert layer["measured"] == 8 and layer["failed"] == 0
    assert layer["best_instructions"] <= layer["baseline_instructions"]
    records = templates.load_log(log)
    assert len(records) == 8 and all(r["verified"] and r["target"] == "cortex-m4" for r in records)
    xs = random_inputs(model, 1)
    plain = run_model(model, "cortex-m4", xs)
    tuned = run_model(model, "cortex-m4", xs, tuning_log=log)
    it = micronn.Interpreter(model)
    it.allocate_tensors()
    it.set_input(xs[0])
    it.invoke()
    assert np.array_equal(tuned["outputs"][0], it.get_output(0))
    assert np.array_equal(plain["outputs"][0], it.get_output(0))
    (applied,) = tuned["tuned"]
    assert applied["config"] == layer["best_config"]
    assert tuned["instructions"] < plain["instructions"]
    # another target's log changes nothing
    other = run_model(model, "cortex-m0", xs, tuning_log=log)
    assert other["tuned"] == [] and np.array_equal(other["outputs"][0], it.get_output(0))


def test_tune_refuses_devices_without_counts() -> None:
    model = pointwise(1, 1, 2, 4, 4)
    with pytest.raises(tune.TuneError, match="counts no instructions"):
        tune.tune_model(model, "host")
    with pytest.raises(tune.TuneError, match="QEMU"):
        tune.tune_model(model, "qemu-m4")
    untemplated = op_model("RELU", [T((1, 4, 4, 2), "int8", 0.05, 0)], [T((1, 4, 4, 2), "int8", 0.05, 0)])
    with pytest.raises(tune.TuneError, match="no layer"):
        tune.tune_model(untemplated, "cortex-m4")


def test_cli_tune(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(pointwise(1, 2, 2, 8, 4))
    assert cli(["tune", str(path), "--target", "host", "-o", str(tmp_path / "x.json")]) == 1
    assert "counts no instructions" in capsys.readouterr().err
    assert cli(["tune", str(path), "--trials", "2", "-o", str(tmp_path / "log.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["target"] == "cortex-m4" and out["layers"][0]["measured"] == 2
    assert len((tmp_path / "log.json").read_text().splitlines()) == 2


def test_bad_logs_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json\n")
    with pytest.raises(templates.TuningLogError, match="not JSON"):
        templates.load_log(bad)
    with pytest.raises(templates.TuningLogError, match="lacks"):
        templates.load_log([{"target": "cortex-m4"}])
    with pytest.raises(templates.TuningLogError, match="cannot read"):
        templates.load_log(tmp_path / "missing.json")
    it = micronn.Interpreter(Path(micronn.__file__).parent / "models" / "keyword_scrambled.tflite")
    it.allocate_tensors()
    ((_, t, shape), *_) = [hit for hit in tune.layers(it) if hit[1].NAME == "svdf"]
    record = {"target": "cortex-m4", "template": "svdf", "key": shape.key, "instructions": 1, "verified": True,
              "config": {"unroll": 7, "time": 1, "split": 1, "dot": 1}}
    with pytest.raises(templates.TuningLogError, match="svdf:.*unroll"):  # a config outside the knobs' values
        templates.apply(lower.lower_model(it), [record], "cortex-m4")


def test_a_log_cut_by_a_killed_run_keeps_its_whole_records(tmp_path: Path) -> None:
    record = {"target": "cortex-m4", "template": "conv_2d_1x1", "key": "k", "config": {}, "instructions": 1,
              "verified": True}
    log = tmp_path / "cut.jsonl"
    log.write_text(json.dumps(record) + "\n" + json.dumps(record)[:20])
    with pytest.warns(UserWarning, match="cut short"):
        assert templates.load_log(log) == [record]


def test_shipped_person_detect_log() -> None:
    """The shipped log tunes every pointwise and depthwise shape of person_detect, its average pooling and softmax below
    the generic kernel, and the whole model keeps its output bytes."""
    model = micronn.Interpreter(Path(micronn.__file__).parent / "models" / "person_detect.tflite")
    model.allocate_tensors()
    keys = {shape.key for _, _, shape in tune.layers(model)}
    best = templates.best(templates.load_log(SHIPPED), "cortex-m4")
    assert {k for _, k in best} == keys
    xs = random_inputs(model.model, 2)
    res = run_model(model.model, "cortex-m4", xs, tuning_log=SHIPPED)
    assert len(res["tuned"]) == 30
    assert sorted(a["template"] for a in res["tuned"]) == (["conv_2d_1x1"] * 14 + ["depthwise_conv_2d"] * 14 +
                                                           ["pool_2d", "softmax"])
    assert all(a["instructions"] < a["baseline_instructions"] for a in res["tuned"])
    for i, x in enumerate(xs):
        model.set_input(x, i)
    model.invoke()
    assert np.array_equal(res["outputs"][0], model.get_output(0))


def test_shipped_riscv32_log() -> None:
    """The RV32 log (its portable template path) keeps person_detect's bytes on the RV32 emulator."""
    path = Path(micronn.__file__).parent / "micro" / "tuned" / "person_detect_riscv32.json"
    model = micronn.Interpreter(Path(micronn.__file__).parent / "models" / "person_detect.tflite")
    xs = random_inputs(model.model, 3)
    res = run_model(model.model, "riscv32", xs, tuning_log=path)
    assert res["tuned"] and all(a["instructions"] < a["baseline_instructions"] for a in res["tuned"])
    for i, x in enumerate(xs):
        model.set_input(x, i)
    model.invoke()
    assert np.array_equal(res["outputs"][0], model.get_output(0))


def test_tuning_two_templates_keeps_their_cost_models_apart(tmp_path: Path) -> None:
    """A model with a depthwise and a 1x1 convolution: each template's history feeds only its own cost model
    (their features differ in length), so the second template's search past the first batch does not fail."""
    rng = np.random.default_rng(4)
    q = (0.05, -3)
    dw = T((1, 3, 3, 8), "int8", list(rng.uniform(0.002, 0.02, 8)), 0, axis=3,
           data=rng.integers(-127, 128, (1, 3, 3, 8)))
    pw = T((6, 1, 1, 8), "int8", list(rng.uniform(0.002, 0.02, 6)), 0, data=rng.integers(-127, 128, (6, 1, 1, 8)))
    model = graph_model(Graph(
        {"x": T((1, 5, 5, 8), "int8", *q), "dw": dw, "h": T((1, 5, 5, 8), "int8", 0.2, 1), "pw": pw,
         "y": T((1, 5, 5, 6), "int8", 0.3, 4)},
        [Op("DEPTHWISE_CONV_2D", ["x", "dw", None], ["h"],
            schema.options("DEPTHWISE_CONV_2D", padding=1, stride_h=1, stride_w=1, depth_multiplier=1)),
         Op("CONV_2D", ["h", "pw", None], ["y"], schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1))],
        ["x"], ["y"]))
    res = tune.tune_model(model, "cortex-m4", trials=8, batch=4, log=tmp_path / "log.json")
    assert len(res["layers"]) == 2 and all(lay["measured"] == 8 for lay in res["layers"])


def test_auto_applies_the_shipped_logs(capsys: pytest.CaptureFixture) -> None:
    """``auto`` reads every shipped log; apply-best keeps each target's records. From the CLI, a device run applies
    them unless told ``--tuning-log none``."""
    records = templates.load_log(templates.AUTO)
    assert {r["target"] for r in records} >= {"cortex-m4", "riscv32"}
    models = Path(micronn.__file__).parent / "models"
    path = str(models / "person_detect.tflite")
    assert cli(["run", path, "--device", "cortex-m4", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert len(res["tuned"]) == 30 and res["instructions"] < 25_000_000  # the goal for the whole model
    assert cli(["run", path, "--tuning-log", "auto"]) == 2  # a host run has no kernels to swap
    capsys.readouterr()
    kws = str(models / "keyword_scrambled.tflite")
    assert cli(["run", kws, "--device", "cortex-m4", "--json"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert cli(["run", kws, "--device", "cortex-m4", "--tuning-log", "none", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert len(tuned["tuned"]) == 13 and not plain.get("tuned")  # 7 SVDF, 5 FULLY_CONNECTED, the SOFTMAX
    assert tuned["outputs"] == plain["outputs"]
    assert tuned["instructions"] <= 36_000 < plain["instructions"]  # the goal for the hotword model


@pytest.mark.parametrize("target", ["cortex-m7", "cortex-m33"])
def test_m7_and_m33_run_the_m4_records(target: str) -> None:
    """The M7 and M33 have no logs of their own: the M4's configs (same instruction set) apply and keep the bytes."""
    for name, tuned in (("keyword_scrambled", 13), ("person_detect", 30)):
        model = micronn.Interpreter(Path(micronn.__file__).parent / "models" / f"{name}.tflite")
        xs = random_inputs(model.model, 4)
        res = run_model(model.model, target, xs, tuning_log="auto")
        plain = run_model(model.model, target, xs)
        assert len(res["tuned"]) == tuned and {a["measured_on"] for a in res["tuned"]} == {"cortex-m4"}
        assert [o.tobytes() for o in res["outputs"]] == [o.tobytes() for o in plain["outputs"]]
        assert res["instructions"] < plain["instructions"]
    assert templates.best_for([], target) == {}


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m3"])
def test_cores_without_dsp_have_their_own_logs(target: str) -> None:
    """The M0 and M3 ship logs of their own (portable template paths): keyword_scrambled keeps its bytes and runs in
    fewer instructions."""
    model = micronn.Interpreter(Path(micronn.__file__).parent / "models" / "keyword_scrambled.tflite")
    xs = random_inputs(model.model, 6)
    res = run_model(model.model, target, xs, tuning_log="auto")
    plain = run_model(model.model, target, xs)
    assert res["tuned"] and {a["measured_on"] for a in res["tuned"]} == {target}
    assert [o.tobytes() for o in res["outputs"]] == [o.tobytes() for o in plain["outputs"]]
    assert res["instructions"] < plain["instructions"]


@pytest.mark.parametrize("name", ["keyword_scrambled", "hello_world_int8", "micro_speech_quantized"])
def test_shipped_kernels_give_the_tflm_wheels_bytes(name: str) -> None:
    """The generated kernels the shipped logs select (SVDF, FULLY_CONNECTED, SOFTMAX, ...) against the real TFLM,
    not only the interpreter: the device's outputs are the wheel's bytes."""
    pytest.importorskip("tflite_micro")
    from micronn.testing import run_tflm

    data = (Path(micronn.__file__).parent / "models" / f"{name}.tflite").read_bytes()
    xs = random_inputs(micronn.Interpreter(data).model, 7)
    res = run_model(data, "cortex-m4", xs, tuning_log="auto")
    assert res["tuned"]
    assert [o.tobytes() for o in res["outputs"]] == [o.tobytes() for o in run_tflm(data, xs)]
