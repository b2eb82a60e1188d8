"""Why the float LSTMs stay short of 20x the TFLM wheel's rate (issue 15), measured on this machine.

    python benchmarks/lstm_bound.py [--json] [MODEL.tflite ...]

To give the wheel's bits, a float LSTM must compute what the wheel's x86-64 build computes: every product rounded
before it is added (no fused multiply-add), the sums in the kernel's order, and glibc's own expf and tanhf for the
gates (TFLM's sigmoid is 1 / (1 + expf(-x))). Per model (the float LSTMs of ``tests/models/`` by default), from one
run: the wheel's time per sample and a twentieth of it (the issue's budget); the multiply-accumulates over this
core's peak for unfused float multiply-adds (``benchmarks/peak.c``, kind 3: the matrix products at best); the
sigmoids and tanhs one invoke evaluates times micronn's exact vector cost per element (``benchmarks/activations.c``,
the host ports' code, in one long call on gate-like inputs in [-8, 8): their best rate); their sum, a bound the
exact products and activations alone set with micronn's activation code (the cell updates, copies and calls come
on top); and micronn's measured batched time per sample. ``bound x wheel``: the wheel's time over that bound, the
most this design could reach.
"""

from __future__ import annotations

import argparse
import ctypes
import json
from pathlib import Path

import numpy as np
from speed import ROOT, _timed, macs_by_kind, per_round, subgraph_calls
from tflite_micro.python.tflite_micro import runtime

from micronn import Interpreter
from micronn.export import NativeModel
from micronn.export.native import FLAGS, HOST_PORTS, host_toolchain
from micronn.ir import random_inputs

KERNELS = HOST_PORTS.parent
DEFAULT = ["lstm_float", "lstm_keras3_while_float"]


def _lib() -> ctypes.CDLL:
    so = host_toolchain().shared_object([ROOT / "benchmarks" / "activations.c", ROOT / "benchmarks" / "peak.c"],
                                        [KERNELS, HOST_PORTS], FLAGS)
    lib = ctypes.CDLL(str(so))
    lib.act_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_long]
    lib.peak_f32_unfused.argtypes, lib.peak_macs.restype = [ctypes.c_long], ctypes.c_long
    return lib


class Activations:
    """Nanoseconds per element of micronn's exact sigmoid (0) or tanhf (1) at their best: one long call over
    gate-like inputs. Any design can reach it by gathering a step's or a batch's gates into long calls (the float
    LSTM kernel does); short calls cost more per element."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib, self.ns = lib, {}
        self.x = np.random.default_rng(0).uniform(-8, 8, 4096).astype(np.float32)
        self.y = np.empty_like(self.x)

    def __call__(self, which: int) -> float:
        if which not in self.ns:
            n = len(self.x)
            self.ns[which] = per_round(lambda rounds: self.lib.act_run(which, self.y.ctypes.data, self.x.ctypes.data,
                                                                        n, rounds)) / n * 1e9
        return self.ns[which]


def activations(model, calls: list[int], act: Activations) -> tuple[dict[str, int], float]:
    """Sigmoids and tanhs of one invoke (``calls``: ``speed.subgraph_calls``; an LSTM's three gates and two tanhs per
    unit, step and batch row; LOGISTIC and TANH operators' elements), and their time in nanoseconds at micronn's
    exact vector cost per element."""
    count = {"sigmoid": 0, "tanh": 0}
    for sg, times in zip(model.subgraphs, calls):
        for op in sg.operators:
            x = sg.tensors[op.inputs[0]]
            size = int(np.prod(x.shape, dtype=np.int64))
            if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM" and op.inputs[5] >= 0:
                units = sg.tensors[op.inputs[5]].shape[0]  # the recurrent weights: units x units
                rows = times * size // max(x.shape[-1], 1)  # steps x batch
                count["sigmoid"] += rows * 3 * units
                count["tanh"] += rows * 2 * units
            elif op.op in ("LOGISTIC", "TANH") and times:
                count["sigmoid" if op.op == "LOGISTIC" else "tanh"] += times * size
    return count, count["sigmoid"] * act(0) + count["tanh"] * act(1)


def measure(path: Path, peak: float, act: Activations) -> dict:
    data = path.read_bytes()
    it = Interpreter(data)
    xs = random_inputs(it.model, 0)
    wheel = runtime.Interpreter.from_bytes(data, arena_size=4 << 20)
    for i, x in enumerate(xs):
        it.set_input(x, i)
        wheel.set_input(x, i)
    calls = subgraph_calls(it)
    (acts, acts_ns), macs = activations(it.model, calls, act), sum(macs_by_kind(it.model, calls).values())
    wheel_us = min(_timed(lambda _: wheel.invoke(), 1) for _ in range(200)) * 1e6
    native = NativeModel(data)
    samples = [random_inputs(it.model, k) for k in range(256)]
    batch = [np.stack([s[i] for s in samples]) for i in range(len(xs))]
    native.run_chunk(batch)
    ours_us = min(_timed(lambda _: native.run_chunk(batch), 1) for _ in range(20)) / 256 * 1e6
    products_us, acts_us = macs / peak * 1e6, acts_ns / 1e3
    bound = products_us + acts_us
    return {"model": path.stem, "wheel_us": wheel_us, "budget_us": wheel_us / 20, "macs": macs, **acts,
            "products_us": products_us, "activations_us": acts_us, "bound_us": bound,
            "bound_x_wheel": wheel_us / bound, "micronn_us": ours_us, "micronn_x_wheel": wheel_us / ours_us}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("models", nargs="*", help="paths or names of test models (default: the float LSTMs)")
    a = ap.parse_args()
    paths = [Path(m) if m.endswith(".tflite") else ROOT / "tests" / "models" / f"{m}.tflite"
             for m in a.models or DEFAULT]
    lib = _lib()
    peak = lib.peak_macs(3) / per_round(lib.peak_f32_unfused)
    act = Activations(lib)
    rows = [measure(p, peak, act) for p in paths]
    per_element = {"sigmoid": act(0), "tanh": act(1)}
    if a.json:
        print(json.dumps({"unfused_f32_macs_per_s": peak, "activation_ns_per_element": per_element, "models": rows},
                         indent=1))
        return
    print(f"this core: {peak / 1e9:.0f} GMAC/s unfused float32 multiply-adds (peak.c); micronn's exact activations, "
          "ns per element: " + ", ".join(f"{k} {v:.2f}" for k, v in per_element.items()))
    print(f"{'model':<26}{'wheel us':>9}{'budget':>8}{'MACs':>8}{'sigm':>6}{'tanh':>6}{'products':>9}{'activ.':>8}"
          f"{'bound':>7}{'bound x':>8}{'micronn':>8}{'x wheel':>8}")
    for r in rows:
        print(f"{r['model']:<26}{r['wheel_us']:>9.2f}{r['budget_us']:>8.2f}{r['macs']:>8}{r['sigmoid']:>6}"
              f"{r['tanh']:>6}{r['products_us']:>9.2f}{r['activations_us']:>8.2f}{r['bound_us']:>7.2f}"
              f"{r['bound_x_wheel']:>7.1f}x{r['micronn_us']:>8.2f}{r['micronn_x_wheel']:>7.1f}x")
    print("(times in us per sample; budget: the wheel's / 20; bound: products at peak + micronn's exact activations)")


if __name__ == "__main__":
    main()
