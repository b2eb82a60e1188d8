"""The tuner's search strategies, early stopping, resumable log and parallel measurement, on a one-layer model
small enough that a measurement takes a fraction of a second.

Every run checks the same things a user relies on: records verified byte for byte and within the budget, the
same records for the same seed however the measurement is spread (in-process, a process pool, Ray), and a log
that a killed or repeated run extends without measuring a config twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from micronn.cli import main as cli
from micronn.micro import templates, tune
from micronn.testing import T, op_model
from micronn.tflite import schema

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")


def small(seed: int = 0) -> bytes:
    """One int8 1x1 CONV_2D: 2x2 pixels, 8 input channels, 4 output channels."""
    rng = np.random.default_rng(seed)
    wt = T((4, 1, 1, 8), "int8", list(rng.uniform(0.002, 0.02, 4)), 0, data=rng.integers(-127, 128, (4, 1, 1, 8)))
    b = T((4,), "int32", data=rng.integers(-3000, 3000, 4))
    return op_model("CONV_2D", [T((1, 2, 2, 8), "int8", 0.05, -3), wt, b], [T((1, 2, 2, 4), "int8", 0.3, 4)],
                    schema.options("CONV_2D", padding=1, stride_h=1, stride_w=1))


MODEL = small()


def configs(res: dict) -> list[str]:
    return [json.dumps(r["config"], sort_keys=True) for r in res["records"]]


@pytest.mark.parametrize("search", tune.STRATEGIES)
def test_each_strategy_measures_verified_configs_within_budget(search: str) -> None:
    res = tune.tune_model(MODEL, "cortex-m4", trials=6, batch=3, search=search, jobs=1)
    (layer,) = res["layers"]
    assert len(res["records"]) == layer["measured"] == 6 and layer["failed"] == 0
    assert all(r["verified"] and r["instructions"] > 0 and r["error"] is None for r in res["records"])
    assert len(set(configs(res))) == 6  # no config twice
    assert layer["best_instructions"] == min(r["instructions"] for r in res["records"])
    assert res["measured_by"] == "in-process" and res["search"].startswith({"xgb": "xgboost"}.get(search, search))
    if search == "grid":  # the space in its own order
        ((_, t, shape),) = tune.layers(_interp(MODEL))
        assert [r["config"] for r in res["records"]] == t.space(shape)[:6]


def _interp(model: bytes):
    import micronn

    it = micronn.Interpreter(model)
    it.allocate_tensors()
    return it


@pytest.mark.parametrize("search", ["random", "anneal"])
def test_seeded_searches_repeat(search: str) -> None:
    """Two rounds of four (anneal: random, then annealing on the model), twice with one seed, once with another."""
    runs = [tune.tune_model(MODEL, "cortex-m4", trials=8, batch=4, search=search, seed=s, jobs=1)
            for s in (1, 1, 2)]
    assert configs(runs[0]) == configs(runs[1])
    assert [r["instructions"] for r in runs[0]["records"]] == [r["instructions"] for r in runs[1]["records"]]
    assert configs(runs[0]) != configs(runs[2])


def test_early_stopping_ends_the_search() -> None:
    """Grid order over the whole space: the search ends exactly three trials after its last new best."""
    res = tune.tune_model(MODEL, "cortex-m4", batch=4, search="grid", early_stop=3, jobs=1)
    (layer,) = res["layers"]
    counts = [r["instructions"] for r in res["records"]]
    assert layer["stopped_early"] and layer["measured"] < layer["space"]
    assert counts[-4] == layer["best_instructions"] == min(counts)
    assert all(n >= counts[-4] for n in counts[-3:])
    assert min(counts[:-3]) == counts[-4]


def test_a_resumed_log_measures_only_new_configs(tmp_path: Path) -> None:
    log = tmp_path / "tune.jsonl"
    first = tune.tune_model(MODEL, "cortex-m4", trials=4, batch=4, search="random", log=log, jobs=1)
    again = tune.tune_model(MODEL, "cortex-m4", trials=7, batch=4, search="random", log=log, jobs=1)
    (layer,) = again["layers"]
    assert layer["resumed"] == 4 and layer["measured"] == 3  # the logged four count toward the budget
    assert not set(configs(again)) & set(configs(first))
    assert layer["best_instructions"] == min(r["instructions"] for r in first["records"] + again["records"])
    done = tune.tune_model(MODEL, "cortex-m4", trials=7, search="random", log=log, jobs=1)
    assert done["records"] == [] and done["layers"][0]["resumed"] == 7
    records = templates.load_log(log)
    assert len(records) == 7 and len({json.dumps(r["config"], sort_keys=True) for r in records}) == 7
    # the resumed xgb search fits its model on the logged records and still measures each config once
    more = tune.tune_model(MODEL, "cortex-m4", trials=10, batch=3, search="xgb", log=log, jobs=1)
    assert more["layers"][0]["measured"] == 3 and len(templates.load_log(log)) == 10
    assert len({json.dumps(r["config"], sort_keys=True) for r in templates.load_log(log)}) == 10
    # a smaller budget than the log holds: every logged record still counts toward the best, nothing is measured
    few = tune.tune_model(MODEL, "cortex-m4", trials=2, search="grid", early_stop=1, log=log, jobs=1)
    assert few["records"] == [] and few["layers"][0]["resumed"] == 10
    assert few["layers"][0]["best_instructions"] == min(r["instructions"] for r in templates.load_log(log))


def test_a_cut_last_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    log = tmp_path / "tune.jsonl"
    tune.tune_model(MODEL, "cortex-m4", trials=3, search="grid", log=log, jobs=1)
    whole = log.read_text()
    log.write_text(whole + whole.splitlines()[0][:40])  # a run killed mid-write
    with pytest.warns(tune.TuningLogWarning, match="cut short"):
        res = tune.tune_model(MODEL, "cortex-m4", trials=5, search="grid", log=log, jobs=1)
    assert res["layers"][0]["resumed"] == 3 and res["layers"][0]["measured"] == 2
    records = templates.load_log(log)  # the cut line is gone, the log whole again
    assert len(records) == 5 and log.read_text().startswith(whole)


def test_malformed_logs_are_refused(tmp_path: Path) -> None:
    log = tmp_path / "tune.jsonl"
    tune.tune_model(MODEL, "cortex-m4", trials=2, search="grid", log=log, jobs=1)
    good = log.read_text().splitlines()
    log.write_text("\n".join([good[0], "{not json", good[1]]) + "\n")
    with pytest.raises(templates.TuningLogError, match="line 2 of tuning log"):
        tune.tune_model(MODEL, "cortex-m4", trials=4, log=log, jobs=1)
    log.write_text(json.dumps({"target": "cortex-m4"}) + "\n" + good[0] + "\n")
    with pytest.raises(templates.TuningLogError, match="line 1 .* lacks"):
        tune.tune_model(MODEL, "cortex-m4", trials=4, log=log, jobs=1)
    log.write_text(json.dumps([json.loads(line) for line in good]))
    with pytest.raises(templates.TuningLogError, match="JSON list"):
        tune.tune_model(MODEL, "cortex-m4", trials=4, log=log, jobs=1)


def test_bad_arguments_are_refused() -> None:
    for kw, match in (({"search": "bayes"}, "search is one of"), ({"jobs": 0}, "jobs"),
                      ({"early_stop": 0}, "early_stop"), ({"only": ["conv_2d_1x1:nope"]}, "no layer of shape")):
        with pytest.raises(tune.TuneError, match=match):
            tune.tune_model(MODEL, "cortex-m4", **kw)


def test_a_process_pool_gives_the_serial_records(tmp_path: Path) -> None:
    """jobs=2 splits each round's batch over two spawned workers; the log holds the same records in order."""
    serial = tune.tune_model(MODEL, "cortex-m4", trials=6, batch=3, search="grid", jobs=1, log=tmp_path / "1.jsonl")
    pooled = tune.tune_model(MODEL, "cortex-m4", trials=6, batch=3, search="grid", jobs=2, log=tmp_path / "2.jsonl")
    assert pooled["measured_by"] == "pool" and pooled["workers"] == 2
    assert pooled["records"] == serial["records"]
    assert (tmp_path / "1.jsonl").read_text() == (tmp_path / "2.jsonl").read_text()


@pytest.mark.xdist_group("ray")  # one local cluster at a time
def test_ray_gives_the_serial_records() -> None:
    ray = pytest.importorskip("ray", reason="the Ray path needs ray (pip install 'micronn[eval]')")
    serial = tune.tune_model(MODEL, "cortex-m4", trials=4, batch=4, search="random", seed=5, jobs=1)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=1, include_dashboard=False, logging_level="error")
    try:
        on_ray = tune.tune_model(MODEL, "cortex-m4", trials=4, batch=4, search="random", seed=5)  # the user's Ray
    finally:
        ray.shutdown()
    assert on_ray["measured_by"] == "ray" and on_ray["records"] == serial["records"]


def test_cli_flags_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(MODEL)
    log = tmp_path / "tune.jsonl"
    argv = ["tune", str(path), "--target", "cortex-m4", "--trials", "4", "--search", "random", "--early-stop", "50",
            "--jobs", "1", "--log", str(log), "--seed", "3", "--json"]
    assert cli(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["search"], out["seed"], out["measured_by"], out["workers"], out["log"]) == \
        ("random", 3, "in-process", 1, str(log))
    assert out["layers"][0]["measured"] == 4 and "records" not in out
    assert len(log.read_text().splitlines()) == 4
    assert cli(argv) == 0  # the same command again: everything is in the log already
    out = json.loads(capsys.readouterr().out)
    assert out["layers"][0]["measured"] == 0 and out["layers"][0]["resumed"] == 4
    assert cli(["tune", str(path), "--search", "bayes", "--json"]) == 2
    capsys.readouterr()
    assert cli(["tune", str(path), "--ray", "127.0.0.1:1", "--log", str(log), "--json"]) == 1
    assert "cannot reach a Ray cluster" in json.loads(capsys.readouterr().out)["message"]


def test_crashing_and_wrong_candidates_are_errors() -> None:
    """A candidate that faults the device, one that leaves the output unwritten and one that does not compile are
    recorded as errors; the batch goes on (on a fresh session after the fault) and the good configs around them
    still count."""
    from micronn.micro.templates import conv_2d_1x1

    it = _interp(MODEL)
    ((op, t, shape),) = tune.layers(it)
    good = t.space(shape)[:2]

    def generate(shape: object, config: dict) -> tuple[str, str]:
        if "bad" not in config:
            return conv_2d_1x1.generate(shape, config)
        name = f"mn_test_bad_{config['bad']}"
        body = {1: "*(volatile int *)0x50000000u = 1;", 2: "", 3: "not C"}[config["bad"]]  # 1: unmapped memory
        return name, f'#include "mn_kernels.h"\nvoid {name}(const mn_word *args) {{ (void)args; {body} }}\n'

    fake = SimpleNamespace(NAME="test_bad", generate=generate)
    batch = [good[0], {"bad": 1}, {"bad": 2}, {"bad": 3}, good[1]]
    out, base = tune._measure_batch(it, op, fake, shape, batch, "cortex-m4", 0)
    assert base["verified"] and [r["verified"] for r in out] == [True, False, False, False, True]
    assert out[1]["instructions"] is None and "unmapped" in out[1]["error"]
    assert out[2]["error"] == "output differs from the interpreter"
    assert out[3]["error"].startswith("compile error") and out[3]["instructions"] is None
    assert out[4]["instructions"] == tune.measure(it, op, t, shape, [good[1]], "cortex-m4", 0)[0][0][0]
