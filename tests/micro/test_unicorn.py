"""The emulated Cortex-M: exact counts, faults as DeviceFault, usable after a fault."""

from __future__ import annotations

import numpy as np
import pytest
from test_device import kernels, scale_ref

from micronn.micro.device import DeviceFault
from micronn.micro.session import Session
from micronn.micro.unicorn import UnicornDevice

X = np.arange(-60, 60, dtype=np.int8)


@pytest.fixture(scope="module")
def sess(tmp_path_factory):
    with Session("cortex-m4", max_instructions=200_000, timeout_s=30) as s:
        s.mod = s.load_module([kernels(tmp_path_factory.mktemp("k"))])
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
    assert task.counts["div"] == X.size  # one SDIV per element on the M4
    assert task.counts["store"] >= X.size and task.counts["load"] >= X.size
    assert task.cycles == sess.target.cycles(task.counts) and task.instructions < first.instructions


@pytest.mark.parametrize("kernel,args,match", [
    ("t_poke", (0x6000_0000,), "write to unmapped memory.*address 0x60000000"),
    ("t_poke", (0x4,), None),  # inside the map: no fault (the vector table is plain memory)
    ("t_spin", (), "instruction limit of 200,000"),
    ("t_bkpt", (), "BKPT"),
    ("t_udf", (), "UDF|undefined"),
])
def test_faults_then_usable(sess, kernel, args, match):
    if match is None:
        sess.mod[kernel](*args)
        sess.sync()
    else:
        with pytest.raises(DeviceFault, match=match) as e:
            sess.mod[kernel](*args)
            sess.sync()
        assert e.value.pc is not None and "sp" in e.value.registers
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


def test_host_access_outside_map():
    with UnicornDevice("cortex-m0") as dev:
        with pytest.raises(DeviceFault, match="outside the memory map"):
            dev.read(0x9000_0000, 4)
        dev.write(0x2000_0000, b"abcd")
        assert dev.read(0x2000_0000, 4) == b"abcd"


def test_m0_uses_software_division(tmp_path):
    with Session("cortex-m0") as s:
        mod = s.load_module([kernels(tmp_path)])
        x, o = s.array(X), s.empty(X.shape, np.int8)
        mod["t_scale"](o, x, X.size, -3, 7)
        assert np.array_equal(o.numpy(), scale_ref(X, -3, 7))
        assert s.last_profile[0].counts.get("div", 0) == 0  # __aeabi_idiv from the runtime instead
        assert s.last_profile[0].instructions > 20 * X.size
