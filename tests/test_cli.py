"""The CLI: thin commands over the features' public functions, each with --json and non-zero exits on errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import model_path

from micronn import __version__, analyze
from micronn.cli import main


def _json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_info(capsys) -> None:
    res = _json(capsys, "info", str(model_path("person_detect")))
    assert res["op_counts"]["CONV_2D"] == 14 and res["memory"]["tflm_head_bytes"] == 55_296
    assert res["memory"]["lower_bound_bytes"] == 55_296 and res["memory"]["head_bytes"] < 55_296


def test_plan_json_fields(capsys) -> None:
    res = _json(capsys, "plan", str(model_path("micro_speech_quantized")), "--planner", "tflm")
    assert res["planner"] == "tflm" and res["head_bytes"] == 5_968
    assert res["total_bytes"] == res["head_bytes"] + res["tail_bytes"] and res["lower_bound_bytes"] <= 5_968
    assert {"offset", "size", "first", "last"} <= set(res["buffers"][0])
    linear = _json(capsys, "plan", str(model_path("micro_speech_quantized")), "--planner", "linear")
    assert linear["head_bytes"] > res["head_bytes"]
    rom = _json(capsys, "plan", str(model_path("micro_speech_quantized")), "--rom")
    assert rom["sharing"]["rom"] and rom["rom_bytes"] > 0 and rom["tail_bytes"] < res["tail_bytes"]


def test_run_with_inputs_outputs_and_profile(tmp_path, capsys) -> None:
    x = np.zeros((1, 96, 96, 1), np.int8)
    np.save(tmp_path / "x.npy", x)
    res = _json(capsys, "run", str(model_path("person_detect")), "--input", str(tmp_path / "x.npy"),
                "--output", str(tmp_path / "y.npz"), "--profile")
    assert len(res["profile"]["ops"]) == 31 and res["profile"]["overhead_ns"] >= 0
    assert np.load(tmp_path / "y.npz")["arr_0"].tolist() == res["outputs"][0]
    assert main(["run", str(model_path("person_detect")), "--profile"]) == 0
    assert "interpreter overhead" in capsys.readouterr().out


def test_demo_finds_the_person(capsys) -> None:
    res = _json(capsys, "demo")
    assert res["person"] and res["arena"]["head_bytes"] < 55_296 < res["arena"]["lower_bound_bytes"] + 1
    assert not _json(capsys, "demo", "--image", "no_person")["person"]


def test_demo_hears_the_keyword(capsys) -> None:
    assert _json(capsys, "demo", "--audio", "no")["keyword"] == "no"
    assert main(["demo", "--audio", "yes"]) == 0
    assert '"yes"' in capsys.readouterr().out
    assert main(["demo", "--audio", "/no/such.wav"]) == 1
    assert "cannot read audio" in capsys.readouterr().err


def test_errors_exit_non_zero(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model at all")
    assert main(["info", str(bad)]) == 1
    assert "micronn: error" in capsys.readouterr().err
    assert main(["run", str(model_path("person_detect")), "--arena-size", "1000", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == "ArenaTooSmallError"


def test_console_script_runs() -> None:
    res = subprocess.run([sys.executable, "-m", "micronn.cli", "plan", str(model_path("hello_world_int8"))],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "lower bound" in res.stdout


# -- every way a command can fail: one line on stderr, a non-zero exit, no traceback (issue 12) ------------------

HELLO = str(model_path("hello_world_int8"))  # input int8[1, 1]: fast to run, optimize and plan


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    """A folder of bad inputs: not-models, not-arrays, and places that cannot be written."""
    data = model_path("person_detect").read_bytes()
    (tmp_path / "empty.tflite").write_bytes(b"")
    (tmp_path / "text.tflite").write_text("this is not a model\n" * 20)
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\x08\0\0\0\0" + bytes(64))
    (tmp_path / "truncated.tflite").write_bytes(data[: len(data) // 2])
    (tmp_path / "header_only.tflite").write_bytes(data[:100])
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_dir.svg").mkdir()
    (tmp_path / "a_dir.npz").mkdir()
    (tmp_path / "file").write_bytes(b"")
    np.save(tmp_path / "ok.npy", np.zeros((1, 1), np.int8))
    np.save(tmp_path / "shape.npy", np.zeros((2, 3), np.int8))
    np.save(tmp_path / "dtype.npy", np.zeros((1, 1), np.float32))
    np.save(tmp_path / "scalar.npy", np.int8(3))
    np.save(tmp_path / "objects.npy", np.array([{"x": 1}], object), allow_pickle=True)
    np.savez(tmp_path / "archive.npz", np.zeros((1, 1), np.int8))
    (tmp_path / "text.npy").write_text("1 2 3")
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "cut.npy").write_bytes((tmp_path / "shape.npy").read_bytes()[:-3])
    return tmp_path


MODELS = ["{d}/missing.tflite", "{d}/a_dir", "{d}/empty.tflite", "{d}/text.tflite", "{d}/image.png",
          "{d}/truncated.tflite", "{d}/header_only.tflite", ""]
# where outputs cannot go: a missing folder, below a file, a folder, and (Linux) a full disk and /proc
UNWRITABLE = ["/no/such/dir/x", "{d}/file/x", "{d}/a_dir"] + (["/proc/x"] if sys.platform == "linux" else [])
INPUTS = ["shape", "dtype", "scalar", "objects", "archive.npz", "text", "empty", "cut", "missing", "a_dir"]

BAD_COMMANDS = (
    [[cmd, m] for cmd in ("info", "plan", "reorder", "run", "optimize") for m in MODELS]
    + [[cmd, HELLO, opt, out + ".npz" * (cmd == "run")] for out in UNWRITABLE
       for cmd, opt in (("reorder", "-o"), ("optimize", "-o"), ("optimize", "--report"), ("run", "--output"),
                        ("plan", "--offline-out"))]
    + [["plan", HELLO, "--plot", out + ".svg"] for out in UNWRITABLE] + [["plan", HELLO, "--plot", "{d}/x.bmp"]]
    + [["run", HELLO, "--input", f"{{d}}/{i}" + ("" if "." in i or i == "a_dir" else ".npy")] for i in INPUTS]
    + [["run", HELLO, "--input", "{d}/ok.npy", "--input", "{d}/ok.npy"],
       ["run", HELLO, "--device", "cortex-m4", "--input", "{d}/shape.npy"],
       ["run", HELLO, "--device", "cortex-m4", "--arena-size", "64"]]
    + [["run", HELLO, "--arena-size", n] for n in ("-5", "0", "abc", "1.5", str(2**62), str(10**30))]
    + [[cmd, HELLO, "--seed", n] for cmd in ("run", "optimize") for n in ("-1", "x")]
    + [["optimize", HELLO, "--target-bytes", n] for n in ("-1", "1e3")]
    + [["plan", HELLO, "--planner", "nope"], ["plan", HELLO, "--compare", "nope", "--plot", "{d}/p.svg"],
       ["run", HELLO, "--device", "nope"], ["run", HELLO, "--device", ""], ["optimize", HELLO, "--storage", "nope"],
       ["demo", "--image", "cat"], ["bogus"], ["info"], ["run", HELLO, "--no-such-option"], ["info", HELLO, "extra"]]
)
if sys.platform == "linux":
    BAD_COMMANDS += [["reorder", HELLO, "-o", "/dev/full"], ["optimize", HELLO, "--report", "/dev/full"]]


def _one_error_line(err: str) -> str:
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1 and lines[0].startswith("micronn: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("argv", BAD_COMMANDS, ids=lambda a: " ".join(a).replace(HELLO, "HELLO")[:70])
def test_bad_command_lines_fail_in_one_line(argv: list[str], as_json: bool, bad: Path, capsys) -> None:
    argv = [a.format(d=bad) for a in argv] + ["--json"] * as_json
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (1, 2), (code, out, err)
    line = _one_error_line(err)
    assert "internal error" not in line  # every failure above is one micronn knows and names
    if as_json:
        res = json.loads(out)
        assert res["exit_code"] == code and res["message"] == line.removeprefix("micronn: error: ")
        assert res["error"] == "UsageError" if code == 2 else res["error"].endswith("Error")
    assert not list(bad.glob("**/x*")) and not (bad / "file").read_bytes()  # nothing half-written anywhere


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder(tmp_path: Path, capsys) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    for argv in (["reorder", HELLO, "-o", f"{ro}/x.tflite"], ["run", HELLO, "--output", f"{ro}/y.npz"],
                 ["plan", HELLO, "--plot", f"{ro}/p.svg"], ["optimize", HELLO, "--report", f"{ro}/r.html"]):
        assert main(argv) == 1
        assert "not writable" in _one_error_line(capsys.readouterr().err)


def test_error_kinds_and_exit_codes(tmp_path: Path, capsys) -> None:
    assert main(["info", str(tmp_path / "nope.tflite"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == "ModelError"
    assert main(["reorder", HELLO, "-o", str(tmp_path / "no" / "x.tflite"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == "OutputError"
    assert main(["run", HELLO, "--seed", "-1", "--json"]) == 2
    assert "--seed: expected a number >= 0" in json.loads(capsys.readouterr().out)["message"]
    assert main(["run", HELLO, "--arena-size", str(2**62)]) == 1
    assert "cannot allocate an arena of" in capsys.readouterr().err


def test_legitimate_extremes_still_run(tmp_path: Path, capsys) -> None:
    """Huge seeds and targets are valid: numpy seeds with any integer; a target above the arena needs no spills."""
    res = _json(capsys, "run", HELLO, "--seed", str(10**30), "--output", str(tmp_path / "y"))
    assert res["path"] == str(tmp_path / "y.npz") and np.load(tmp_path / "y.npz")["arr_0"].tolist() == res["outputs"][0]
    res = _json(capsys, "optimize", HELLO, "--target-bytes", str(10**30))
    assert res["after"]["total_bytes"] <= res["before"]["total_bytes"]


def test_unexpected_exceptions_name_their_type(monkeypatch, capsys) -> None:
    """A bug is never hidden: one line naming the exception type, exit 2; MICRONN_DEBUG=1 adds the traceback."""
    def broken(*a, **kw):
        raise KeyError("oops")

    monkeypatch.setattr(analyze, "info", broken)
    assert main(["info", HELLO]) == 2
    assert "internal error: KeyError" in _one_error_line(capsys.readouterr().err)
    assert main(["info", HELLO, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "KeyError"
    monkeypatch.setenv("MICRONN_DEBUG", "1")
    assert main(["info", HELLO]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("micronn: error: internal error: KeyError")

    def full_disk(*a, **kw):
        raise OSError(28, "No space left on device", "/tmp/x")

    monkeypatch.setattr(analyze, "info", full_disk)
    assert main(["info", HELLO]) == 1
    assert _one_error_line(capsys.readouterr().err) == "micronn: error: No space left on device (/tmp/x)"

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(analyze, "info", interrupted)
    assert main(["info", HELLO]) == 130
    assert _one_error_line(capsys.readouterr().err) == "micronn: error: interrupted"

    def reader_left(*a, **kw):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(analyze, "info", reader_left)
    assert main(["info", HELLO]) == 141 and capsys.readouterr().err == ""


def test_help_returns_zero(capsys) -> None:
    assert main(["--help"]) == 0 and main(["run", "--help"]) == 0
    assert "--arena-size" in capsys.readouterr().out
    assert main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"micronn {__version__}"


def test_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    for argv in (["info", str(tmp_path)], ["run", HELLO, "--arena-size", "-1", "--json"], ["nope"]):
        res = subprocess.run([sys.executable, "-m", "micronn.cli", *argv], capture_output=True, text=True,
                             timeout=120)
        assert res.returncode in (1, 2) and _one_error_line(res.stderr)


def test_compress_writes_a_model_tflm_runs(tmp_path, capsys) -> None:
    from micronn.testing import assert_same_as_tflm

    out = tmp_path / "c.tflite"
    res = _json(capsys, "compress", str(model_path("person_detect")), "-o", str(out), "--bits", "4")
    assert res["file_after"] == out.stat().st_size < res["file_before"] and not res["lossless"]
    assert res["tensors"] and res["output_change"][0]["max_abs"] > 0
    assert_same_as_tflm(out.read_bytes(), runs=1)
    same = tmp_path / "same.tflite"
    assert _json(capsys, "compress", HELLO, "-o", str(same), "--tolerance", "0")["ratio"] <= 1.0
    assert main(["compress", HELLO, "-o", str(tmp_path / "no" / "x.tflite")]) == 1
    assert "cannot write" in capsys.readouterr().err
