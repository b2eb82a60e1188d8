from __future__ import annotations

import pytest

from micronn.errors import MicronnError
from micronn.micro.target import CLASSES, COSTS, TARGETS, get_target


def test_presets_match_qemu_boards():
    assert get_target("cortex-m4").qemu == ("mps2-an386", "cortex-m4")
    assert get_target("m7").qemu[0] == "mps2-an500" and get_target("cortex-m33").qemu[0] == "mps2-an505"
    assert get_target("cortex-m0").qemu is None and get_target("host").native and get_target("host").word_size == 8
    for t in TARGETS.values():
        if not t.native:
            assert t.stack_top == t.ram.end and t.flash.end <= t.ram.base


def test_cost_tables_cover_every_class():
    for name, costs in COSTS.items():
        assert set(CLASSES) | {"reg", "taken"} <= set(costs), name
    m4, m3 = get_target("cortex-m4"), get_target("cortex-m3")
    counts = {"alu": 10, "load": 3, "mlal": 2, "reg": 4, "taken": 1}
    assert m4.cycles(counts) == 10 + 6 + 2 + 4 + 2
    assert m3.cycles(counts) == 10 + 6 + 11 + 4 + 2  # SMLAL/UMLAL 4-7 cycles on the M3


def test_unknown_target():
    with pytest.raises(MicronnError, match="unknown target 'cortex-m99'"):
        get_target("cortex-m99")
