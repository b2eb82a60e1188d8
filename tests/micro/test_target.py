from __future__ import annotations

import pytest

from micronn.errors import MicronnError
from micronn.micro.target import CLASSES, COSTS, EXTRAS, TARGETS, get_target


def test_presets_match_qemu_boards():
    assert get_target("cortex-m4").qemu == ("mps2-an386", "cortex-m4")
    assert get_target("m7").qemu[0] == "mps2-an500" and get_target("cortex-m33").qemu[0] == "mps2-an505"
    assert get_target("cortex-m0").qemu is None and get_target("host").native and get_target("host").word_size == 8
    for t in TARGETS.values():
        if not t.native:  # flash and RAM apart (the ESP32-C3-like map has RAM below flash)
            assert t.stack_top == t.ram.end and (t.flash.end <= t.ram.base or t.ram.end <= t.flash.base)


def test_riscv_presets():
    rv, qemu = get_target("riscv32"), get_target("riscv32-qemu")
    assert rv.arch == qemu.arch == "riscv" and get_target("cortex-m4").arch == "arm"
    assert (rv.flash.size, rv.ram.size) == (4 << 20, 400 << 10) and rv.backend == "unicorn" and rv.qemu is None
    assert qemu.backend == "qemu" and qemu.qemu == ("virt", "sifive-e31") and qemu.qemu_binary == "qemu-system-riscv32"
    assert qemu.flash.base == 0x8000_0000 and qemu.flash.end == qemu.ram.base  # both in virt's DRAM
    assert "+m+c" in rv.cpu and "+a" in qemu.cpu and "+a" not in rv.cpu  # RV32IMC, RV32IMAC
    e31 = COSTS["sifive-e31"]
    assert rv.costs is e31 and qemu.costs is e31
    # a MUL is 5 cycles, a LB 2 + 1 (narrow), a taken branch free (predicted), a DIV the middle of 2-33
    assert rv.cycles({"alu": 4, "mul": 2, "load": 3, "narrow": 1, "branch": 2, "taken": 2, "div": 1}) == \
        4 + 10 + 6 + 1 + 2 + 0 + 17.5


def test_cost_tables_cover_every_class():
    for name, costs in COSTS.items():
        assert set(CLASSES) | set(EXTRAS) <= set(costs), name
    m4, m3 = get_target("cortex-m4"), get_target("cortex-m3")
    counts = {"alu": 10, "load": 3, "mlal": 2, "reg": 4, "taken": 1}
    assert m4.cycles(counts) == 10 + 6 + 2 + 4 + 2
    assert m3.cycles(counts) == 10 + 6 + 11 + 4 + 2  # SMLAL/UMLAL 4-7 cycles on the M3


def test_unknown_target():
    with pytest.raises(MicronnError, match="unknown target 'cortex-m99'"):
        get_target("cortex-m99")
    with pytest.raises(MicronnError, match="unknown target 'riscv64'"):
        get_target("riscv64")
    with pytest.raises(MicronnError, match="preset name or a Target"):
        get_target(32)  # type: ignore[arg-type]
