"""The GDB Remote Serial Protocol client, against QEMU's gdbstub (skipped where QEMU is not installed)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from test_device import kernels, scale_ref

from micronn.micro.device import DeviceFault
from micronn.micro.gdb import GdbDevice, GdbError, QemuDevice, _decode, qemu_available
from micronn.micro.session import Session

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
    with pytest.raises(DeviceFault, match="riscv32 has no QEMU machine; riscv32-qemu is the RISC-V preset"):
        Session("qemu-riscv32")
    with pytest.raises(GdbError, match="unknown instruction set 'mips'"):
        GdbDevice(arch="mips")


# each QEMU session with the Unicorn target it must agree with; skipped where its emulator is not installed
QEMUS = {"qemu-m4": "cortex-m4", "riscv32-qemu": "riscv32"}
INSTALL = {"qemu-m4": "qemu-system-arm is not installed (apt-get install qemu-system-arm)",
           "riscv32-qemu": "qemu-system-riscv32 is not installed (apt-get install qemu-system-misc)"}


@pytest.fixture(scope="module", params=list(QEMUS))
def qemu(request, tmp_path_factory):
    if not qemu_available(request.param.removeprefix("qemu-")):
        pytest.skip(INSTALL[request.param] + "; .ci/run installs it where apt-get exists")
    with Session(request.param, timeout_s=1.0) as s:
        s.mod = s.load_module([kernels(tmp_path_factory.mktemp("k"), s.target.arch)])
        s.x, s.o = s.array(X), s.empty(X.shape, np.int8)
        s.twin = QEMUS[request.param]
        yield s


def test_registers_from_target_description(qemu):
    regs = qemu.device.regs
    if qemu.target.arch == "riscv":  # x0-x31, pc, then the CSRs the trap decoding reads
        assert regs["ra"] == 1 and regs["sp"] == 2 and regs["pc"] == 32 and {"mcause", "mepc", "mtval"} <= set(regs)
    else:
        assert regs["pc"] == 15 and regs["xpsr"] == 25


def test_same_results_as_unicorn_lazily(qemu, tmp_path):
    counter = qemu.array(np.zeros(1, np.int32))
    qemu.mod["t_scale"](qemu.o, qemu.x, X.size, 9, -4)
    for _ in range(20):
        qemu.mod["t_add1"](counter)
    before = qemu.executions
    assert np.array_equal(qemu.o.numpy(), scale_ref(X, 9, -4)) and counter.numpy()[0] == 20
    assert qemu.executions == before + 1 and qemu.last_exec.instructions is None  # GDB counts nothing
    with Session(qemu.twin) as s:
        mod = s.load_module([kernels(tmp_path, s.target.arch)])
        x, o = s.array(X), s.empty(X.shape, np.int8)
        mod["t_scale"](o, x, X.size, 9, -4)
        assert o.numpy().tobytes() == qemu.o.numpy().tobytes()


# per instruction set: a Cortex-M's HardFault decoded from the SCB, a RISC-V trap from mcause/mepc/mtval (QEMU's
# virt board maps nothing at 0xF0000000, while 0x60000000 is its PCIe window, which takes writes silently)
FAULTS = {
    "arm": [("t_poke", (0x6000_0000,), "HardFault: precise data bus error.*address 0x60000000"),
            ("t_bkpt", (), "HardFault: breakpoint instruction"),
            ("t_udf", (), "HardFault: undefined instruction")],
    "riscv": [("t_poke", (0xF000_0000,), "trap: store access fault.*address 0xf0000000"),
              ("t_bkpt", (), "trap: breakpoint \\(EBREAK\\) \\(mcause=0x3"),
              ("t_udf", (), "trap: illegal instruction \\(mcause=0x2")],
}


@pytest.mark.parametrize("case", [0, 1, 2, "spin"])
def test_faults_then_usable(qemu, case):
    kernel, args, match = ("t_spin", (), "timeout after 1.0 s") if case == "spin" else FAULTS[qemu.target.arch][case]
    with pytest.raises(DeviceFault, match=match) as e:
        qemu.mod[kernel](*args)
        qemu.sync()
    assert e.value.pc is not None and ("ra" if qemu.target.arch == "riscv" else "lr") in e.value.registers
    if kernel in ("t_bkpt", "t_udf"):  # the faulting instruction, a few into the function
        assert qemu.mod.symbols[kernel] & ~1 <= e.value.pc < (qemu.mod.symbols[kernel] & ~1) + 16
    qemu.mod["t_scale"](qemu.o, qemu.x, X.size, 2, 3)
    assert np.array_equal(qemu.o.numpy(), scale_ref(X, 2, 3))
