"""micronn.export: standalone firmware projects that build, run on the emulated Cortex-M4 (and QEMU, and the host)
and give micronn's interpreter's outputs byte for byte."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import model_path

import micronn
from micronn import export
from micronn.errors import MicronnError, UnsupportedError
from micronn.ir import random_inputs
from micronn.micro import Target
from micronn.micro.gdb import qemu_available
from micronn.micro.target import Region
from micronn.testing import T, op_model, run_tflm

ROOT = Path(__file__).resolve().parents[2]
TEST_MODELS = ROOT / "tests" / "models"
# every model whose operators all have C kernels: each must export and run byte-identically
FIRMWARE = ["audio_preprocessor_int8", "hello_world_float", "hello_world_int8", "keyword_scrambled",
            "micro_speech_quantized", "person_detect", "tiny_unet", "tiny_unet_static", "trained_lstm_int8",
            "anomaly_autoencoder_int8", "float_cnn", "kws_ds_cnn_int16x8", "lstm_float", "lstm_int8",
            "lstm_keras3_while_float",
            "mobilenet_v2_pad_int8", "resnet_tiny_int8", "unet_wide_int8", "vnet_like_int8",
            "vww_mobilenet_96x96x3_int8"]
EMULATED = ["audio_preprocessor_int8", "hello_world_float", "hello_world_int8", "keyword_scrambled",
            "micro_speech_quantized", "person_detect", "trained_lstm_int8", "anomaly_autoencoder_int8",
            "kws_ds_cnn_int16x8", "lstm_int8"]
needs_unicorn = pytest.mark.skipif(importlib.util.find_spec("unicorn") is None, reason="unicorn is not installed")


def path_of(name: str) -> Path:
    p = TEST_MODELS / f"{name}.tflite"
    return p if p.exists() else model_path(name)


def all_models() -> list[str]:
    bundled = sorted(p.stem for p in (Path(micronn.__file__).parent / "models").glob("*.tflite"))
    return bundled + sorted(p.stem for p in TEST_MODELS.glob("*.tflite"))


@pytest.mark.parametrize("name", all_models())
def test_every_model_exports_or_names_what_is_missing(name: str, tmp_path: Path) -> None:
    """A model either exports and runs natively with the interpreter's bytes, or is refused before anything is
    written, naming each (op, type) without a C kernel."""
    out = tmp_path / "fw"
    try:
        proj = export.export(path_of(name), out)
    except UnsupportedError as e:
        assert name not in FIRMWARE, str(e)
        assert e.pairs and not out.exists()
        return
    res = export.run(proj, device="host")
    assert res.identical, name
    res = export.run(proj, device="host", seed=3)  # and again from other inputs (state is reset by init)
    assert res.identical, name


@needs_unicorn
@pytest.mark.parametrize("name", EMULATED)
def test_firmware_runs_on_the_emulated_cortex_m4(name: str, tmp_path: Path) -> None:
    proj = export.export(path_of(name), tmp_path / "fw")
    res = export.run(proj)
    assert res.identical and res.instructions > 0
    assert res.sections[".bss"]["bytes"] >= proj.arena_bytes  # the arena is the program's .bss
    assert res.symbols["model_arena"] == max(proj.arena_bytes, 16)
    assert 0 < res.stack_bytes < 4096  # measured: kernels keep little on the stack
    assert res.ram_bytes == sum(s["bytes"] for k, s in res.sections.items() if s["address"] >= 0x2000_0000) \
        + res.stack_bytes
    assert res.flash_bytes >= proj.const_bytes + sum(v for k, v in res.symbols.items() if k in proj.kernels)
    assert len(res.ops) == proj.calls and sum(o["instructions"] for o in res.ops) <= res.instructions
    assert Path(res.image).is_file()


@needs_unicorn
def test_figures_of_the_issue(tmp_path: Path) -> None:
    """person_detect in at most 52,000 B of RAM (TFLM's wheel: 85,264 B of arena) and at most 24,576 B of flash
    beyond its weights, with at most 5% more instructions than the host-driven run of the same kernels (the image,
    built for size, runs about 9% fewer); keyword_scrambled in at most 12,000 B."""
    pd = export.run(export.export(path_of("person_detect"), tmp_path / "pd"))
    assert pd.identical and pd.ram_bytes <= 52_000, pd
    model = micronn.tflite.reader.read(path_of("person_detect").read_bytes())
    weights = sum(t.nbytes for t in {t.buffer: t for sg in model.subgraphs for t in sg.tensors
                                     if t.data is not None}.values())  # benchmarks/firmware.py's weight_bytes
    assert pd.flash_bytes - weights <= 24_576, (pd.flash_bytes, weights)
    hosted = micronn.micro.run_model(path_of("person_detect"), "cortex-m4")
    assert pd.instructions <= 1.05 * hosted["instructions"]
    kw = export.run(export.export(path_of("keyword_scrambled"), tmp_path / "kw"))
    assert kw.identical and kw.ram_bytes <= 12_000, kw


@needs_unicorn
def test_tinyseg_firmware_spills_to_the_projects_storage(tmp_path: Path) -> None:
    """tiny_unet with TinySeg's plan: spilled tensors go through model_storage() into the STORAGE region, and the
    firmware's RAM falls from the plain export's 230 KB to at most 120,000 B, outputs unchanged."""
    proj = export.export(path_of("tiny_unet"), tmp_path / "tu", optimize=True)
    assert proj.storage_bytes > 0 and "model_storage.c" in proj.files
    assert "int model_storage(uint32_t id" in (proj.path / "model.h").read_text()
    assert export.run(proj, device="host").identical
    res = export.run(proj)
    assert res.identical and res.ram_bytes <= 120_000, res
    assert res.sections[".storage"]["bytes"] == proj.storage_bytes  # outside RAM and flash
    assert res.flash_bytes < res.sections[".storage"]["address"] - 0x0


FAILING_STORAGE = """#include "model.h"
/* a board whose external memory takes writes but reads nothing back */
int model_storage(uint32_t id, uint32_t offset, void *buf, uint32_t n, uint32_t write) {
    (void)id; (void)offset; (void)buf; (void)n;
    return write ? 0 : -7;
}
"""


@pytest.mark.parametrize("device", ["host", "cortex-m4"])
def test_failing_storage_stops_the_invoke_with_its_code(tmp_path: Path, device: str) -> None:
    """model_invoke returns the storage function's code at the first failed read and model_failed_op names the
    operator; run() turns that into a StorageError instead of comparing outputs that were never computed."""
    if device != "host" and importlib.util.find_spec("unicorn") is None:
        pytest.skip("unicorn is not installed")
    from micronn.storage.base import StorageError

    proj = export.export(path_of("tiny_unet"), tmp_path / "tu", optimize=True)
    assert "if (mn_status != 0) return model_stop(" in (proj.path / "model.c").read_text()
    (proj.path / "model_storage.c").write_text(FAILING_STORAGE)
    with pytest.raises(StorageError, match=r"model_invoke returned -7 at operator \d+ \((Fetch|FetchConv2D)\)"):
        export.run(proj, device=device)


@pytest.mark.parametrize("device", ["host", "cortex-m4"])
def test_gather_position_outside_the_axis_stops_the_firmware(tmp_path: Path, device: str) -> None:
    """model_invoke returns GATHER's error code and names the operator; run() raises instead of comparing."""
    if device != "host" and importlib.util.find_spec("unicorn") is None:
        pytest.skip("unicorn is not installed")
    from micronn.errors import InvokeError

    model = op_model("GATHER", [T((6, 3), "float32"), T((2,), "int32")], [T((2, 3), "float32")])
    proj = export.export(model, tmp_path / "g")
    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    assert export.run(proj, [x, np.array([5, 0], np.int32)], device=device).identical
    with pytest.raises(InvokeError, match=r"model_invoke returned -1001 at operator 0 \(GATHER\)"):
        export.run(proj, [x, np.array([0, -1], np.int32)], device=device)


@needs_unicorn
def test_recurrent_state_carries_over_and_init_resets_it(tmp_path: Path) -> None:
    """keyword_scrambled's SVDF state lives in the arena: run() starts from init like a fresh interpreter."""
    proj = export.export(path_of("keyword_scrambled"), tmp_path / "kw")
    x = [np.random.default_rng(1).integers(-32768, 32767, (1, 96), dtype=np.int16)]
    a, b = export.run(proj, x), export.run(proj, x)
    assert a.identical and b.identical and a.outputs[0].tobytes() == b.outputs[0].tobytes()


@pytest.mark.skipif(not qemu_available(), reason="qemu-system-arm is not installed")
def test_same_image_on_qemu(tmp_path: Path) -> None:
    proj = export.export(path_of("keyword_scrambled"), tmp_path / "kw")
    res = export.run(proj, device="qemu-m4")
    assert res.identical and res.device == "qemu-m4"


def test_project_is_self_contained(tmp_path: Path) -> None:
    proj = export.export(path_of("person_detect"), tmp_path / "pd", prefix="person")
    files = {p.name for p in proj.path.iterdir()}
    assert {"person.h", "person.c", "person_data.c", "person.ld", "Makefile", "README.md", "main.c",
            "startup_cortex_m.c", "mn_libc.c", "mn_kernels.h", "conv_2d.c", "depthwise_conv_2d.c"} <= files
    assert "svdf.c" not in files  # only the kernels the model calls
    c = "".join((proj.path / f).read_text() for f in files if f.endswith((".c", ".h")))
    assert not re.search(r"\b(malloc|free|calloc|printf|flatbuffers|GetModel|OpResolver)\s*\(", c)
    header = (proj.path / "person.h").read_text()
    assert "int person_init(void);" in header and "int person_invoke(void);" in header
    assert "#define PERSON_INPUT_0_BYTES 9216u" in header and "[1, 96, 96, 1]" in header
    meta = json.loads((proj.path / "micronn.json").read_text())
    assert meta["arena_bytes"] == proj.arena_bytes and export.load(proj.path).ops == proj.ops


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("make") is None,
                    reason="arm-none-eabi-gcc is not installed (apt-get install gcc-arm-none-eabi)")
@needs_unicorn
def test_builds_with_gcc_and_its_makefile(tmp_path: Path) -> None:
    proj = export.export(path_of("micro_speech_quantized"), tmp_path / "ms")
    assert export.run(proj, toolchain="gcc").identical
    subprocess.run(["make", "-s"], cwd=proj.path, check=True, capture_output=True, timeout=300)
    assert (proj.path / "model.elf").stat().st_size > 0


def test_bad_input_is_refused_before_writing(tmp_path: Path) -> None:
    tiny = Target("tiny-m4", "cortex_m4", Region(0, 64 << 10), Region(0x2000_0000, 32 << 10), stack_size=4096)
    with pytest.raises(export.ExportError, match=r"RAM; tiny-m4 has 32,768 B \(.* B missing\)"):
        export.export(path_of("person_detect"), tmp_path / "a", tiny)
    assert not (tmp_path / "a").exists()
    with pytest.raises(export.ExportError, match="flash"):
        export.export(path_of("person_detect"), tmp_path / "b",
                      Target("small-flash", "cortex_m4", Region(0, 64 << 10), Region(0x2000_0000, 1 << 20)))
    with pytest.raises(UnsupportedError, match="SQRT"):  # no C kernel
        export.export(op_model("SQRT", [T((4,), "float32")], [T((4,), "float32")]), tmp_path / "c")
    with pytest.raises(MicronnError, match="host"):
        export.export(path_of("hello_world_int8"), tmp_path / "d", "host")
    with pytest.raises(export.ExportError, match="C identifier"):
        export.export(path_of("hello_world_int8"), tmp_path / "e", prefix="1model")
    (tmp_path / "file").write_text("")
    with pytest.raises(export.ExportError, match="cannot write"):
        export.export(path_of("hello_world_int8"), tmp_path / "file" / "sub")
    with pytest.raises(export.ExportError, match="not a project"):
        export.load(tmp_path)
    proj = export.export(path_of("hello_world_int8"), tmp_path / "f")
    with pytest.raises(MicronnError, match=r"input 0 .* expects int8\[1, 1\]"):
        export.run(proj, [np.zeros((1, 2), np.int8)], device="host")
    with pytest.raises(MicronnError, match="exported for cortex-m4, not cortex-m7"):
        export.run(proj, device="cortex-m7")


@needs_unicorn
def test_risc_v_firmware(tmp_path: Path) -> None:
    """The same project for RV32IMC: its own start-up code, same kernels (portable paths), same bytes."""
    proj = export.export(path_of("keyword_scrambled"), tmp_path / "rv", "riscv32")
    assert "startup_riscv.c" in proj.files and "startup_cortex_m.c" not in proj.files
    res = export.run(proj)
    assert res.identical and res.instructions > 0 and res.ram_bytes <= 12_000
    assert res.sections[".text"]["address"] == 0x4200_0000  # the preset's flash
    if qemu_available("riscv32-qemu"):
        qemu = export.export(path_of("keyword_scrambled"), tmp_path / "rvq", "riscv32-qemu")
        assert export.run(qemu).identical
    with pytest.raises(MicronnError, match="gcc"):
        export.run(proj, toolchain="gcc")


@needs_unicorn
def test_tuned_kernels_from_a_tuning_log(tmp_path: Path) -> None:
    """The shipped person_detect log gives its 14 pointwise and 14 depthwise convolutions, its pool and its softmax
    their generated kernels in the project."""
    log = Path(micronn.__file__).parent / "micro" / "tuned" / "person_detect_cortex-m4.json"
    proj = export.export(path_of("person_detect"), tmp_path / "pd", tuning_log=log)
    generated = [k for k in proj.kernels if k.startswith(("mn_conv_2d_1x1_", "mn_depthwise_conv_2d_"))]
    assert proj.tuned == 30 and len(generated) >= 10 and all(f"{k}.c" in proj.files for k in generated)
    assert export.run(proj, device="host").identical  # the generated C's portable path
    xs = random_inputs(micronn.tflite.reader.read(path_of("person_detect").read_bytes()), seed=4)
    tuned = export.run(proj, xs)
    assert tuned.identical and tuned.instructions < 0.5 * 41_785_729  # the untuned firmware's count
    wheel = run_tflm(path_of("person_detect").read_bytes(), xs)  # the oracle itself, not only the interpreter
    assert [o.tobytes() for o in tuned.outputs] == [w.tobytes() for w in wheel]
