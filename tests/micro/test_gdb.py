"""The GDB Remote Serial Protocol client, against QEMU's gdbstub (skipped where QEMU is not installed)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from test_device import kernels, scale_ref

from micronn.micro.device import DeviceFault
from micronn.micro.gdb import GdbDevice, GdbError, QemuDevice, _decode, qemu_available
from micronn.micro.session import Session

needs_qemu = pytest.mark.skipif(not qemu_available(), reason="qemu-system-arm is not installed "
                                "(apt-get install qemu-system-arm; .ci/run installs it where apt-get exists)")
X = np.arange(-77, 77, dtype=np.int8)


def test_decode_escapes_and_run_length():
    assert _decode(b"ab}\x03c") == b"ab#c"  # '}' escapes the next byte xor 0x20
    assert _decode(b"0* ") == b"0000"  # '*' repeats the previous byte (count - 29) times


def test_no_server_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with pytest.raises(GdbError, match=f"cannot connect to a GDB server at 127.0.0.1:{port}"):
        GdbDevice("127.0.0.1", port, connect_timeout_s=0.2)


def test_silent_server_times_out():
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        with pytest.raises(GdbError, match="no reply from the GDB server"):
            GdbDevice("127.0.0.1", srv.getsockname()[1], timeout_s=0.3)


def test_target_without_qemu_machine():
    with pytest.raises(DeviceFault, match="no QEMU machine"):
        QemuDevice("cortex-m0")


@pytest.fixture(scope="module")
def qemu(tmp_path_factory):
    if not qemu_available():
        pytest.skip("qemu-system-arm is not installed (apt-get install qemu-system-arm)")
    with Session("qemu-m4", timeout_s=1.0) as s:
        s.mod = s.load_module([kernels(tmp_path_factory.mktemp("k"))])
        s.x, s.o = s.array(X), s.empty(X.shape, np.int8)
        yield s


@needs_qemu
def test_registers_from_target_description(qemu):
    assert qemu.device.regs["pc"] == 15 and qemu.device.regs["xpsr"] == 25


@needs_qemu
def test_same_results_as_unicorn_lazily(qemu, tmp_path):
    counter = qemu.array(np.zeros(1, np.int32))
    qemu.mod["t_scale"](qemu.o, qemu.x, X.size, 9, -4)
    for _ in range(20):
        qemu.mod["t_add1"](counter)
    before = qemu.executions
    assert np.array_equal(qemu.o.numpy(), scale_ref(X, 9, -4)) and counter.numpy()[0] == 20
    assert qemu.executions == before + 1 and qemu.last_exec.instructions is None  # GDB counts nothing
    with Session("cortex-m4") as s:
        mod = s.load_module([kernels(tmp_path)])
        x, o = s.array(X), s.empty(X.shape, np.int8)
        mod["t_scale"](o, x, X.size, 9, -4)
        assert o.numpy().tobytes() == qemu.o.numpy().tobytes()


@needs_qemu
@pytest.mark.parametrize("kernel,args,match", [
    ("t_poke", (0x6000_0000,), "HardFault: precise data bus error.*address 0x60000000"),
    ("t_bkpt", (), "HardFault: breakpoint instruction"),
    ("t_udf", (), "HardFault: undefined instruction"),
    ("t_spin", (), "timeout after 1.0 s"),
])
def test_faults_then_usable(qemu, kernel, args, match):
    with pytest.raises(DeviceFault, match=match) as e:
        qemu.mod[kernel](*args)
        qemu.sync()
    assert e.value.pc is not None and "lr" in e.value.registers
    qemu.mod["t_scale"](qemu.o, qemu.x, X.size, 2, 3)
    assert np.array_equal(qemu.o.numpy(), scale_ref(X, 2, 3))
