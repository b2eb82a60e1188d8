"""Sessions: device memory allocators, arrays, modules, packing and the lazy task queue."""

from __future__ import annotations

import numpy as np
import pytest
from test_device import kernels, scale_ref

from micronn.micro.session import Allocator, Session, SessionError

X = np.arange(-100, 100, dtype=np.int8)


@pytest.fixture(scope="module", params=["cortex-m4", "riscv32"])
def sess(request, tmp_path_factory):
    with Session(request.param, max_tasks=16) as s:
        s.mod = s.load_module([kernels(tmp_path_factory.mktemp("k"), s.target.arch)])
        yield s


def test_allocator_first_fit_free_and_merge():
    a = Allocator("ws", 0x1000, 256)
    p, q, r = a.alloc(10), a.alloc(100, 16), a.alloc(64)
    assert p == 0x1000 and q % 16 == 0 and q >= p + 10 and r >= q + 100
    with pytest.raises(SessionError, match="out of device memory in section ws"):
        a.alloc(200)
    a.free(q)
    assert a.alloc(90, 16) == q  # first fit reuses the hole
    a.free(p), a.free(q), a.free(r)
    assert a.used == 0 and a.alloc(256, 1) == 0x1000  # holes merged back into one
    with pytest.raises(SessionError, match="not an allocation"):
        a.free(0x1001)


def test_arrays_round_trip(sess):
    x = np.random.default_rng(0).integers(-2**31, 2**31, (3, 5), dtype=np.int32)
    d = sess.array(x)
    assert np.array_equal(d.numpy(), x) and d.numpy().dtype == np.int32 and d.addr % 16 == 0
    d.copyfrom(x * 0 + 7)
    assert (d.numpy() == 7).all()
    with pytest.raises(SessionError, match="shape"):
        d.copyfrom(np.zeros(4, np.int32))
    d.free()


def test_lazy_queue_runs_once_when_read(sess):
    counter = sess.array(np.zeros(1, np.int32))
    before = sess.executions
    for _ in range(10):
        sess.mod["t_add1"](counter)
    assert sess.pending == 10 and sess.executions == before  # nothing ran yet
    assert counter.numpy()[0] == 10 and sess.executions == before + 1  # one execute for ten calls
    costs = [t.instructions for t in sess.last_profile]  # per task; the loop's exit lands in the last one
    assert len(costs) == 10 and len(set(costs[:-1])) == 1 and 0 <= costs[-1] - costs[0] <= 5  # 4 Thumb, 5 RV32
    for _ in range(40):  # the device's task array holds 16: full queues flush by themselves
        sess.mod["t_add1"](counter)
    assert sess.executions == before + 3 and sess.pending == 8
    assert counter.numpy()[0] == 50 and sess.executions == before + 4


def test_destination_passing_chain(sess):
    x, o, o2 = sess.array(X), sess.empty(X.shape, np.int8), sess.empty(X.shape, np.int8)
    sess.mod["t_scale"](o, x, X.size, 5, -9)
    sess.mod["t_move"](o2, o, X.size)  # reads what the queued task before it wrote
    assert np.array_equal(o2.numpy(), scale_ref(X, 5, -9))


def test_bad_calls(sess):
    with pytest.raises(SessionError, match="no function 't_nope'"):
        sess.mod["t_nope"]
    with pytest.raises(SessionError, match="cannot pass float"):
        sess.mod["t_add1"](1.5)
    with pytest.raises(SessionError, match="does not fit"):
        sess.mod["t_add1"](1 << 40)
    with pytest.raises(SessionError, match="no section"):
        sess.empty(4, np.int8, section="heap")
    assert sess.pending == 0


def test_runtime_and_module_symbols(sess):
    helpers = ("__divdi3", "__udivdi3", "__mulsf3", "mn_init") if sess.target.arch == "riscv" else \
        ("__aeabi_uidiv", "__aeabi_lmul", "__aeabi_fmul")
    for k in ("mn_run", "mn_done", "mn_tasks", "memcpy", *helpers):
        assert k in sess.runtime
    if sess.target.arch == "riscv":
        assert sess.runtime["mn_fault"] % 4 == 0  # mtvec's direct mode wants a 4-byte aligned handler
    else:
        assert sess.mod.symbols["t_scale"] & 1  # Thumb function addresses carry the low bit
    text = sess.sections["text"]
    assert text.base <= sess.mod.symbols["t_scale"] < text.base + text.size
