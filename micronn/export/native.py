"""A model compiled for the host: the exported project's C (the same kernels and calls the firmware runs) built
as a shared library and called through ctypes, so one invoke costs one native call instead of an interpreter walk.

Inputs and outputs are numpy views of the library's own arena, bound once: ``set_input`` copies into the arena,
``invoke`` is one native call, ``get_output`` copies out. The interpreter stays the reference: tests compare every
output byte with it (and with the TFLM wheel) on every model whose operators all have C kernels.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from micronn.errors import InvokeError
from micronn.export.codegen import generate
from micronn.interpreter import Interpreter
from micronn.ir import Model
from micronn.micro.target import get_target
from micronn.micro.toolchain import cache_dir, find_toolchain
from micronn.tflite.reader import Source, read

PREFIX = "mn_native"
# this machine's vector units, without contracting float multiply-adds (the reference rounds each operation)
FLAGS = ["-O3", "-march=native", "-ffp-contract=off"]


def _library(files: dict[str, str]) -> Path:
    """The shared library of generated ``files`` (sources and library cached by their content)."""
    key = hashlib.sha256("".join(f"{k}\0{v}\0" for k, v in sorted(files.items())).encode()).hexdigest()[:24]
    src = cache_dir() / f"native-{key}"
    if not src.is_dir():
        tmp = Path(tempfile.mkdtemp(dir=cache_dir()))
        for name, text in files.items():
            (tmp / name).write_text(text)
        try:
            os.rename(tmp, src)  # atomic: concurrent builders agree
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return find_toolchain(get_target("host")).shared_object(sorted(src.glob("*.c")), [src], FLAGS)


class NativeModel:
    """``NativeModel(model)``: ``set_input``/``invoke``/``get_output`` (or ``run(inputs)``) in native code,
    byte-identical to the interpreter.

    Each instance loads its own copy of the library, so instances keep separate arenas and state; ``reset()``
    puts recurrent state back to its initial value (as ``Interpreter.reset``). Raises ``UnsupportedError`` naming
    every operator without a C kernel.
    """

    def __init__(self, model: Model | Source, **interpreter_kw: Any):
        source = model if isinstance(model, Model) else read(model)
        self.program = generate(Interpreter(source, **interpreter_kw), PREFIX)
        so = _library({k: v for k, v in self.program.files.items() if k.endswith((".c", ".h"))})
        self._dir = tempfile.mkdtemp(prefix="micronn-native-")
        private = Path(self._dir) / so.name  # a path of its own: dlopen gives every instance its own statics
        shutil.copyfile(so, private)
        self._lib = ctypes.CDLL(str(private))
        addr = self._lib[f"{PREFIX}_input"]
        addr.restype, addr.argtypes = ctypes.c_void_p, [ctypes.c_int]
        out = self._lib[f"{PREFIX}_output"]
        out.restype, out.argtypes = ctypes.c_void_p, [ctypes.c_int]
        self.inputs = [self._view(addr(i), io) for i, io in enumerate(self.program.inputs)]
        self.outputs = [self._view(out(i), io) for i, io in enumerate(self.program.outputs)]
        self._init, self._invoke = self._lib[f"{PREFIX}_init"], self._lib[f"{PREFIX}_invoke"]
        self._init()

    @staticmethod
    def _view(addr: int, io: Any) -> np.ndarray:
        buf = (ctypes.c_char * max(io.nbytes, 1)).from_address(addr)
        return np.frombuffer(buf, np.dtype(io.dtype), count=int(np.prod(io.shape, dtype=np.int64))).reshape(io.shape)

    def reset(self) -> None:
        self._init()

    def set_input(self, x: np.ndarray, i: int = 0) -> None:
        """Copy ``x`` into input ``i`` (dtype and shape must match, as for the interpreter)."""
        if not 0 <= i < len(self.inputs):
            raise InvokeError(f"input {i} out of range: the model has {len(self.inputs)} inputs")
        x, view = np.asarray(x), self.inputs[i]
        if x.dtype != view.dtype or x.shape != view.shape:
            raise InvokeError(f"input {i} expects {view.dtype.name}{list(view.shape)}, got {x.dtype.name}"
                              f"{list(x.shape)}")
        view[...] = x

    def invoke(self) -> None:
        """One inference over the inputs set: a single native call."""
        self._invoke()

    def get_output(self, i: int = 0) -> np.ndarray:
        """A copy of output ``i``."""
        if not 0 <= i < len(self.outputs):
            raise InvokeError(f"output {i} out of range: the model has {len(self.outputs)} outputs")
        return self.outputs[i].copy()

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Set every input, invoke, return copies of the outputs."""
        if len(inputs) != len(self.inputs):
            raise InvokeError(f"the model has {len(self.inputs)} inputs, {len(inputs)} given")
        for i, x in enumerate(inputs):
            self.set_input(x, i)
        self._invoke()
        return [y.copy() for y in self.outputs]

    def __del__(self) -> None:
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)
