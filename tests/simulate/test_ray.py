"""Chunks as Ray tasks: the same outputs, byte for byte, as the in-process run. One local Ray (2 CPUs) for the
module, shut down at its end."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import model_bytes, model_path

from micronn.cluster import ray_session
from micronn.errors import InvokeError, MicronnError
from micronn.simulate import evaluate, simulate

ray = pytest.importorskip("ray", reason="the Ray tests need ray (pip install 'micronn[eval]')")
pytestmark = pytest.mark.xdist_group("ray")  # one local cluster at a time


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def test_simulate_on_ray_is_the_local_run() -> None:
    data = model_bytes("person_detect")
    xs = np.random.default_rng(0).integers(-128, 128, (45, 96, 96, 1), dtype=np.int8)
    local = simulate(data, xs, ray=False, backend="numpy")  # the reference; Ray workers pick native (auto)
    assert ray_session(None) is ray  # a ray.init() of the user's counts as asking for Ray
    for kw in ({"ray": None, "batch": 10}, {"ray": "local", "batch": 16},
               {"ray": None, "batch": 7, "twin": False, "backend": "numpy"}):
        on_ray = simulate(str(model_path("person_detect")), xs, **kw)
        assert on_ray[0].dtype == local[0].dtype and on_ray[0].tobytes() == local[0].tobytes()


def test_stateful_model_on_ray() -> None:
    data = model_bytes("trained_lstm_int8")
    xs = np.random.default_rng(1).integers(-128, 128, (9, 1, 28, 28), dtype=np.int8)
    assert simulate(data, xs, batch=4)[0].tobytes() == simulate(data, xs, ray=False, backend="numpy")[0].tobytes()
    with pytest.raises(MicronnError, match="cannot be split over Ray"):
        simulate(data, xs, stream=True)


def test_evaluate_on_ray_is_the_local_run() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (40, 96, 96, 1)).astype(np.float32)
    y = rng.integers(0, 2, 40)
    local = evaluate(model_bytes("person_detect"), x, y, ray=False, progress=False, batch=16,
                     backend="numpy").to_dict()
    on_ray = evaluate(model_path("person_detect"), x, y, ray=None, progress=False, batch=16).to_dict()
    assert on_ray["ray"] and not local["ray"]
    for key in ("seconds", "samples_per_second", "ray", "model"):
        local.pop(key), on_ray.pop(key)
    assert on_ray == local


def test_bad_input_on_ray_names_the_sample() -> None:
    good = np.zeros((1, 96, 96, 1), np.int8)
    with pytest.raises(InvokeError, match="sample 5, input 0"):
        simulate(model_bytes("person_detect"), [good] * 5 + [good.astype(np.int16)], batch=2)
