"""Misuse and misbehaving code on the emulated Cortex-M4 and RV32 end in a micronn exception, never a Python or emulator
error and never a hang: faults (unmapped reads, writes and jumps, stack overflow), runaway loops under both limits,
a closed session, and calls with the wrong arguments. The session stays usable after each fault."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_device import KERNELS_C, scale_ref

from micronn.errors import MicronnError
from micronn.micro import DeviceFault, Session, SessionError
from micronn.micro.unicorn import UnicornDevice

MISBEHAVING_C = r"""
void t_peek(const mn_word *a) { *(volatile int32_t *)a[1] = *(volatile int32_t *)a[0]; }
void t_jump(const mn_word *a) { ((void (*)(void))a[0])(); }
void t_recurse(const mn_word *a) {  /* unbounded recursion: the stack runs down through RAM and off its bottom */
    volatile int32_t frame[16];
    frame[0] = (int32_t)a[0];
    t_recurse(a);
    __asm__ volatile("" ::: "memory");  /* not a tail call */
}
"""
X = np.arange(-50, 50, dtype=np.int8)
LIMIT = 20_000_000  # instructions: far more than any test kernel's honest work, and enough to overflow the stack


@pytest.fixture(scope="module", params=["cortex-m4", "riscv32"])
def sess(request, tmp_path_factory):
    src = tmp_path_factory.mktemp("k") / "misbehaving.c"
    src.write_text(KERNELS_C + MISBEHAVING_C)
    with Session(request.param, max_instructions=LIMIT, timeout_s=60) as s:
        s.mod = s.load_module([src])
        s.x, s.o = s.array(X), s.empty(X.shape, np.int8)
        yield s


def usable(sess) -> None:
    """Nothing is queued after a fault and the next flush computes the right answer (the input is written again:
    a stack overflow runs over device RAM, as it would on a board)."""
    assert sess.pending == 0
    sess.x.copyfrom(X)
    sess.mod["t_scale"](sess.o, sess.x, X.size, 3, 7)
    assert np.array_equal(sess.o.numpy(), scale_ref(X, 3, 7))


@pytest.mark.parametrize("kernel, args, match", [
    ("t_peek", (0x6000_0000, 0x7000_0000), "read of unmapped memory.*address 0x60000000"),
    ("t_poke", (0xFFFF_FFF0,), "write to unmapped memory"),
    ("t_jump", (0x6000_0001,), "fetch from unmapped memory|unmapped"),
    ("t_recurse", (1,), "write to unmapped memory"),  # the stack overflowed RAM's bottom
])
def test_faults_raise_device_fault(sess, kernel: str, args: tuple, match: str) -> None:
    with pytest.raises(DeviceFault, match=match) as e:
        sess.mod[kernel](*args)
        sess.sync()
    assert e.value.pc is not None and "sp" in e.value.registers and isinstance(e.value, MicronnError)
    usable(sess)


def test_runaway_loops_stop_at_either_limit(sess) -> None:
    sess.max_instructions = 100_000
    try:
        with pytest.raises(DeviceFault, match="instruction limit of 100,000 reached"):
            sess.mod["t_spin"]()
            sess.sync()
        sess.max_instructions, sess.timeout_s = None, 0.2
        with pytest.raises(DeviceFault, match="timeout after 0.2 s"):
            sess.mod["t_spin"]()
            sess.sync()
    finally:
        sess.max_instructions, sess.timeout_s = LIMIT, 60
    usable(sess)


def test_wrong_arguments(sess) -> None:
    fn = sess.mod["t_add1"]
    for bad in (None, "abc", 1.5, np.zeros(4, np.int32), b"\0\0\0\0", [1]):
        with pytest.raises(SessionError, match="cannot pass"):
            fn(bad)
    with pytest.raises(SessionError, match="does not fit"):
        fn(-(1 << 31) - 1)
    with pytest.raises(SessionError, match="exceed the args section"):  # far too many
        fn(*range(sess.sections["args"].size))
    with Session("cortex-m0") as other:
        with pytest.raises(SessionError, match="belongs to another session"):
            fn(other.array(np.zeros(4, np.int32)))
    assert sess.pending == 0  # no refused call was queued
    # too few: a C function cannot tell, and reads whatever the args section holds; here the pointer a previous
    # call left there, which is unmapped, so the device faults instead of the host crashing
    sess.mod["t_move"](0x6000_0000, 0x6000_0000, 0)  # moves nothing: leaves 0x60000000 as the first argument word
    sess.sync()
    with pytest.raises(DeviceFault, match="write to unmapped memory.*address 0x60000000"):
        sess.mod["t_poke"]()
        sess.sync()
    usable(sess)


def test_bad_arrays_and_memory(sess) -> None:
    for shape, dtype in (((-5,), np.int8), ((2, -3), np.int8), (4, object), (4, "no such type")):
        with pytest.raises(SessionError):
            sess.empty(shape, dtype)
    for x in (np.array([None, 1], object), [[1], [1, 2]]):
        with pytest.raises(SessionError):
            sess.array(x)
    with pytest.raises(SessionError, match="cannot copy a str"):
        sess.o.copyfrom("not numbers")
    with pytest.raises(SessionError, match="out of device memory"):
        sess.empty(1 << 40)
    with pytest.raises(SessionError, match="cannot read -1 bytes"):
        sess.read(sess.o.addr, -1)
    with pytest.raises(DeviceFault, match="outside the memory map"):
        sess.read(0x9000_0000, 4)
    with pytest.raises(SessionError, match="no such source"):
        sess.load_module([Path("/no/such/kernel.c")])
    usable(sess)


def test_closed_session_refuses_everything(tmp_path: Path) -> None:
    src = tmp_path / "k.c"
    src.write_text(KERNELS_C)
    s = Session("cortex-m4")
    mod = s.load_module([src])
    x = s.array(np.zeros(4, np.int32))
    mod["t_add1"](x)  # queued, never run: dropped by close
    s.close()
    s.close()  # idempotent
    for use in (lambda: x.numpy(), lambda: x.copyfrom(np.ones(4, np.int32)), lambda: mod["t_add1"](x),
                lambda: s.sync(), lambda: s.array(np.zeros(2)), lambda: s.empty(2), lambda: s.read(x.addr, 4),
                lambda: s.write(x.addr, b"1234"), lambda: s.load_module([src]), lambda: s.__enter__()):
        with pytest.raises(SessionError, match="session is closed"):
            use()
    with pytest.raises(SessionError, match="max_tasks"):
        Session("cortex-m4", max_tasks=0)
    with pytest.raises(SessionError, match="bad limits"):
        Session("cortex-m4", timeout_s=-1)


def test_closed_device_refuses_everything() -> None:
    dev = UnicornDevice("cortex-m4")
    dev.close()
    dev.close()
    for use in (lambda: dev.read(0x2000_0000, 4), lambda: dev.write(0x2000_0000, b"1234"), dev.reset,
                lambda: dev.execute(0x1000, 0x2000)):
        with pytest.raises(DeviceFault, match="closed"):
            use()
