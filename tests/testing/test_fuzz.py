"""micronn.testing.fuzz: cases are deterministic, the worker pool classifies misbehaving workers, and a bounded
campaign over the bundled and test models (both mutation kinds, part of it against the wheel) finds nothing."""

from __future__ import annotations

import ctypes
import json
import time
from pathlib import Path

import numpy as np
import pytest

from micronn import ir
from micronn.testing import T, op_model
from micronn.testing.fuzz import (
    DERIVED_SEEDS,
    FAILURES,
    Config,
    Pool,
    _judge,
    _save,
    check_model,
    default_models,
    derived_seed,
    estimate_macs,
    format_summary,
    fuzz,
    main,
    make_case,
)
from micronn.tflite.reader import read

SMALL = [m for m in default_models() if m in DERIVED_SEEDS or Path(m).stat().st_size < 100_000]


def test_corpus_holds_the_bundled_the_test_and_the_derived_models() -> None:
    names = {Path(m).parent.name + "/" + Path(m).stem for m in default_models() if m not in DERIVED_SEEDS}
    assert {"models/person_detect", "models/hello_world_int8", "models/tiny_unet"} <= names
    assert {"models/lstm_keras3_while_float", "models/kws_ds_cnn_int16x8"} <= names  # tests/models
    assert set(DERIVED_SEEDS) <= set(default_models())


@pytest.mark.parametrize("spec", DERIVED_SEEDS)
def test_derived_seeds_run_like_the_wheel(spec: str) -> None:
    """Packed int4 weights and compressed tensors: the reader unpacks them as TFLM does."""
    from micronn.testing import assert_same_as_tflm

    data = derived_seed(spec)
    m = read(data)
    assert any(t.dtype == ir.INT4 or t.lut is not None for sg in m.subgraphs for t in sg.tensors) or \
        "TFLM_DECODE" in [op.op for op in m.main.operators]
    assert_same_as_tflm(data, runs=1)


def test_a_case_depends_only_on_seed_and_index() -> None:
    config = Config(seed=7)
    for index in range(12):
        a, b = make_case(config, index), make_case(config, index)
        assert (a.data, a.detail, a.label) == (b.data, b.detail, b.label)
    assert make_case(config, 3).data != make_case(Config(seed=8), 3).data
    kinds = {make_case(config, i).kind for i in range(4)}
    assert kinds == {"bytes", "structure"}


def test_every_structure_mutation_writes_or_is_counted_skipped() -> None:
    config = Config(models=SMALL, seed=1, kind="structure")
    seen = set()
    for index in range(150):
        case = make_case(config, index)
        seen.add(case.mutation)
        assert (case.data is None) == (case.skipped is not None)
    assert len(seen) >= 12  # nearly every mutator ran


def test_macs_count_the_products_of_the_heavy_ops() -> None:
    fc = op_model("FULLY_CONNECTED", [T((4, 32), "float32"), T((8, 32), "float32", data=np.ones((8, 32)))],
                  [T((4, 8), "float32")])
    assert estimate_macs(read(fc)) >= 4 * 8 * 32
    conv = op_model("CONV_2D", [T((1, 64, 64, 16), "float32"), T((32, 3, 3, 16), "float32", data=0.5)],
                    [T((1, 64, 64, 32), "float32")])
    assert estimate_macs(read(conv)) >= 64 * 64 * 32 * 3 * 3 * 16


def test_check_model_runs_and_verifies_against_the_wheel() -> None:
    data = Path(SMALL[0]).read_bytes()
    result = check_model(data, 0, Config(differential=True))
    assert result["class"] == "ran" and result["verified"]
    assert check_model(data[:100])["class"] == "error"
    slow = check_model(data, 0, Config(max_macs=1))
    assert slow["class"] == "slow" and slow["macs"] > 1


def test_the_judge_of_two_wheel_runs() -> None:
    a = [np.array([1, 2], np.int8)]
    ok = {"status": "ok", "outputs": a}
    assert _judge(a, [ok, ok]) == {"verified": True}
    assert _judge([np.array([1, 3], np.int8)], [ok, ok])["class"] == "mismatch"
    other = {"status": "ok", "outputs": [np.array([9, 9], np.int8)]}
    assert "undefined" in _judge(a, [ok, other])["message"]  # the wheel disagrees with itself: micronn must refuse
    assert _judge(a, [ok, {"status": "crash", "message": "SIGSEGV"}])["class"] == "oracle-crash"
    refused = {"status": "refused", "message": "no"}
    assert _judge(a, [refused, refused])["class"] == "oracle-refused"


# -- the worker pool's classifier, on workers that misbehave on purpose ---------------------------------------------

def _misbehave(index: int, config: dict, report) -> dict:
    """A pool target (workers import this module): job ``index`` does what ``config`` says."""
    what = config[index]
    report("micronn", 123)
    if what == "segfault":
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    elif what == "loop":
        while True:
            pass
    elif what == "hog":
        return {"class": "ran", "size": len(bytearray(16 << 30))}  # far past the address-space limit
    elif what == "leak":
        raise KeyError("planted")
    return {"class": "ran"}


def test_pool_classifies_crash_hang_memory_and_leaks_and_recovers() -> None:
    jobs = {0: "fine", 1: "segfault", 2: "loop", 3: "hog", 4: "leak", 5: "fine"}
    start = time.monotonic()
    with Pool(f"{__name__}:_misbehave", jobs, workers=1, timeout=3, memory_mb=1024) as pool:
        results = dict(pool.run(sorted(jobs)))
        restarts = pool.restarts
    assert {i: r["class"] for i, r in results.items()} == {
        0: "ran", 1: "crash", 2: "hang", 3: "memory", 4: "leaked", 5: "ran"}
    assert "SIGSEGV" in results[1]["message"] and results[2]["stage"] == "micronn" and results[2]["macs"] == 123
    assert results[3]["error"] == "MemoryError" and results[4]["error"] == "KeyError"
    assert restarts == 2  # the crashed and the hung worker were replaced; the others kept serving
    assert time.monotonic() - start < 60


def test_reproducers_hold_model_inputs_and_description(tmp_path: Path) -> None:
    config = Config(models=SMALL, seed=3, kind="structure")
    index = next(i for i in range(50) if make_case(config, i).data is not None)
    where = _save(tmp_path, config, index, {**make_case(config, index).info(), "class": "leaked", "macs": 10})
    assert read((where / "model.tflite").read_bytes(), validate=False)
    described = json.loads((where / "case.json").read_text())
    assert described["index"] == index and f"--only {index}" in described["replay"]
    if (where / "inputs.npz").exists():
        assert len(np.load(where / "inputs.npz").files) >= 0


# -- a bounded campaign ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bytes", "structure"])
def test_bounded_campaign_finds_nothing(kind: str) -> None:
    """A few hundred cases over every seed model, every other one that runs also against the wheel."""
    config = Config(seed=2024, kind=kind, differential=True, differential_every=2, timeout=30)
    summary = fuzz(config, 240, workers=1)
    assert summary["cases"] == 240
    assert all(summary["counts"][c] == 0 for c in FAILURES), format_summary(summary)
    assert summary["counts"]["ran"] > 20 and summary["verified"] > 5
    assert len(summary["by_kind"]) >= 4


def test_command_line_prints_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["--cases", "12", "--seed", "5", "--models", *SMALL[:2], "--json", "--out", str(tmp_path)])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["cases"] == 12 and sum(summary["counts"].values()) == 12
