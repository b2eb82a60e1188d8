"""The emulated Cortex-M and RV32 cores: exact counts, faults as DeviceFault, usable after a fault."""

from __future__ import annotations

import numpy as np
import pytest
from test_device import kernels, scale_ref

from micronn.micro.device import DeviceFault
from micronn.micro.session import Session
from micronn.micro.unicorn import UnicornDevice

X = np.arange(-60, 60, dtype=np.int8)


@pytest.fixture(scope="module", params=["cortex-m4", "riscv32"])
def sess(request, tmp_path_factory):
    with Session(request.param, max_instructions=200_000, timeout_s=30) as s:
        s.mod = s.load_module([kernels(tmp_path_factory.mktemp("k"), s.target.arch)])
        s.x, s.o = s.array(X), s.empty(X.shape, np.int8)
        yield s


def scale(sess, d=7):
    sess.mod["t_scale"](sess.o, sess.x, X.size, 3, d)
    return sess.o.numpy()


def test_results_and_exact_repeatable_counts(sess):
    assert np.array_equal(scale(sess), scale_ref(X, 3, 7))
    first = sess.last_exec
    scale(sess)
    assert sess.last_exec.instructions == first.instructions and sess.last_exec.counts == first.counts
    (task,) = sess.last_profile
    assert task.counts["div"] == X.size  # one SDIV (M4) or DIV (RV32IM) per element
    assert task.counts["store"] >= X.size and task.counts["load"] >= X.size
    assert task.cycles == sess.target.cycles(task.counts) and task.instructions < first.instructions


@pytest.mark.parametrize("kernel,args,match", [
    ("t_poke", (0x6000_0000,), "write to unmapped memory.*address 0x60000000"),
    ("t_poke", ("ram",), None),  # inside the map: no fault
    ("t_spin", (), "instruction limit of 200,000"),
    ("t_bkpt", (), "BKPT|EBREAK"),
    ("t_udf", (), "UDF|undefined|illegal instruction"),
])
def test_faults_then_usable(sess, kernel, args, match):
    args = tuple(sess.empty(1, np.int32).addr if a == "ram" else a for a in args)
    if match is None:
        sess.mod[kernel](*args)
        sess.sync()
    else:
        with pytest.raises(DeviceFault, match=match) as e:
            sess.mod[kernel](*args)
            sess.sync()
        assert e.value.pc is not None and "sp" in e.value.registers
        if kernel in ("t_bkpt", "t_udf"):  # the faulting instruction, a few into the function
            assert sess.mod.symbols[kernel] & ~1 <= e.value.pc < (sess.mod.symbols[kernel] & ~1) + 16
    assert np.array_equal(scale(sess, 5), scale_ref(X, 3, 5))  # reset keeps memory; the next flush runs


def test_timeout(sess):
    sess.max_instructions, sess.timeout_s = None, 0.3
    try:
        with pytest.raises(DeviceFault, match="timeout after 0.3 s"):
            sess.mod["t_spin"]()
            sess.sync()
    finally:
        sess.max_instructions, sess.timeout_s = 200_000, 30
    assert np.array_equal(scale(sess), scale_ref(X, 3, 7))


@pytest.mark.parametrize("target", ["cortex-m0", "riscv32"])
def test_host_access_outside_map(target):
    with UnicornDevice(target) as dev:
        with pytest.raises(DeviceFault, match="outside the memory map"):
            dev.read(0x9000_0000, 4)
        with pytest.raises(DeviceFault, match="outside the memory map"):
            dev.read(dev.target.ram.end - 2, 4)  # straddles RAM's end
        dev.write(dev.target.ram.base, b"abcd")
        assert dev.read(dev.target.ram.base, 4) == b"abcd"


def test_qemu_only_preset_is_not_emulated():
    with pytest.raises(DeviceFault, match="riscv32-qemu cannot be emulated by Unicorn"):
        UnicornDevice("riscv32-qemu")


def test_m0_uses_software_division(tmp_path):
    with Session("cortex-m0") as s:
        mod = s.load_module([kernels(tmp_path)])
        x, o = s.array(X), s.empty(X.shape, np.int8)
        mod["t_scale"](o, x, X.size, -3, 7)
        assert np.array_equal(o.numpy(), scale_ref(X, -3, 7))
        assert s.last_profile[0].counts.get("div", 0) == 0  # __aeabi_idiv from the runtime instead
        assert s.last_profile[0].instructions > 20 * X.size


RISCV_HELPERS_C = r"""
#include <stdint.h>
typedef uintptr_t mn_word;
void t_helpers(const mn_word *a) {  /* 64-bit division and soft float: calls into the runtime's helpers */
    int64_t *q = (int64_t *)a[0];
    float *f = (float *)a[1];
    q[0] = q[0] / (int64_t)(int32_t)a[2];
    f[0] = f[0] * f[1] + (float)(int32_t)a[2];
}
"""


def test_riscv_classes_and_helpers(tmp_path):
    """RV32IMC: a byte loop counts its LBs as narrow loads, its MULs as mul, and 64-bit division and float come
    from compiler-rt helpers that the runtime carries (the kernels need none)."""
    src = tmp_path / "helpers.c"
    src.write_text(RISCV_HELPERS_C)
    with Session("riscv32") as s:
        assert {"__divdi3", "__mulsf3", "__addsf3", "__floatsisf"} <= set(s.runtime)
        assert not any(k.startswith("__aeabi") for k in s.runtime)
        mod = s.load_module([kernels(tmp_path, "riscv"), src])
        x, o = s.array(X), s.empty(X.shape, np.int8)
        mod["t_scale"](o, x, X.size, -3, 7)
        assert np.array_equal(o.numpy(), scale_ref(X, -3, 7))
        (task,) = s.last_profile
        assert task.counts["mul"] == task.counts["div"] == task.counts["narrow"] == X.size
        assert task.counts.get("ldm", 0) == task.counts.get("dsp", 0) == 0  # no such RISC-V instructions
        q, f = s.array(np.array([-(10**15) - 7], np.int64)), s.array(np.array([1.5, -2.25], np.float32))
        mod["t_helpers"](q, f, -3)
        assert q.numpy()[0] == (10**15 + 7) // 3 and f.numpy()[0] == np.float32(1.5 * -2.25 - 3)
