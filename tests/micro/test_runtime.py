"""Whole models on a device: byte-identical to micronn's interpreter, per-op costs, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from micronn import Interpreter
from micronn.cli import main
from micronn.errors import MicronnError
from micronn.ir import random_inputs
from micronn.micro.gdb import qemu_available
from micronn.micro.runtime import DeviceModel, run_model
from micronn.micro.session import Session, SessionError
from micronn.micro.toolchain import ToolchainError
from micronn.models import bundled_model
from micronn.testing import T, op_model
from micronn.tflite import schema


def conv(h: int = 9, cin: int = 3, cout: int = 8, k: int = 3, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return op_model("CONV_2D", [T((1, h, h, cin), "int8", 0.05, 2),
                                T((cout, k, k, cin), "int8", list(rng.uniform(0.002, 0.02, cout)), 0,
                                  data=rng.integers(-127, 128, (cout, k, k, cin))),
                                T((cout,), "int32", data=rng.integers(-3000, 3000, cout))],
                    [T((1, h, h, cout), "int8", 0.3, -5)], schema.options("CONV_2D", padding=0, stride_h=1,
                                                                           stride_w=1))


def expected(model: bytes, xs: list[np.ndarray]) -> list[np.ndarray]:
    it = Interpreter(model)
    it.allocate_tensors()
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(i) for i in range(len(it.model.main.outputs))]


needs_qemu_riscv = pytest.mark.skipif(not qemu_available("riscv32-qemu"), reason="qemu-system-riscv32 is not "
                                      "installed (apt-get install qemu-system-misc)")
needs_qemu_arm = pytest.mark.skipif(not qemu_available(), reason="qemu-system-arm is not installed")


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32"])
def test_person_detect_on_emulated_core_is_byte_identical(target):
    model = bundled_model("person_detect")
    xs = random_inputs(Interpreter(model).model, 3)
    res = run_model(model, target, xs, profile=True)
    (y,), (want,) = res["outputs"], expected(model, xs)
    assert y.tobytes() == want.tobytes()
    ops = res["ops"]
    assert [o["op"] for o in ops][:3] == ["DEPTHWISE_CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"] and len(ops) == 31
    assert all(o["instructions"] > 0 and o["cycles"] >= o["instructions"] for o in ops)
    assert res["instructions"] == sum(o["instructions"] for o in ops) > 10_000_000
    assert sum(o["counts"]["load"] for o in ops) > 0


@pytest.mark.parametrize("model,target", [("keyword_scrambled", "riscv32"),
                                          pytest.param("keyword_scrambled", "riscv32-qemu", marks=needs_qemu_riscv),
                                          pytest.param("person_detect", "riscv32-qemu", marks=needs_qemu_riscv)])
def test_models_on_riscv_are_byte_identical(model, target):
    """The kernels' portable paths on RV32: under Unicorn (counted) and on QEMU's virt board (not counted)."""
    m = bundled_model(model)
    xs = random_inputs(Interpreter(m).model, 5)
    res = run_model(m, target, xs)
    assert [y.tobytes() for y in res["outputs"]] == [y.tobytes() for y in expected(m, xs)]
    assert res["device"] == target and (res["instructions"] is None) == target.endswith("qemu")


@pytest.mark.parametrize("target", ["host", "cortex-m0", "riscv32", pytest.param("qemu-m4", marks=needs_qemu_arm),
                                    pytest.param("riscv32-qemu", marks=needs_qemu_riscv)])
def test_conv_on_every_backend(target):
    model = conv()
    xs = random_inputs(Interpreter(model).model, 1)
    (y,) = run_model(model, target, xs)["outputs"]
    assert y.tobytes() == expected(model, xs)[0].tobytes()


def test_weights_load_once_and_invokes_repeat():
    model = conv(seed=4)
    with Session("cortex-m4") as sess:
        dm = DeviceModel(model, sess)
        used = sess.sections["rodata"].used
        for seed in (1, 2):
            xs = random_inputs(dm.interp.model, seed)
            assert dm.invoke(xs)[0].tobytes() == expected(model, xs)[0].tobytes()
        assert sess.sections["rodata"].used == used  # nothing new crossed but inputs and task metadata
        assert sess.executions == 2


def test_cli_run_device_and_devices(tmp_path, capsys):
    path = tmp_path / "conv.tflite"
    path.write_bytes(conv(h=6))
    assert main(["run", str(path), "--device", "cortex-m4", "--profile", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["device"] == "cortex-m4" and res["instructions"] == res["ops"][0]["instructions"] > 0
    assert main(["run", str(path), "--device", "cortex-m7", "--profile"]) == 0
    assert "CONV_2D" in capsys.readouterr().out
    assert main(["devices", "--json"]) == 0
    names = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert {"cortex-m4", "cortex-m7", "cortex-m33", "cortex-m0", "qemu-m4", "riscv32", "riscv32-qemu", "host"} \
        <= set(names)
    assert names["cortex-m4"]["available"] and names["qemu-m4"]["available"] == qemu_available()
    assert names["riscv32"]["available"] and names["riscv32"]["backend"] == "unicorn"
    assert names["riscv32-qemu"]["backend"] == "qemu virt" and "qemu-riscv32" not in names
    assert names["riscv32-qemu"]["available"] == qemu_available("riscv32-qemu")
    assert main(["run", str(path), "--device", "riscv32", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["device"] == "riscv32" and res["instructions"] > 0
    for bad, why in (("cortex-m99", "unknown target"), ("qemu-riscv32", "riscv32-qemu is the RISC-V preset")):
        assert main(["run", str(path), "--device", bad]) == 1
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err


def test_model_too_large_for_the_device_is_a_clear_error():
    """A 400 KiB input does not fit the ESP32-C3-sized RAM (400 KiB in all), but does the MPS2 boards' 4 MiB."""
    model = conv(h=160, cin=16, cout=4, k=1)
    with pytest.raises(SessionError, match="arena needs [0-9,]+ bytes of RAM; riscv32 has [0-9,]+ free") as e:
        run_model(model, "riscv32")
    assert isinstance(e.value, MicronnError)
    with Session("cortex-m4") as sess:
        assert DeviceModel(model, sess).arena_size > 400 << 10


def test_arm_only_toolchain_is_refused_for_riscv():
    with pytest.raises(ToolchainError, match="builds for Arm only"):
        run_model(conv(h=4), "riscv32", toolchain="gcc")


def _dsp_cases() -> dict[str, bytes]:
    from test_kernels import conv as layer
    from test_kernels import fully_connected

    return {
        "cifar_a_like": layer(cin=3, cout=8, h=8, w=8, fh=5, fw=5), "zp_-128": layer(cin=8, cout=12, h=7, w=9, fh=3,
                                                                                     fw=3, in_zp=-128),
        "grouped": layer(cin=8, cout=8, groups=2, fh=3, fw=3), "dilated": layer(cin=8, cout=9, dil=(2, 2), h=9, w=10),
        "strided": layer(cin=12, cout=8, stride=(2, 3), fh=3, fw=3, pad=0),
        "dw_zp127": layer(depthwise=True, cin=12, pad=0, h=9, w=9, fh=3, fw=3, in_zp=127),
        "dw_mult3": layer(depthwise=True, mult=3, cin=4), "dw_odd": layer(depthwise=True, cin=7, dil=(1, 2), h=9, w=8),
        "fc": fully_connected(depth=37, units=9, batches=2),
    }


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32"])
@pytest.mark.parametrize("case", list(_dsp_cases()))
def test_dsp_kernels_on_m4_match_the_interpreter(case, target):
    """The Cortex-M4 build takes the SMLAD/SXTB16 paths of the conv, depthwise and FC kernels (the host, M0 and
    RV32 builds take the portable loops): padding-cut windows, zero points at the extremes, groups, dilation,
    strides."""
    model = _dsp_cases()[case]
    xs = random_inputs(Interpreter(model).model, 1)
    (y,) = run_model(model, target, xs)["outputs"]
    assert y.tobytes() == expected(model, xs)[0].tobytes()
